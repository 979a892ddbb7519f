#include "emu/verbs/gid_table.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "emu/rcx/rc_exchange.h"

namespace ofan::verbs {
namespace fs = std::filesystem;

namespace {

// The file's first line without trailing whitespace; none if unreadable
// (sysfs refuses reads of unused GID slots' attributes with EINVAL).
std::optional<std::string> ReadLine(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  if (!in || !std::getline(in, s)) return std::nullopt;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::optional<uint32_t> Ipv4OfGid(const std::string& text) {
  in6_addr a{};
  if (inet_pton(AF_INET6, text.c_str(), &a) != 1) return std::nullopt;
  if (!IN6_IS_ADDR_V4MAPPED(&a)) return std::nullopt;
  return (uint32_t{a.s6_addr[12]} << 24) | (uint32_t{a.s6_addr[13]} << 16) |
         (uint32_t{a.s6_addr[14]} << 8) | a.s6_addr[15];
}

Result<GidChoice> FindRoceV2Gid(const fs::path& port_dir, std::optional<uint32_t> ip,
                                const fs::path& net_dir) {
  const fs::path gids = port_dir / "gids";
  std::error_code ec;
  if (!fs::is_directory(gids, ec)) {
    return MakeError(ErrorCode::kNotFound, fmt::format("{} does not exist", gids.string()));
  }
  // Slots in index order (directory order is not numeric order).
  std::vector<uint32_t> slots;
  for (const auto& e : fs::directory_iterator(gids, ec)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    slots.push_back(static_cast<uint32_t>(std::stoul(n)));
  }
  std::sort(slots.begin(), slots.end());
  std::string seen;  // the IPv4 GIDs present, for the error message
  for (uint32_t i : slots) {
    auto gid = ReadLine(gids / std::to_string(i));
    if (!gid) continue;
    auto v4 = Ipv4OfGid(*gid);
    if (!v4 || *v4 == 0) continue;
    auto type = ReadLine(port_dir / "gid_attrs" / "types" / std::to_string(i));
    const std::string t = type.value_or("?");
    seen += fmt::format("{}{} ({}, index {})", seen.empty() ? "" : ", ", rcx::Ipv4Text(*v4), t, i);
    if (t != "RoCE v2" || (ip && *v4 != *ip)) continue;
    GidChoice c;
    c.index = i;
    c.ip = *v4;
    c.netdev = ReadLine(port_dir / "gid_attrs" / "ndevs" / std::to_string(i)).value_or("");
    if (!c.netdev.empty()) c.mac = ReadLine(net_dir / c.netdev / "address").value_or("");
    return c;
  }
  const std::string want =
      ip ? fmt::format("the RoCE v2 GID {}", rcx::GidOf(*ip)) : std::string("an IPv4 RoCE v2 GID");
  return MakeError(ErrorCode::kNotFound,
                   fmt::format("{} has no {} (IPv4 GIDs: {}); is the netdev's address set?",
                               port_dir.string(), want, seen.empty() ? "none" : seen));
}

}  // namespace ofan::verbs
