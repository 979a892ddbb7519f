// FRR's view of the switch's sessions: `vtysh -c 'show bgp summary json'` and
// `vtysh -c 'show bfd peers json'` parsed into per-interface records.
//
// expects:  the text FRR 8.4.4 printed (fixtures bgp_summary_*.json,
//           bfd_peers_*.json in tests/control/agent/fixtures/, from real
//           daemons); BGP unnumbered, so peers are keyed by interface ("p2").
//           An empty object ({}: bgpd has no `router bgp` yet) is no peers.
// gives:    per peer: interface, state ("Established", "Active", ...), the
//           prefixes received; per BFD peer: interface, status ("up",
//           "down", ...). Anything of the wrong shape is kInvalidArgument that
//           names the command and the field; never a crash
//           (tests/fuzz/agent_fuzz.cc).
// why:      the agent reports the sessions and decides from them whether BGP
//           has converged enough to push masks (agent_cycle.h): an
//           Established session with prefixes received is one neighbour whose
//           routes are in the kernel.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ofan::agent {

struct BgpPeer {
  std::string interface;  // the peer's key: the interface of BGP unnumbered
  std::string state;      // FRR's: "Established", "Active", "Connect", "Idle", ...
  uint64_t prefixes_received = 0;
  std::string hostname;  // what the peer announced ("" if it did not)
  bool established() const { return state == "Established"; }
  friend bool operator==(const BgpPeer&, const BgpPeer&) = default;
};

struct BfdPeer {
  std::string interface;  // "" for a multihop session
  std::string peer;       // its address (an IPv6 link-local here)
  std::string status;     // "up", "down", "init", "shutdown"
  friend bool operator==(const BfdPeer&, const BfdPeer&) = default;
};

Result<std::vector<BgpPeer>> ParseBgpSummary(std::string_view text);
Result<std::vector<BfdPeer>> ParseBfdPeers(std::string_view text);

}  // namespace ofan::agent
