#include "workload/workload.h"

#include <fmt/format.h>

#include <numeric>
#include <sstream>

#include "common/rng.h"
#include "common/units.h"

namespace ofan::workload {
namespace {

Result<uint32_t> ParseHost(const std::string& tok, const lb::FatTree& tree) {
  if (tok.find('.') != std::string::npos) {
    uint32_t a = 0;
    int parts = 0;
    std::stringstream ss(tok);
    std::string p;
    while (std::getline(ss, p, '.')) {
      if (p.empty() || p.size() > 3 || p.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(p) > 255) {
        return InvalidArgument(fmt::format("'{}' is not an IPv4 address", tok));
      }
      a = (a << 8) | static_cast<uint32_t>(std::stoi(p));
      ++parts;
    }
    if (parts != 4) {
      return InvalidArgument(fmt::format("'{}' is not an IPv4 address", tok));
    }
    auto h = tree.host_of_addr(a);
    if (!h) return h.error();
    return h->value();
  }
  if (tok.empty() || tok.size() > 9 || tok.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument(fmt::format("'{}' is not a host index or address", tok));
  }
  const uint64_t v = std::stoull(tok);
  if (v >= static_cast<uint64_t>(tree.num_hosts())) {
    return InvalidArgument(
        fmt::format("host {} is out of range (this tree has {} hosts)", v, tree.num_hosts()));
  }
  return static_cast<uint32_t>(v);
}

}  // namespace

Result<std::vector<Flow>> ParseMatrix(const std::string& text, const lb::FatTree& tree) {
  std::vector<Flow> flows;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string a, b, size, extra;
    if (!(ls >> a)) continue;
    auto err = [&](const std::string& m) {
      return InvalidArgument(fmt::format("matrix line {}: {}", lineno, m));
    };
    if (!(ls >> b >> size)) return err("expected 'SRC DST SIZE'");
    if (ls >> extra) return err(fmt::format("unexpected '{}' after SIZE", extra));
    auto src = ParseHost(a, tree);
    if (!src) return err(src.error().message);
    auto dst = ParseHost(b, tree);
    if (!dst) return err(dst.error().message);
    if (*src == *dst) return err("source and destination are the same host");
    auto bytes = ParseSize(size);
    if (!bytes) return err(bytes.error().message);
    if (*bytes == 0) return err("SIZE must be > 0");
    flows.push_back({*src, *dst, *bytes});
  }
  if (flows.empty()) return InvalidArgument("matrix has no flows");
  return flows;
}

std::vector<uint32_t> RandomDerangement(uint32_t n, uint64_t seed) {
  // Shuffle until no host sends to itself (about e tries on average).
  Rng rng(SplitMix64(seed) ^ 0x9E7Aull);
  std::vector<uint32_t> p(n);
  if (n < 2) {  // no derangement exists; the identity rather than a hang
    std::iota(p.begin(), p.end(), 0u);
    return p;
  }
  for (;;) {
    std::iota(p.begin(), p.end(), 0u);
    for (uint32_t i = n - 1; i > 0; --i) std::swap(p[i], p[rng.Below(i + 1)]);
    bool fixed = false;
    for (uint32_t i = 0; i < n && !fixed; ++i) fixed = p[i] == i;
    if (!fixed) return p;
  }
}

std::vector<uint32_t> IncastSenders(uint32_t n, uint32_t senders, bool victim) {
  std::vector<uint32_t> out;
  const uint32_t first = victim ? 2 : 1, end = victim ? n - 1 : n;  // candidates [first, end)
  if (n < (victim ? 4u : 2u)) return out;
  const uint32_t others = end - first;
  const uint32_t m = senders == 0 || senders > others ? others : senders;
  for (uint32_t j = 0; j < m; ++j)
    out.push_back(first + static_cast<uint32_t>(uint64_t{j} * others / m));
  return out;
}

}  // namespace ofan::workload
