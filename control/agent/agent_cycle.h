// One cycle of ofan-agent: LLDP -> roles and miswires -> frr.conf when the
// usable fabric ports change -> BGP/BFD state -> kernel routes -> masks ->
// load_tables when they changed and BGP has converged; a JSON status of all.
//
// expects:  the switch's identity and paths (AgentOptions); a CommandRunner
//           for lldpcli, vtysh and ip (tests give captured outputs); a DpLink
//           to ofan-dp; the caller's clock (ms, monotonic).
// gives:    Cycle(now) does the steps above and returns the status object
//           (one --json line of ofan-agent). Errors of a step are in its
//           "errors" and never end the agent: a step that fails keeps the
//           last good state (an lldpcli hiccup does not tear down BGP).
// why:      the push rule (docs/emu.md, "Switches that run their own control
//           plane"), so that a starting or restarting control
//           plane never disturbs traffic:
//           - ofan-dp's masks are read back on every (re)connect and nothing
//             is sent when the computed masks equal them;
//           - before the first push, and again after BGP was lost (bgpd not
//             answering, or no session Established), the agent waits for
//             convergence: every usable fabric port (LLDP-confirmed) has an
//             Established session with prefixes received, and the masks
//             were the same for `settle_cycles` cycles in a row. Until then
//             ofan-dp keeps its last masks (its configured ones at start);
//           - FRR that restarted gets frr.conf without BFD on the sessions
//             first (frr-restart.conf), then, once every usable fabric port's
//             session is Established with prefixes, frr.conf itself: bgpd
//             of FRR 8.4 ends graceful restart when BFD flaps as a session
//             comes up (frr_config.h's FrrOptions::session_bfd);
//           - once converged, every change is pushed (a failure BFD saw must
//             reach the dataplane), except when bgpd does not answer or no
//             session is Established: then nothing is reachable through an
//             uplink anyway, and a restarting FRR must not empty the tables.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "control/agent/command_runner.h"
#include "control/agent/dp_link.h"
#include "control/agent/fabric_roles.h"
#include "control/agent/frr_config.h"
#include "control/agent/frr_state.h"
#include "dataplane/lb/fat_tree.h"

namespace ofan::agent {

struct AgentOptions {
  std::string name;  // the switch's name (reports only)
  int k = 4;
  int levels = 3;
  uint32_t switch_id = 0;
  std::string lldpcli_socket;   // lldpd -u; "" = lldpcli's default
  std::string frr_dir;          // where frr.conf goes; "" = do not manage FRR
  std::string vtysh_pathspace;  // FRR -N; "" = the default instance
  // Where FRR's daemons write their pidfiles (zebra.pid, bgpd.pid,
  // bfdd.pid); "" = /run/frr/PATHSPACE. A daemon that restarted has lost
  // what vtysh gave it: a pid that changed makes the agent apply frr.conf
  // again.
  std::string frr_run_dir;
  FrrOptions frr;
  int settle_cycles = 2;
  // Once converged, FRR's BGP and BFD state is read again after this many
  // cycles even when nothing moved (agent_cycle.cc says when it is sooner).
  uint64_t bgp_refresh_cycles = 5;
};

class Agent {
 public:
  // kInvalidArgument for a fabric or switch that does not exist.
  static Result<Agent> Make(AgentOptions options, CommandRunner& runner, DpLink& dp);

  nlohmann::json Cycle(int64_t now_ms);

  bool converged() const { return synced_; }
  uint64_t pushes() const { return pushes_; }

 private:
  Agent(AgentOptions o, lb::FatTree tree, CommandRunner& runner, DpLink& dp)
      : o_(std::move(o)), tree_(tree), runner_(&runner), dp_(&dp) {}

  // Runs argv; its stdout when it exited 0, otherwise an error with stderr.
  Result<std::string> RunOk(const std::vector<std::string>& argv);
  void ApplyFrr(const FabricRoles& roles, nlohmann::json& status, nlohmann::json& errors);
  // Applies frr.conf again once a restarted bgpd's sessions are up.
  void AddPendingBfd(nlohmann::json& status, nlohmann::json& errors);
  // The cycle's steps (Cycle), each adding its part to status and errors.
  void ReadLldp(nlohmann::json& status, nlohmann::json& errors);
  struct RouteRead {
    std::optional<std::vector<lb::PortMask>> masks;  // none: no routes or no roles
    bool bgp_routes = false;                         // the kernel holds a BGP route
  };
  RouteRead ReadRoutes(nlohmann::json& status, nlohmann::json& errors);
  void ReadFrrState(const std::optional<std::vector<lb::PortMask>>& masks, nlohmann::json& status,
                    nlohmann::json& errors);
  // What holds the masks back ("" when nothing does); sets synced_.
  std::string Converge(const std::optional<std::vector<lb::PortMask>>& masks, bool bgp_routes,
                       nlohmann::json& status, nlohmann::json& errors);
  void PushMasks(int64_t now_ms, const std::optional<std::vector<lb::PortMask>>& masks,
                 const std::string& hold, nlohmann::json& status, nlohmann::json& errors);
  // zebra's, bgpd's and bfdd's pids from their pidfiles (0 where none).
  std::vector<long> FrrPids() const;

  AgentOptions o_;
  lb::FatTree tree_;
  CommandRunner* runner_;
  DpLink* dp_;
  uint64_t cycle_ = 0;
  std::optional<FabricRoles> roles_;         // the last good classification
  std::optional<std::vector<int>> applied_;  // fabric ports FRR was last given
  std::vector<long> applied_pids_;           // FRR's daemons' pids when it was (0: no pidfile)
  bool bfd_pending_ = false;                 // FRR restarted: BFD waits for the sessions
  std::optional<std::vector<lb::PortMask>> last_masks_;  // the previous cycle's
  int stable_cycles_ = 0;
  bool synced_ = false;
  // FRR's state as last read (cycle asked_cycle_): reused while nothing moves.
  std::optional<std::vector<BgpPeer>> bgp_;
  nlohmann::json bfd_;
  uint64_t asked_cycle_ = 0;
  std::vector<int> last_usable_;
  uint64_t pushes_ = 0;
};

}  // namespace ofan::agent
