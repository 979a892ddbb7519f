#include "emu/collective/driver.h"

#include <fmt/format.h>

#include <memory>
#include <numeric>

#include "emu/collective/clock.h"
#include "emu/collective/rank_engine.h"
#include "emu/collective/verify.h"

namespace ofan::emu {

CollectiveResult RunCollective(const Schedule& s, std::span<Transport* const> transports,
                               const RunOptions& o) {
  const uint32_t n = s.params.num_ranks;
  CollectiveResult res;
  res.workload = s.params.workload;
  res.num_ranks = n;
  res.msg_bytes = s.params.msg_bytes;
  res.qps_per_peer = s.params.qps_per_peer;
  res.cts_channels = s.params.cts_channels;
  res.cts_channel_bytes = s.params.cts_channel_bytes;
  res.cts_priority = s.params.cts_priority;
  res.seed = s.params.seed;
  res.hosts = o.hosts;
  if (res.hosts.empty()) {
    res.hosts.resize(n);
    std::iota(res.hosts.begin(), res.hosts.end(), 0u);
  }
  if (res.hosts.size() != n) {
    res.error = fmt::format("{} hosts for {} ranks", res.hosts.size(), n);
    return res;
  }
  if (o.bound) {
    auto b = NicBoundUs(s, res.hosts, *o.bound);
    if (!b) {
      res.error = "lower bound: " + b.error().message;
      return res;
    }
    res.cct_lower_bound_us = *b;
  }
  if (transports.empty() || transports.size() > n) {
    res.error = fmt::format("{} transports for {} ranks", transports.size(), n);
    return res;
  }
  std::vector<std::unique_ptr<RankEngine>> engines;
  std::vector<bool> seen(n, false);
  for (Transport* t : transports) {
    auto e = RankEngine::Create(s, t);
    if (!e) {
      res.error = e.error().message;
      return res;
    }
    const Rank r = (*e)->rank();
    if (seen[r]) {
      res.error = fmt::format("two transports are rank {}", r);
      return res;
    }
    seen[r] = true;
    res.local_ranks.push_back(r);
    engines.push_back(std::move(*e));
  }
  const auto local = static_cast<uint32_t>(engines.size());
  uint64_t total = 0;
  for (auto& e : engines) {
    e->Prepare();
    total += e->expected_bytes();
  }

  auto done_bytes = [&] {
    uint64_t d = 0;
    for (auto& e : engines) d += e->arrived_bytes();
    return d;
  };
  const int64_t start = SteadyNowNs();
  const int64_t deadline = start + std::chrono::nanoseconds(o.deadline).count();
  const int64_t progress_every = std::chrono::nanoseconds(o.progress_every).count();
  int64_t next_progress = start + progress_every;
  for (auto& e : engines) {
    if (Status st = e->Start(SteadyNowNs()); !st) {
      res.error = st.error().message;
      return res;
    }
  }
  std::vector<Completion> batch;
  batch.reserve(256);
  bool busy = true;
  uint32_t sleeper = 0;
  for (;;) {
    size_t finished = 0;
    for (auto& e : engines) finished += e->done();
    if (finished == local) break;
    const int64_t now = SteadyNowNs();
    if (now >= deadline) {
      std::string why;
      for (auto& e : engines) {
        if (!e->done()) {
          why = e->Pending();
          break;
        }
      }
      res.error = fmt::format(
          "deadline of {} ms passed: {} of {} bytes arrived, {} of {} ranks finished; {}",
          o.deadline.count(), done_bytes(), total, finished, local, why);
      return res;
    }
    if (o.progress && now >= next_progress) {
      o.progress(done_bytes(), total);
      next_progress = now + progress_every;
    }
    bool found = false;
    for (uint32_t i = 0; i < local; ++i) {
      batch.clear();
      const uint32_t wait = !busy && i == sleeper ? o.idle_wait_us : 0;
      engines[i]->transport().Poll(&batch, wait);
      if (batch.empty()) continue;
      found = true;
      const int64_t t = SteadyNowNs();
      for (const Completion& c : batch) {
        if (Status st = engines[i]->OnCompletion(c, t); !st) {
          res.error = st.error().message;
          return res;
        }
      }
    }
    if (!busy) sleeper = (sleeper + 1) % local;
    busy = found;
  }
  if (o.progress) o.progress(done_bytes(), total);

  for (auto& e : engines) res.rank_us.push_back(static_cast<double>(e->elapsed_ns()) / 1e3);
  for (auto& e : engines) {
    for (const int64_t w : e->cts_waits_ns())
      res.cts_waits_us.push_back(static_cast<double>(w) / 1e3);
    for (const int64_t f : e->cts_flights_ns())
      res.cts_flights_us.push_back(static_cast<double>(f) / 1e3);
  }
  ComputeBandwidths(&res);
  if (!o.verify) return res;
  std::optional<Mismatch> first;
  for (auto& e : engines) {
    auto m = VerifyRank(s, e->rank(), e->transport().recv_buffer());
    if (!m) continue;
    ++res.bad_ranks;
    if (!first) first = m;
  }
  res.verified = !first;
  if (first) {
    res.error = fmt::format("verification failed: {} ({} of {} ranks bad)", first->ToString(),
                            res.bad_ranks, local);
  }
  return res;
}

}  // namespace ofan::emu
