#include "emu/collective/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <tuple>

#include "workload/workload.h"

namespace ofan::emu {
namespace {

constexpr std::array<std::string_view, 5> kNames = {"permutation", "alltoall", "allgather",
                                                    "reducescatter", "incast"};

// Reduce-scatter adds uint32 words, so its blocks and chunks start on words.
constexpr uint32_t kWord = 4;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// How many chunks a transfer of len bytes becomes (0 for an empty one).
uint64_t ChunkCount(uint64_t len, const ScheduleParams& p, uint32_t align) {
  if (len == 0) return 0;
  const uint64_t units = CeilDiv(len, align);
  const uint64_t per_chunk = p.chunk_bytes / align;
  return std::max(CeilDiv(units, per_chunk), std::min<uint64_t>(p.qps_per_peer, units));
}

struct Range {
  uint64_t begin, len;
};

Range Part(uint64_t total, uint32_t parts, uint32_t align, uint32_t i) {
  const uint64_t b = SplitBegin(total, parts, align, i);
  return {b, SplitBegin(total, parts, align, i + 1) - b};
}

class Builder {
 public:
  explicit Builder(const ScheduleParams& p) : p_(p) {
    s_.params = p;
    s_.ranks.resize(p.num_ranks);
  }

  // Appends the writes of one transfer (src -> dst) and the arrivals they
  // make at dst; returns the chunk count. Dependencies are wired by the ring
  // builders, which know the indices.
  Result<uint32_t> Transfer(Rank src, Rank dst, uint32_t step, uint64_t src_off, uint64_t dst_off,
                            uint64_t len, uint32_t align, OnArrival action) {
    const uint64_t k = ChunkCount(len, p_, align);
    if (k > kMaxChunksPerGroup) {
      return InvalidArgument(
          fmt::format("{} bytes in chunks of {} is {} chunks, more than the {} an "
                      "immediate can name: use a larger chunk size",
                      len, p_.chunk_bytes, k, kMaxChunksPerGroup));
    }
    const auto chunks = static_cast<uint32_t>(k);
    for (uint32_t c = 0; c < chunks; ++c) {
      const Range r = Part(len, chunks, align, c);
      s_.ranks[src].writes.push_back({.peer = dst,
                                      .qp = c % p_.qps_per_peer,
                                      .step = step,
                                      .chunk = c,
                                      .src_off = src_off + r.begin,
                                      .dst_off = dst_off + r.begin,
                                      .len = r.len});
      s_.ranks[dst].arrivals.push_back({.from = src,
                                        .step = step,
                                        .chunk = c,
                                        .off = dst_off + r.begin,
                                        .len = r.len,
                                        .action = action});
    }
    return chunks;
  }

  Result<Schedule> Permutation() {
    const uint32_t n = p_.num_ranks;
    // Every rank receives from one sender only, so arrivals come out sorted.
    s_.peer_of = workload::RandomDerangement(n, p_.seed);
    for (Rank i = 0; i < n; ++i) {
      auto k = Transfer(i, s_.peer_of[i], 0, 0, 0, p_.msg_bytes, 1, OnArrival::kNone);
      if (!k) return k.error();
      RankPlan& dst = s_.ranks[s_.peer_of[i]];
      dst.expect.push_back({.recv_off = 0, .len = p_.msg_bytes, .src = i, .src_off = 0});
      dst.recv_bytes = p_.msg_bytes;
      s_.ranks[i].send_bytes = p_.msg_bytes;
    }
    return std::move(s_);
  }

  Result<Schedule> AllToAll() {
    const uint32_t n = p_.num_ranks;
    // Senders in ascending order keeps every receiver's arrivals sorted.
    for (Rank i = 0; i < n; ++i) {
      s_.ranks[i].send_bytes = p_.msg_bytes;
      for (Rank j = 0; j < n; ++j) {
        const Range chunk = Part(p_.msg_bytes, n, 1, j);  // i's data for j
        const uint64_t slot = uint64_t{i} * chunk.len;    // where j keeps it
        s_.ranks[j].recv_bytes = uint64_t{n} * chunk.len;
        s_.ranks[j].expect.push_back(
            {.recv_off = slot, .len = chunk.len, .src = i, .src_off = chunk.begin});
        if (i == j) {
          if (chunk.len > 0) s_.ranks[i].local.push_back({chunk.begin, slot, chunk.len});
          continue;
        }
        auto k = Transfer(i, j, 0, chunk.begin, slot, chunk.len, 1, OnArrival::kNone);
        if (!k) return k.error();
      }
    }
    // Post to peers i+1, i+2, ... first rather than all to rank 0 first: the
    // queues start in the order of their first write.
    for (Rank i = 0; i < n; ++i) {
      auto& w = s_.ranks[i].writes;
      std::stable_sort(w.begin(), w.end(), [&](const PlannedWrite& a, const PlannedWrite& b) {
        return (a.peer + n - i) % n < (b.peer + n - i) % n;
      });
    }
    return std::move(s_);
  }

