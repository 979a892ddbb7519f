// One rank of a collective over rxe, as `ofan-coll --transport verbs` runs
// it: one process per rank (one per VM), connected to the others by
// ofan-rc-1 (emu/rcx/), started together on rank 0's go.
//
// expects:  the schedule every rank was given (same workload, size, ranks,
//           QPs, seed, chunk: a different size is caught from the hellos'
//           buffer lengths, a different --qps by the rendezvous, the rest
//           only by verification), every rank's address with this rank's
//           among the device's RoCE v2 GIDs
// gives:    this rank's partial CollectiveResult (report.h: MergeResults
//           combines the ranks'), with a failure in setup, the run or the
//           done exchange in its error; the device's hw_counters deltas over
//           the run. A rank whose run failed closes its connections without
//           a done, so that its peers fail at once instead of at their
//           deadline (rcx Watch)
// next:     VerbsRankJson: ResultJson plus "transport", "device", "mtu" and
//           "rxe_counters"
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "emu/collective/driver.h"
#include "emu/collective/schedule.h"
#include "emu/verbs/hw_counters.h"
#include "emu/verbs/qp_attr.h"

namespace ofan::verbs {

struct VerbsRankOptions {
  emu::Rank rank = 0;
  std::vector<uint32_t> ips;  // by rank, host order
  std::string device;         // "": the first
  uint16_t port = 18515;
  std::chrono::milliseconds setup_timeout{30'000};
  uint32_t max_outstanding = 16;
  uint32_t recv_depth = 256;
  uint32_t mtu = 0;                        // 0: the port's
  uint8_t ack_timeout = kLocalAckTimeout;  // 4.096 us x 2^this
};

struct VerbsRankOutcome {
  emu::CollectiveResult result;
  std::string device;
  uint32_t mtu = 0;
  Counters counters;  // deltas over the run
};

VerbsRankOutcome RunVerbsRank(const emu::Schedule& s, const VerbsRankOptions& o,
                              const emu::RunOptions& run);
nlohmann::json VerbsRankJson(const VerbsRankOutcome& v);

}  // namespace ofan::verbs
