#include "emu/collective/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ofan::emu {

double AlgBwGbps(uint64_t bytes, double us) {
  if (!(us > 0)) return 0;
  return static_cast<double>(bytes) * 8.0 / (us * 1e3);
}

void ComputeBandwidths(CollectiveResult* r) {
  r->cct_us = 0;
  for (double t : r->rank_us) r->cct_us = std::max(r->cct_us, t);
  r->algbw_gbps = AlgBwGbps(r->msg_bytes, r->cct_us);
  r->busbw_gbps = r->algbw_gbps * BusBwFactor(r->workload, r->num_ranks);
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - (q > 0));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

Result<CollectiveResult> MergeResults(std::span<const CollectiveResult> parts) {
  auto bad = [](std::string m) { return InvalidArgument(std::move(m)); };
  if (parts.empty()) return bad("no results to merge");
  const CollectiveResult& a = parts[0];
  CollectiveResult m = a;
  m.local_ranks.clear();
  m.rank_us.assign(a.num_ranks, 0);
  m.cct_lower_bound_us.reset();
  m.verified = true;
  m.bad_ranks = 0;
  m.error.clear();
  m.cts_waits_us.clear();
  m.cts_flights_us.clear();  // several processes: several clocks
  std::vector<bool> seen(a.num_ranks, false);
  for (const CollectiveResult& p : parts) {
    if (p.workload != a.workload || p.num_ranks != a.num_ranks || p.msg_bytes != a.msg_bytes ||
        p.qps_per_peer != a.qps_per_peer || p.seed != a.seed) {
      return bad("the results are not of one collective (workload, ranks, size, QPs, seed)");
    }
    for (size_t i = 0; i < p.local_ranks.size(); ++i) {
      const Rank r = p.local_ranks[i];
      if (r >= a.num_ranks || seen[r]) return bad(fmt::format("rank {} is in two results", r));
      seen[r] = true;
      if (i < p.rank_us.size()) m.rank_us[r] = p.rank_us[i];
    }
    if (!m.cct_lower_bound_us) m.cct_lower_bound_us = p.cct_lower_bound_us;
    m.verified = m.verified && p.verified;
    m.bad_ranks += p.bad_ranks;
    m.cts_waits_us.insert(m.cts_waits_us.end(), p.cts_waits_us.begin(), p.cts_waits_us.end());
    if (parts.size() == 1) m.cts_flights_us = p.cts_flights_us;
    if (m.error.empty()) m.error = p.error;
  }
  // A part that failed early may not know its ranks; its error stands.
  for (Rank r = 0; r < a.num_ranks && m.error.empty(); ++r) {
    if (!seen[r]) return bad(fmt::format("no result has rank {}", r));
  }
  m.local_ranks.resize(a.num_ranks);
  std::iota(m.local_ranks.begin(), m.local_ranks.end(), 0u);
  ComputeBandwidths(&m);
  return m;
}