  // Every sender's S bytes to rank 0, sender j's at j * S there (senders in
  // ascending order keep the receiver's arrivals sorted).
  Result<Schedule> Incast() {
    const std::vector<Rank> senders = IncastSenders(p_.num_ranks, p_.incast_senders, p_.victim);
    RankPlan& dst = s_.ranks[0];
    dst.recv_bytes = p_.msg_bytes * senders.size();
    for (size_t j = 0; j < senders.size(); ++j) {
      const Rank i = senders[j];
      const uint64_t slot = j * p_.msg_bytes;
      auto k = Transfer(i, 0, 0, 0, slot, p_.msg_bytes, 1, OnArrival::kNone);
      if (!k) return k.error();
      dst.expect.push_back({.recv_off = slot, .len = p_.msg_bytes, .src = i, .src_off = 0});
      s_.ranks[i].send_bytes = p_.msg_bytes;
    }
    if (p_.victim) {
      const Rank v = workload::VictimSrc(p_.num_ranks), d = workload::kVictimDst;
      auto k = Transfer(v, d, 0, 0, 0, p_.msg_bytes, 1, OnArrival::kNone);
      if (!k) return k.error();
      s_.ranks[d].recv_bytes = p_.msg_bytes;
      s_.ranks[d].expect.push_back({.recv_off = 0, .len = p_.msg_bytes, .src = v, .src_off = 0});
      s_.ranks[v].send_bytes = p_.msg_bytes;
    }
    return std::move(s_);
  }

  // All-gather (reduce = false): at step s rank r forwards block r - s.
  // Reduce-scatter: at step s rank r sends its partial sum of block r - s - 1,
  // and the last block it receives, r, is its result.
  Result<Schedule> Ring(bool reduce) {
    const uint32_t n = p_.num_ranks;
    const uint32_t align = reduce ? kWord : 1;
    const uint32_t steps = n - 1;
    s_.num_steps = steps;
    auto block_at = [&](Rank r, uint32_t s) {
      return Part(p_.msg_bytes, n, align, (r + 2 * n - s - (reduce ? 1 : 0)) % n);
    };
    // Step s of rank r is its (s)th transfer; arrivals at r come from r - 1
    // only, in step order. Index bases per (rank, step).
    std::vector<std::vector<uint32_t>> wbase(n, std::vector<uint32_t>(steps + 1, 0));
    for (Rank r = 0; r < n; ++r) {
      const Rank next = (r + 1) % n;
      s_.ranks[r].send_bytes = p_.msg_bytes;
      s_.ranks[r].recv_bytes = p_.msg_bytes;
      for (uint32_t s = 0; s < steps; ++s) {
        const Range b = block_at(r, s);
        const bool last = s + 1 == steps;
        const OnArrival action = reduce
                                     ? (last ? OnArrival::kReduceToRecv : OnArrival::kReduceToSend)
                                     : (last ? OnArrival::kNone : OnArrival::kCopyToSend);
        wbase[r][s] = static_cast<uint32_t>(s_.ranks[r].writes.size());
        auto k = Transfer(r, next, s, b.begin, b.begin, b.len, align, action);
        if (!k) return k.error();
      }
      wbase[r][steps] = static_cast<uint32_t>(s_.ranks[r].writes.size());
    }
    // Arrival (s, c) at r is what r - 1 sent at step s; it enables r's write
    // (s + 1, c), which carries the same block onwards.
    for (Rank r = 0; r < n; ++r) {
      RankPlan& plan = s_.ranks[r];
      for (uint32_t a = 0; a < plan.arrivals.size(); ++a) {
        PlannedArrival& arr = plan.arrivals[a];
        if (arr.step + 1 == steps) continue;
        const uint32_t w = wbase[r][arr.step + 1] + arr.chunk;
        arr.unblocks = w;
        plan.writes[w].after = a;
      }
      const Range own = Part(p_.msg_bytes, n, align, r);
      if (reduce) {
        plan.expect.push_back({.recv_off = own.begin, .len = own.len, .sum = true});
      } else {
        if (own.len > 0) plan.local.push_back({own.begin, own.begin, own.len});
        for (Rank b = 0; b < n; ++b) {
          const Range blk = Part(p_.msg_bytes, n, align, b);
          plan.expect.push_back(
              {.recv_off = blk.begin, .len = blk.len, .src = b, .src_off = blk.begin});
        }
      }
    }
    return std::move(s_);
  }

 private:
  const ScheduleParams& p_;
  Schedule s_;
};

}  // namespace

std::string_view WorkloadName(Workload w) { return kNames[static_cast<size_t>(w)]; }

Result<Workload> ParseWorkload(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<Workload>(i);
  }
  // ofan-emu's and ofan-sim's short names.
  if (name == "perm") return Workload::kPermutation;
  if (name == "a2a") return Workload::kAllToAll;
  return InvalidArgument(
      fmt::format("unknown workload '{}' (permutation or perm, alltoall or a2a, "
                  "allgather, reducescatter, incast)",
                  name));
}

std::vector<Rank> IncastSenders(uint32_t num_ranks, uint32_t senders, bool victim) {
  return workload::IncastSenders(num_ranks, senders, victim);  // the one rule ofan-sim runs too
}

