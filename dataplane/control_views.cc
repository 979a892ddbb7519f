#include "dataplane/control_views.h"

#include <fmt/format.h>

#include <string>

#include "dataplane/config.h"
#include "dataplane/switch.h"

namespace ofan::dp {

using nlohmann::json;

json EngineJson(const EngineSnapshot& e) {
  if (!e.shared) return {{"kind", "per-switch"}};
  const bool cpu_bound = e.lag_share > kCpuBoundLagShare;
  std::string reason;
  if (cpu_bound) {
    reason = fmt::format(
        "the engine was behind the wall clock for {:.1f}% of the time (limit {:.0f}%), by up to "
        "{:.0f} us ({} passes over {:.0f} us, {} bursts to hosts late)",
        100 * e.lag_share, 100 * kCpuBoundLagShare, e.lag_max_us, e.lag_events, e.lag_threshold_us,
        e.late_tx);
  }
  return {{"kind", "shared"},
          {"now_s", e.now_s},
          {"windows", e.windows},
          {"lag_events", e.lag_events},
          {"late_tx", e.late_tx},
          {"lag_max_us", e.lag_max_us},
          {"lag_threshold_us", e.lag_threshold_us},
          {"lag_share", e.lag_share},
          {"lag_share_limit", kCpuBoundLagShare},
          {"pass_max_us", e.pass_max_us},
          {"wake_late_max_us", e.wake_late_max_us},
          {"host_stamp", e.host_stamp},
          {"host_frames", e.host_frames},
          {"host_stamped", e.host_stamped},
          {"stamp_late", e.stamp_late},
          {"stamp_late_max_us", e.stamp_late_max_us},
          {"cpu_bound", cpu_bound},
          {"reason", reason},
          {"stopped", e.stopped}};
}

json StatusJson(const Snapshot& s) {
  json workers = json::array();
  for (const auto& w : s.workers) {
    workers.push_back({{"worker", w.worker},
                       {"lcore", w.lcore},
                       {"ports", w.ports},
                       {"busy_loops", w.busy_loops},
                       {"idle_loops", w.idle_loops},
                       {"sleeps", w.sleeps},
                       {"sleep_us", w.sleep_us},
                       {"blocking", w.blocking},
                       {"traffic_wakeups", w.traffic_wakeups},
                       {"shaper_waits", w.shaper_waits}});
  }
  return {{"name", s.name},
          {"fabric",
           {{"k", s.k},
            {"levels", s.levels},
            {"switch", s.switch_id},
            {"role", lb::RoleName(s.info.role)},
            {"pod", s.info.pod},
            {"index", s.info.index}}},
          {"policy", lb::PolicyName(s.lb.kind)},
          {"ofan_mode", ReportedOfanMode(s.lb)},
          {"pipe_size", s.pipe_size},
          {"generation", s.generation},
          {"uplinks", s.uplinks},
          {"running", s.running},
          {"uptime_s", s.uptime_s},
          {"workers", workers},
          {"engine", EngineJson(s.engine)},
          {"buffer",
           {{"capacity_bytes", s.buffer.capacity_bytes},
            {"bytes", s.buffer.bytes},
            {"max_bytes", s.buffer.max_bytes},
            {"alarm_pct", s.buffer.alarm_pct},
            {"alarms", s.buffer.alarms},
            {"alarm_active", s.buffer.alarm_active},
            {"alarm_us", s.buffer.alarm_us}}}};
}

json CountersJson(const Snapshot& s) {
  json total = json::object(), drops = json::object();
  uint64_t drop_sum = 0;
  for (size_t i = 0; i < kNumCounters; ++i) {
    const auto ctr = static_cast<Counter>(i);
    total[std::string(CounterName(ctr))] = s.total.v[i];
    if (IsDrop(ctr)) {
      drops[std::string(CounterName(ctr).substr(5))] = s.total.v[i];
      drop_sum += s.total.v[i];
    }
  }
  json per = json::array();
  for (const auto& w : s.workers) {
    json one = json::object();
    for (size_t i = 0; i < kNumCounters; ++i) {
      if (const uint64_t v = w.counters.v[i]; v) one[std::string(kCounterNames[i])] = v;
    }
    per.push_back(one);
  }
  return {{"total", total}, {"drops", drops}, {"drops_total", drop_sum}, {"per_worker", per}};
}

namespace {
// A port's PFC (null when off): its thresholds as an ingress port and what
// it did both ways since the last reset (QueueStats::Pfc).
json PfcJson(const PortSnapshot& p) {
  if (!p.pfc_thresholds) return nullptr;
  const QueueStats::Pfc& f = p.queue.pfc;
  // Emulated times in ms since the engine started (null: never).
  auto ms = [](uint64_t ps) -> json {
    return ps == fabric::kNever ? json(nullptr) : json(static_cast<double>(ps) / 1e9);
  };
  json storm = nullptr;
  if (p.pfc_storm)
    storm = {{"started_ms", ms(p.pfc_storm->started_ps)}, {"until_ms", ms(p.pfc_storm->until_ps)}};
  return {{"xoff_bytes", p.pfc_thresholds->xoff},
          {"xon_bytes", p.pfc_thresholds->xon},
          {"headroom_bytes", p.pfc_thresholds->headroom},
          {"sent", f.sent},
          {"received", f.received},
          {"paused_us", f.paused_us},
          {"xoff_events", f.xoff_events},
          {"headroom_max_bytes", f.headroom_max_bytes},
          {"watchdog",
           {{"fired", f.wd_fired},
            {"restored", f.wd_restored},
            {"active", f.wd_active},
            {"dropped", f.wd_dropped},
            {"action", p.pfc_wd_action},
            {"fired_at_ms", ms(f.wd_fired_at_ps)},
            {"restored_at_ms", ms(f.wd_restored_at_ps)}}},
          {"storm", storm},
          {"held_bytes", f.held_bytes},
          {"held_max_bytes", f.max_bytes},
          {"lossless_drops", f.lossless_drops}};
}

// A host port's reorder stage (null where there is none): QueueStats::Reorder.
json ReorderJson(const PortSnapshot& p) {
  if (!p.queue.reorder) return nullptr;
  const QueueStats::Reorder& r = *p.queue.reorder;
  return {{"held", r.held},
          {"in_order", r.in_order},
          {"timeouts", r.timeouts},
          {"overflow", r.overflow},
          {"table_full", r.table_full},
          {"old", r.old},
          {"bad_length", r.bad_length},
          {"max_bytes", r.max_bytes},
          {"max_frames", r.max_frames},
          {"max_hold_us", r.max_hold_us},
          {"timeout_us", r.timeout_us}};
}
}  // namespace

json PortsJson(const Snapshot& s) {
  json out = json::array();
  for (const PortSnapshot& p : s.ports) {
    json kernel = nullptr;
    if (p.kernel && p.kernel->via == "xdp") {
      // What the trap passed to the kernel, by class, and sent to ofan-dp;
      // what the kernel sends leaves on the veth itself, unseen here.
      json by_class = json::object();
      kernel = {{"name", p.kernel->name},           {"via", "xdp"},
                {"to_kernel", p.kernel->to_kernel}, {"to_kernel_lost", 0},
                {"from_kernel", nullptr},           {"from_kernel_lost", nullptr}};
      if (p.kernel->trap) {
        for (size_t c = 0; c < kTrapClasses; ++c) {
          if (TrapClassToKernel(c)) by_class[TrapClassName(c)] = p.kernel->trap->frames[c];
        }
        kernel["to_dataplane"] = p.kernel->trap->frames[OFAN_TRAP_DATAPLANE];
        kernel["no_socket"] = p.kernel->trap->frames[OFAN_TRAP_NO_SOCKET];
      } else {
        kernel["error"] = p.kernel->error;
      }
      kernel["to_kernel_by_class"] = by_class;
    } else if (p.kernel) {
      kernel = {{"name", p.kernel->name},
                {"via", "tap"},
                {"to_kernel", p.kernel->to_kernel},
                {"to_kernel_lost", p.kernel->to_kernel_lost},
                {"from_kernel", p.kernel->from_kernel},
                {"from_kernel_lost", p.kernel->from_kernel_lost}};
    }
    out.push_back({{"port", p.port},
                   {"dev", p.dev},
                   {"dpdk_port", p.dpdk_port},
                   {"direction", p.up_direction ? "up" : "down"},
                   {"mac", FormatMac(p.mac)},
                   {"neighbor", p.neighbor ? json(FormatMac(*p.neighbor)) : json(nullptr)},
                   {"admin", p.admin_up ? "up" : "down"},
                   {"link", p.link_up ? "up" : "down"},
                   {"wire", p.wire_cut ? "cut" : "ok"},
                   {"rx_packets", p.rx_packets},
                   {"rx_bytes", p.rx_bytes},
                   {"rx_missed", p.rx_missed},
                   {"tx_packets", p.queue.tx_packets},
                   {"tx_bytes", p.queue.tx_bytes},
                   {"kernel", kernel},
                   {"pfc", PfcJson(p)},
                   {"reorder", ReorderJson(p)}});
  }
  return out;
}

json QueuesJson(const Snapshot& s) {
  json out = json::array();
  for (const PortSnapshot& p : s.ports) {
    const QueueStats& q = p.queue;
    out.push_back({{"port", p.port},
                   {"bytes", q.bytes},
                   {"packets", q.packets},
                   {"priority_packets", q.priority_packets},
                   {"max_bytes", q.max_bytes},
                   {"max_packets", q.max_packets},
                   {"avg_bytes", q.avg_bytes},
                   {"avg_packets", q.avg_packets},
                   {"drops_buffer", q.drops_buffer},
                   {"ecn_marked", q.ecn_marked},
                   {"shaper_lag_bytes", q.shaper_lag_bytes},
                   {"paused", q.paused},
                   {"limit_bytes", p.limit_bytes},
                   {"ecn_bytes", p.ecn_bytes},
                   {"pfc", PfcJson(p)},
                   {"reorder", ReorderJson(p)}});
  }
  return out;
}

json PointersJson(const Snapshot& s) {
  json keys = json::array();
  for (const KeySnapshot& k : s.keys) {
    json j{{"key", k.key}, {"dest", k.dest}, {"class", k.ack ? "ack" : "data"}, {"order", k.order}};
    if (k.counter) j["counter"] = *k.counter;
    keys.push_back(j);
  }
  return {{"policy", lb::PolicyName(s.lb.kind)},
          {"ofan_mode", ReportedOfanMode(s.lb)},
          {"uplinks", s.uplinks},
          {"keys", keys}};
}

json CaptureJson(const CaptureStatus& c) {
  return {{"id", c.id},         {"active", c.active},   {"file", c.file},
          {"ports", c.ports},   {"snaplen", c.snaplen}, {"count", c.count},
          {"frames", c.frames}, {"dropped", c.dropped}, {"error", c.error}};
}

json CapturesJson(const std::vector<CaptureStatus>& cs) {
  json a = json::array();
  for (const CaptureStatus& c : cs) a.push_back(CaptureJson(c));
  return {{"captures", std::move(a)}};
}

}  // namespace ofan::dp
