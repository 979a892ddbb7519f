#include "sim/transport/cca.h"

#include <fmt/format.h>

#include <array>

#include "sim/transport/dctcp.h"
#include "sim/transport/mswift.h"
#include "sim/transport/nscc.h"

namespace ofan::sim {
namespace {

struct CcaEntry {
  std::string_view name, help;
};
constexpr std::array kCcas = {
#define OFAN_SIM_CCA_ENTRY(e, name, help) CcaEntry{name, help},
    OFAN_SIM_CCAS(OFAN_SIM_CCA_ENTRY)
#undef OFAN_SIM_CCA_ENTRY
};

}  // namespace

std::string_view CcaName(Cca c) { return kCcas[static_cast<size_t>(c)].name; }

std::string CcaNames() {
  std::string out;
  for (const CcaEntry& e : kCcas) {
    if (!out.empty()) out += '|';
    out += e.name;
  }
  return out;
}

std::string CcaHelp() {
  std::string out;
  for (const CcaEntry& e : kCcas) out += fmt::format("\n  {:<7} {}", e.name, e.help);
  return out;
}

Result<Cca> ParseCca(std::string_view s) {
  for (size_t i = 0; i < kCcas.size(); ++i) {
    if (kCcas[i].name == s) return static_cast<Cca>(i);
  }
  return InvalidArgument(
      fmt::format("unknown congestion control '{}' (expected {})", s, CcaNames()));
}

namespace {
// The one place that maps the enum to the algorithm's class.
template <class F>
void WithCca(Cca kind, F&& f) {
  switch (kind) {
    case Cca::kNone:
      return;
    case Cca::kDctcp:
      return f(dctcp::Dctcp{});
    case Cca::kNscc:
      return f(nscc::Nscc{});
    case Cca::kMswift:
      return f(mswift::Mswift{});
  }
}
}  // namespace

void CcInit(Cca kind, CcState& s, const CcParams& p) {
  WithCca(kind, [&](auto a) { decltype(a)::Init(s, p); });
}
void CcOnAck(Cca kind, CcState& s, const CcParams& p, const AckSignal& a) {
  WithCca(kind, [&](auto algo) { decltype(algo)::OnAck(s, p, a); });
}
void CcOnLoss(Cca kind, CcState& s, const CcParams& p, TimePs now) {
  WithCca(kind, [&](auto a) { decltype(a)::OnLoss(s, p, now); });
}
void CcOnTimeout(Cca kind, CcState& s, const CcParams& p, TimePs now) {
  WithCca(kind, [&](auto a) { decltype(a)::OnTimeout(s, p, now); });
}

}  // namespace ofan::sim