uint64_t SplitBegin(uint64_t total, uint32_t parts, uint32_t align, uint32_t i) {
  if (i >= parts) return total;
  const uint64_t units = CeilDiv(total, align);
  return std::min(total, units * i / parts * align);
}

uint64_t RankPlan::WriteBytes() const {
  uint64_t b = 0;
  for (const PlannedWrite& w : writes) b += w.len;
  return b;
}

uint64_t RankPlan::ArrivalBytes() const {
  uint64_t b = 0;
  for (const PlannedArrival& a : arrivals) b += a.len;
  return b;
}

uint32_t RankPlan::FindArrival(Rank from, uint32_t imm) const {
  const auto key = std::make_tuple(from, ImmStep(imm), ImmChunk(imm));
  auto it = std::lower_bound(arrivals.begin(), arrivals.end(), key,
                             [](const PlannedArrival& a, const auto& k) {
                               return std::make_tuple(a.from, a.step, a.chunk) < k;
                             });
  if (it == arrivals.end() || std::make_tuple(it->from, it->step, it->chunk) != key) return kNoDep;
  return static_cast<uint32_t>(it - arrivals.begin());
}

uint64_t Schedule::MaxSendBytes() const {
  uint64_t m = 0;
  for (const RankPlan& r : ranks) m = std::max(m, r.send_bytes);
  return m;
}

uint64_t Schedule::MaxRecvBytes() const {
  uint64_t m = 0;
  for (const RankPlan& r : ranks) m = std::max(m, r.recv_bytes);
  return m;
}

Result<Schedule> MakeSchedule(const ScheduleParams& p) {
  auto bad = [](std::string m) { return InvalidArgument(std::move(m)); };
  if (static_cast<size_t>(p.workload) >= kNames.size()) return bad("unknown workload");
  if (p.num_ranks < 2 || p.num_ranks > kMaxRanks) {
    return bad(fmt::format("{} ranks: a collective needs 2..{}", p.num_ranks, kMaxRanks));
  }
  if (p.msg_bytes == 0 || p.msg_bytes > kMaxMsgBytes) {
    return bad(fmt::format("message size {} B is out of range (1 B .. 1 TiB)", p.msg_bytes));
  }
  if (p.qps_per_peer == 0 || p.qps_per_peer > 1024) {
    return bad(fmt::format("{} QPs per peer: expected 1..1024", p.qps_per_peer));
  }
  if (p.chunk_bytes < kWord || p.chunk_bytes % kWord != 0 || p.chunk_bytes > (uint64_t{1} << 31)) {
    return bad(
        fmt::format("chunk size {} B: expected a multiple of 4 in 4 B .. 2 GiB", p.chunk_bytes));
  }
  if (p.cts_channels > kMaxCtsChannels) {
    return bad(fmt::format("{} CTS channels: expected 1..{}", p.cts_channels, kMaxCtsChannels));
  }
  if (p.cts_channels && (p.cts_channel_bytes == 0 || p.chunk_bytes > p.cts_channel_bytes)) {
    return bad(
        fmt::format("CTS channels of {} B: a chunk ({} B) must fit one (a channel's bytes "
                    "> 0, the chunk size at most that)",
                    p.cts_channel_bytes, p.chunk_bytes));
  }
  if (p.victim && p.workload != Workload::kIncast)
    return bad("a victim flow runs beside an incast");
  if (p.victim && p.num_ranks < 4) {
    return bad(fmt::format("a victim flow beside an incast needs 4 ranks, not {}", p.num_ranks));
  }
  if (p.victim && p.incast_senders > p.num_ranks - 3) {
    return bad(
        fmt::format("{} incast senders: with the victim flow, {} ranks have at most {} "
                    "(neither the receiver nor the victim's two ends)",
                    p.incast_senders, p.num_ranks, p.num_ranks - 3));
  }
  if (p.workload == Workload::kIncast && p.incast_senders > p.num_ranks - 1) {
    return bad(fmt::format("{} incast senders: {} ranks have at most {} besides the receiver",
                           p.incast_senders, p.num_ranks, p.num_ranks - 1));
  }
  if (p.workload == Workload::kIncast && p.msg_bytes > kMaxMsgBytes / p.num_ranks) {
    return bad(fmt::format("incast of {} B from {} senders: the receiver's buffer would pass 1 TiB",
                           p.msg_bytes, p.num_ranks - 1));
  }
  Builder b(p);
  switch (p.workload) {
    case Workload::kPermutation:
      return b.Permutation();
    case Workload::kAllToAll:
      return b.AllToAll();
    case Workload::kAllGather:
      return b.Ring(false);
    case Workload::kReduceScatter:
      return b.Ring(true);
    case Workload::kIncast:
      return b.Incast();
  }
  return bad("unknown workload");
}

double BusBwFactor(Workload w, uint32_t n) {
  if (w == Workload::kPermutation || w == Workload::kIncast || n == 0) return 1.0;
  return static_cast<double>(n - 1) / static_cast<double>(n);
}

}  // namespace ofan::emu
