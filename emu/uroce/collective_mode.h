// `uroce collective --spec FILE.json`: many uroce hosts in this process, one
// Transport each, running one collective of ofan_collective (emu/collective/
// driver.h) to completion, as ofan-emu's `run` (emu/fabric/run.py) asks.
//
// expects:  a spec as run.py's Runner.spec() writes it: workload ("perm",
//           "a2a", "allgather", "reducescatter" or ofan_collective's long
//           names), msg_bytes, seed, qps_per_peer, entropy ("qp", "spray",
//           "reps"), ooo, pace_fraction, mtu, deadline_s, and hosts[] with
//           rank, host (fabric index), name, netns, ifname, mac, ip,
//           gateway_mac, line_rate_gbps; optional: io ("auto", "afxdp",
//           "afpacket"), chunk_bytes, max_outstanding, rto_us, dcqcn, dscp,
//           k and levels (the fat tree, for the NIC-bound's path lengths);
//           incast_senders and victim (incast); cts ({channels,
//           channel_bytes, priority}: receiver-driven admission);
//           exchange (connect by ofan-rc-1, rank_exchange.h, instead of the
//           computed plan; AF_XDP then takes only RoCEv2, the kernel keeps
//           the TCP; gateway_mac may be left out: each peer's next hop then
//           comes from the host namespace's tables) with rc_port, and
//           hosts[].external (a rank another process runs, uroce or
//           rdma-core: only its rank and ip are read); send_log_dir (test
//           mode: each local host's sent RoCEv2 frames, with their send
//           times, written there as NAME.tsv after the run)
// gives:    one JSON object: "result" (ofan_collective's ResultJson), "hosts"
//           (each host's counters, tx_refused among them), "totals"
//           (retransmissions, naks_received, naks_sent, out_of_sequence,
//           duplicates, timeouts, cnps_received); exit 0 when the
//           collective completed and verified, 1 when it did not, 2 for a
//           spec that cannot be run as written (the message says why)
#pragma once

#include <string>

namespace ofan::uroce {

int RunCollectiveSpec(const std::string& path, bool json);

}  // namespace ofan::uroce