nlohmann::json ResultJson(const CollectiveResult& r) {
  nlohmann::json j = {
      {"workload", std::string(WorkloadName(r.workload))},
      {"ranks", r.num_ranks},
      {"hosts", r.hosts},
      {"msg_bytes", r.msg_bytes},
      {"qps_per_peer", r.qps_per_peer},
      {"seed", r.seed},
      {"local_ranks", r.local_ranks},
      {"partial", r.partial()},
      {"cct_us", r.cct_us},
      {"rank_us", r.rank_us},
      {"algbw_gbps", r.algbw_gbps},
      {"busbw_gbps", r.busbw_gbps},
      {"cct_lower_bound_us", nullptr},
      {"lower_bound_kind", "nic_bound"},
      {"verified", r.verified},
      {"bad_ranks", r.bad_ranks},
      {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
  };
  if (r.cct_lower_bound_us) j["cct_lower_bound_us"] = *r.cct_lower_bound_us;
  if (r.cts_channels) {
    j["cts"] = {{"channels", r.cts_channels},
                {"channel_bytes", r.cts_channel_bytes},
                {"priority", r.cts_priority},
                {"waits_us", r.cts_waits_us},
                {"flights_us", r.cts_flights_us}};
    // The CTS delay: a clear-to-send's flight (null without one clock);
    // the CTS wait: a ready chunk's for its slot.
    j["cts_delay_us"] = r.cts_flights_us.empty()
                            ? nlohmann::json(nullptr)
                            : nlohmann::json{{"p50", Quantile(r.cts_flights_us, 0.5)},
                                             {"p90", Quantile(r.cts_flights_us, 0.9)},
                                             {"n", r.cts_flights_us.size()}};
    j["cts_wait_us"] = {{"p50", Quantile(r.cts_waits_us, 0.5)},
                        {"p90", Quantile(r.cts_waits_us, 0.9)},
                        {"n", r.cts_waits_us.size()}};
  }
  return j;
}

Result<CollectiveResult> ParseResultJson(const nlohmann::json& j) {
  auto bad = [](std::string m) { return InvalidArgument("a collective result: " + std::move(m)); };
  if (!j.is_object()) return bad("not a JSON object");
  for (const char* k : {"workload", "ranks", "hosts", "msg_bytes", "qps_per_peer", "seed",
                        "local_ranks", "rank_us", "verified", "bad_ranks", "error"}) {
    if (!j.contains(k)) return bad(fmt::format("'{}' is missing", k));
  }
  CollectiveResult r;
  if (!j["workload"].is_string()) return bad("'workload' must be a string");
  auto w = ParseWorkload(j["workload"].get<std::string>());
  if (!w) return bad(w.error().message);
  r.workload = *w;
  auto uint = [&](const char* k, uint64_t max, uint64_t* out) -> Status {
    const auto& v = j[k];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > max) {
      return bad(fmt::format("'{}' must be an unsigned integer up to {}", k, max));
    }
    *out = v.get<uint64_t>();
    return {};
  };
  uint64_t ranks = 0, qps = 0, bad_ranks = 0;
  for (const Status& s :
       {uint("ranks", kMaxRanks, &ranks), uint("msg_bytes", kMaxMsgBytes, &r.msg_bytes),
        uint("qps_per_peer", UINT32_MAX, &qps), uint("seed", UINT64_MAX, &r.seed),
        uint("bad_ranks", kMaxRanks, &bad_ranks)}) {
    if (!s) return s.error();
  }
  r.num_ranks = static_cast<uint32_t>(ranks);
  r.qps_per_peer = static_cast<uint32_t>(qps);
  r.bad_ranks = static_cast<uint32_t>(bad_ranks);
  auto uints = [&](const char* k, std::vector<uint32_t>* out) -> Status {
    if (!j[k].is_array()) return bad(fmt::format("'{}' must be a list", k));
    for (const auto& v : j[k]) {
      if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX) {
        return bad(fmt::format("'{}' must hold unsigned integers", k));
      }
      out->push_back(v.get<uint32_t>());
    }
    return {};
  };
  if (Status s = uints("hosts", &r.hosts); !s) return s.error();
  if (Status s = uints("local_ranks", &r.local_ranks); !s) return s.error();
  if (!j["rank_us"].is_array()) return bad("'rank_us' must be a list");
  for (const auto& v : j["rank_us"]) {
    if (!v.is_number() || !(v.get<double>() >= 0)) return bad("'rank_us' must hold times >= 0");
    r.rank_us.push_back(v.get<double>());
  }
  if (r.rank_us.size() > r.local_ranks.size()) return bad("more 'rank_us' than 'local_ranks'");
  if (r.num_ranks < 2) return bad("'ranks' must be 2.." + std::to_string(kMaxRanks));
  std::vector<bool> seen(r.num_ranks, false);
  for (Rank x : r.local_ranks) {
    if (x >= r.num_ranks || seen[x]) {
      return bad(
          fmt::format("'local_ranks' holds rank {} twice or beyond {} ranks", x, r.num_ranks));
    }
    seen[x] = true;
  }
  if (!j["verified"].is_boolean()) return bad("'verified' must be true or false");
  r.verified = j["verified"].get<bool>();
  if (j.contains("cct_lower_bound_us") && !j["cct_lower_bound_us"].is_null()) {
    if (!j["cct_lower_bound_us"].is_number()) return bad("'cct_lower_bound_us' must be a number");
    r.cct_lower_bound_us = j["cct_lower_bound_us"].get<double>();
  }
  if (j.contains("cts")) {
    const auto& c = j["cts"];
    if (!c.is_object() || !c.contains("channels") || !c["channels"].is_number_unsigned() ||
        c["channels"].get<uint64_t>() > kMaxCtsChannels || !c.contains("channel_bytes") ||
        !c["channel_bytes"].is_number_unsigned() || !c.contains("priority") ||
        !c["priority"].is_boolean() || !c.contains("waits_us") || !c["waits_us"].is_array() ||
        !c.contains("flights_us") || !c["flights_us"].is_array()) {
      return bad("'cts' must be {channels, channel_bytes, priority, waits_us, flights_us}");
    }
    r.cts_channels = c["channels"].get<uint32_t>();
    r.cts_channel_bytes = c["channel_bytes"].get<uint64_t>();
    r.cts_priority = c["priority"].get<bool>();
    for (const auto& v : c["waits_us"]) {
      if (!v.is_number() || !(v.get<double>() >= 0)) return bad("'cts.waits_us' must hold times");
      r.cts_waits_us.push_back(v.get<double>());
    }
    for (const auto& v : c["flights_us"]) {
      if (!v.is_number() || !(v.get<double>() >= 0)) return bad("'cts.flights_us' must hold times");
      r.cts_flights_us.push_back(v.get<double>());
    }
  }
  if (!j["error"].is_null() && !j["error"].is_string()) return bad("'error' must be null or text");
  if (j["error"].is_string()) {
    r.error = j["error"].get<std::string>();
    if (r.error.empty()) return bad("'error' is empty (null means none)");
  }
  ComputeBandwidths(&r);
  return r;
}

}  // namespace ofan::emu
