#include "sim/config.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

#include "common/units.h"
#include "dataplane/lb/fat_tree.h"

namespace ofan::sim {
namespace {
constexpr std::array<std::string_view, 5> kHostNames = {"fixed", "spray", "drb", "reps",
                                                        "ethereal"};
constexpr std::array<std::string_view, 2> kReceiverNames = {"ooo", "gbn"};
constexpr std::array<std::string_view, 8> kWorkloadNames = {"perm",     "a2a", "pair", "matrix",
                                                            "a2a-host", "moe", "fsdp", "incast"};
}  // namespace

std::string_view HostSchemeName(HostScheme s) { return kHostNames[static_cast<size_t>(s)]; }
std::string_view ReceiverName(Receiver r) { return kReceiverNames[static_cast<size_t>(r)]; }
std::string_view WorkloadName(WorkloadKind w) { return kWorkloadNames[static_cast<size_t>(w)]; }

Result<HostScheme> ParseHostScheme(std::string_view s) {
  for (size_t i = 0; i < kHostNames.size(); ++i) {
    if (kHostNames[i] == s) return static_cast<HostScheme>(i);
  }
  return InvalidArgument(
      fmt::format("unknown host scheme '{}' (expected fixed|spray|drb|reps|ethereal)", s));
}

Result<Receiver> ParseReceiver(std::string_view s) {
  for (size_t i = 0; i < kReceiverNames.size(); ++i) {
    if (kReceiverNames[i] == s) return static_cast<Receiver>(i);
  }
  return InvalidArgument(fmt::format("unknown receiver '{}' (expected ooo|gbn)", s));
}

Result<WorkloadKind> ParseWorkload(std::string_view s) {
  for (size_t i = 0; i < kWorkloadNames.size(); ++i) {
    if (kWorkloadNames[i] == s) return static_cast<WorkloadKind>(i);
  }
  return InvalidArgument(fmt::format(
      "unknown workload '{}' (expected perm|a2a|a2a-host|pair|matrix|moe|fsdp|incast)", s));
}

Status ApplyLbName(std::string_view name, SimConfig& c) {
  if (name == "drb" || name == "ethereal") {
    c.host = name == "drb" ? HostScheme::kDrb : HostScheme::kEthereal;
    c.policy.kind = lb::PolicyKind::kSourceRouted;
    return {};
  }
  if (name == "reps" || name == "spray") {
    c.host = name == "reps" ? HostScheme::kReps : HostScheme::kSpray;
    c.policy.kind = lb::PolicyKind::kEcmp;
    return {};
  }
  // NxOfan (§5.1, §6: "4Ofan"): POfan whose pipes are N ports.
  if (name.size() > 4 && name.size() <= 7 && name.ends_with("ofan")) {
    const std::string_view n = name.substr(0, name.size() - 4);
    uint32_t pipe = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), pipe);
    if (ec == std::errc() && end == n.data() + n.size() && pipe > 0) {
      c.policy.kind = lb::PolicyKind::kPofan;
      c.policy.pipe_size = pipe;
      return {};
    }
  }
  auto k = lb::ParsePolicy(name);
  if (!k) return k.error();
  c.policy.kind = *k;
  return {};
}

Status SimConfig::Validate() const {
  auto bad = [](std::string m) { return InvalidArgument(std::move(m)); };
  if (auto t = lb::FatTree::Make(k, levels); !t) return t.error();
  if (auto r = LinkRate::FromGbps(link_gbps, "--link-gbps"); !r) return r.error();
  if (!(latency_us >= 0 && latency_us <= 1e6))
    return bad(fmt::format("--latency-us must be in [0, 1e6], got {}", latency_us));
  if (payload == 0 || payload > (1u << 20))
    return bad(fmt::format("--payload must be in [1, 1MiB], got {}", payload));
  if (header > 4096) return bad(fmt::format("--header must be <= 4096, got {}", header));
  if (ack_bytes == 0 || ack_bytes > 65535)
    return bad(fmt::format("--ack-bytes must be in [1, 65535], got {}", ack_bytes));
  if (payload + header > 65535 * 16) return bad("frame too large");
  if (gap_bytes > 4096) return bad(fmt::format("--gap-bytes must be <= 4096, got {}", gap_bytes));
  if (!(load > 0 && load <= 1.0)) return bad(fmt::format("--load must be in (0, 1], got {}", load));
  if (host_burst == 0 || host_burst > 1024)
    return bad(fmt::format("--host-burst must be in [1, 1024] frames, got {}", host_burst));
  if (!(fail_prob >= 0 && fail_prob < 1))
    return bad(fmt::format("--fail-prob must be in [0, 1), got {}", fail_prob));
  if (msg_bytes == 0) return bad("--msg must be > 0");
  if (!(init_window_bdps > 0 && init_window_bdps <= 16))
    return bad(fmt::format("--init-window must be in (0, 16] BDPs, got {}", init_window_bdps));
  if (msg_bytes / payload > (1ULL << 26))
    return bad("--msg is too large (more than 2^26 packets per flow)");
  if (workload == WorkloadKind::kMatrix && matrix_file.empty())
    return bad("--workload matrix needs --matrix FILE");
  if (!(moe_scale > 0 && moe_scale <= 1000))
    return bad(fmt::format("--moe-scale must be in (0, 1000], got {}", moe_scale));
  if (fsdp_phases < 1 || fsdp_phases > 2)
    return bad(fmt::format("--fsdp-phases must be 1 or 2, got {}", fsdp_phases));
  if (server_gpus == 0 || server_gpus > 1024)
    return bad(fmt::format("--server-gpus must be in [1, 1024], got {}", server_gpus));
  if (policy.kind == lb::PolicyKind::kPofan &&
      (policy.pipe_size == 0 || policy.pipe_size > static_cast<uint32_t>(k))) {
    return bad(fmt::format("--pipe-size must be in [1, k={}], got {}", k, policy.pipe_size));
  }
  if ((host == HostScheme::kDrb || host == HostScheme::kEthereal) &&
      policy.kind != lb::PolicyKind::kSourceRouted) {
    return bad(fmt::format(
        "--host {0} needs switches that follow the host's path (--lb source); use --lb {0}",
        HostSchemeName(host)));
  }
  if (Status s = ValidateMix(*this); !s) return s;
  if (workload != WorkloadKind::kIncast && (incast_senders || incast_victim)) {
    return bad(incast_victim ? "--victim: with --workload incast"
                             : "--incast-senders: with --workload incast");
  }
  if (workload == WorkloadKind::kIncast) {
    const auto hosts = static_cast<uint32_t>(lb::FatTree::Make(k, levels)->num_hosts());
    const uint32_t most = incast_victim ? hosts - 3 : hosts - 1;
    if (incast_senders > most) {
      return bad(fmt::format("--incast-senders {}: 1 to {} of the {} hosts (host 0 receives{})",
                             incast_senders, most, hosts,
                             incast_victim ? "; the victim's two ends do not send to it" : ""));
    }
  }
  if (rto_us > 60'000'000) return bad(fmt::format("--rto-us must be <= 60000000, got {}", rto_us));
  if (rto_us != 0 && cca != Cca::kNone) {
    return bad(
        fmt::format("--rto-us is the fixed-rate hosts' timeout (--cca none); --cca {} "
                    "computes its own",
                    CcaName(cca)));
  }
  if (receiver == Receiver::kGbn && cca != Cca::kNone) {
    return bad(fmt::format(
        "--receiver gbn models rxe's go-back-N under fixed-rate senders: give --cca none "
        "(--cca {} recovers selectively, per packet)",
        CcaName(cca)));
  }
  if (reorder) {
    if (reorder_bytes < frame_bytes() || reorder_bytes > (uint64_t{1} << 30)) {
      return bad(
          fmt::format("--reorder-kb: the buffer must hold a data frame ({} B) and be at "
                      "most 1 GiB, got {} B",
                      frame_bytes(), reorder_bytes));
    }
    if (reorder_timeout_us > fabric::kReorderMaxTimeoutUs) {
      return bad(fmt::format("--reorder-timeout-us must be in [1, {}], got {}",
                             fabric::kReorderMaxTimeoutUs, reorder_timeout_us));
    }
  }
  if (pfc) {
    if (buffer_bytes == 0) {
      return bad(
          "--pfc needs --buffer: PFC's thresholds are shares of a port's buffer (an infinite "
          "buffer never pauses)");
    }
    if (pfcwd_detect_ms < fabric::kPfcWdDetectMinMs ||
        pfcwd_detect_ms > fabric::kPfcWdDetectMaxMs) {
      return bad(fmt::format("--pfcwd-detect-ms must be in [{}, {}], got {}",
                             fabric::kPfcWdDetectMinMs, fabric::kPfcWdDetectMaxMs,
                             pfcwd_detect_ms));
    }
    if (pfcwd_restore_ms < fabric::kPfcWdRestoreMinMs ||
        pfcwd_restore_ms > fabric::kPfcWdRestoreMaxMs) {
      return bad(fmt::format("--pfcwd-restore-ms must be in [{}, {}], got {}",
                             fabric::kPfcWdRestoreMinMs, fabric::kPfcWdRestoreMaxMs,
                             pfcwd_restore_ms));
    }
    if (pfc_quanta == 0) return bad("--pfc-quanta must be in [1, 65535]");
    if (auto th = PfcPortThresholds(); !th) return bad("--pfc: " + th.error().message);
  }
  return {};
}

Result<fabric::PfcThresholds> SimConfig::PfcPortThresholds() const {
  return fabric::PortPfcThresholds(buffer_bytes, 8000.0 / link_gbps,
                                   static_cast<lb::TimePs>(std::llround(latency_us * 1e6)),
                                   frame_bytes(), pfc_response_quanta);
}

}  // namespace ofan::sim
