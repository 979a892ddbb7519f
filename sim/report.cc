#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace ofan::sim {

using nlohmann::json;

json ConfigJson(const SimConfig& c) {
  json j{{"k", c.k},
         {"levels", c.levels},
         {"lb", lb::PolicyName(c.policy.kind)},
         {"pipe_size", c.policy.pipe_size},
         {"glb_period_us", static_cast<double>(c.policy.glb_period_ps) * 1e-6},
         {"host", HostSchemeName(c.host)},
         {"workload", WorkloadName(c.workload)},
         {"msg_bytes", c.msg_bytes},
         {"msg", FormatSize(c.msg_bytes)},
         {"link_gbps", c.link_gbps},
         {"latency_us", c.latency_us},
         {"payload", c.payload},
         {"header", c.header},
         {"ack_bytes", c.ack_bytes},
         {"gap_bytes", c.gap_bytes},
         {"load", c.load},
         {"buffer_bytes", c.buffer_bytes},
         {"ecn_bytes", c.ecn_bytes},
         {"cca", CcaName(c.cca)},
         {"init_window_bdps", c.init_window_bdps},
         {"fail_prob", c.fail_prob}};
  if (c.mix.mixed()) {  // absent otherwise: single-policy reports stay as they were
    j["lb_placement"] = PlacementName(c.mix.placement);
    if (c.mix.placement == Placement::kTiers) {
      json tiers = json::object();
      for (size_t i = 0; i < kTierNames.size(); ++i) {
        if (c.mix.has_tier[i]) tiers[std::string(kTierNames[i])] = c.mix.tier_name[i];
      }
      j["lb_tiers"] = tiers;
    } else {
      j["lb_rest"] = c.mix.rest_name;
    }
  }
  if (c.workload == WorkloadKind::kMoe) {
    j["moe_matrix"] = c.moe_matrix_file.empty() ? "generated" : c.moe_matrix_file;
    j["moe_eplb"] = c.moe_eplb;
    j["moe_scale"] = c.moe_scale;
  }
  if (c.workload == WorkloadKind::kFsdp) {
    j["model"] = c.fsdp_model;
    j["fsdp_layers"] = c.fsdp_layers;
    j["fsdp_phases"] = c.fsdp_phases;
  }
  if (c.workload == WorkloadKind::kMoe || c.workload == WorkloadKind::kFsdp) {
    j["server_gpus"] = c.server_gpus;
  }
  if (c.workload == WorkloadKind::kIncast) {
    j["incast_senders"] = c.incast_senders;
    j["victim"] = c.incast_victim;
  }
  if (c.reorder) {  // absent otherwise, as the mix's keys
    j["reorder"] = {{"buffer_bytes", c.reorder_bytes}, {"timeout_us", c.ReorderTimeoutUs()}};
  }
  if (c.receiver != Receiver::kOoo) j["receiver"] = ReceiverName(c.receiver);
  if (c.pfc) {  // absent otherwise, as the mix's keys
    j["pfc"] = {{"quanta", c.pfc_quanta},
                {"response_quanta", c.pfc_response_quanta},
                {"watchdog",
                 {{"detect_ms", c.pfcwd_detect_ms},
                  {"restore_ms", c.pfcwd_restore_ms},
                  {"action", fabric::PfcWdActionName(c.pfcwd_action)}}}};
  }
  return j;
}

json ResultJson(const SimResult& r) {
  json stages = json::object();
  for (const StageStats& s : r.stages) {
    if (s.queues == 0) continue;
    stages[s.name] = {{"queues", s.queues}, {"max_pkts", s.max_pkts}, {"avg_pkts", s.avg_pkts}};
    if (r.pfc.on) {
      stages[s.name]["pause_frames"] = s.pause_frames;
      stages[s.name]["paused_us"] = s.paused_us;
    }
  }
  json j{{"cct_us", r.cct_us},
         {"cct_lower_bound_us", r.cct_lower_bound_us},
         {"cct_lower_bound_kind", r.lower_bound_kind},
         {"cct_inflation", r.cct_inflation},
         {"queue_max_pkts", r.queue_max_pkts},
         {"queue_avg_pkts", r.queue_avg_pkts},
         {"stages", stages},
         {"utilization", r.utilization},
         {"rho", r.rho},
         {"events", r.events},
         {"wall_s", r.wall_s},
         {"hosts", r.hosts},
         {"flows", r.flows},
         {"flows_incomplete", r.flows_incomplete},
         {"data_packets", r.data_packets},
         {"ack_packets", r.ack_packets},
         {"data_received", r.data_received},
         {"acks_received", r.acks_received},
         {"misdelivered", r.misdelivered},
         {"ecn_marks", r.ecn_marks},
         {"drops",
          {{"no_route", r.drops_no_route},
           {"link_down", r.drops_link_down},
           {"buffer", r.drops_buffer}}},
         {"failed_links", r.failed_links},
         {"peak_packets_in_flight", r.peak_packets_in_flight},
         {"retransmits", r.retransmits},
         {"timeouts", r.timeouts},
         {"duplicates", r.duplicates},
         {"remote_updates", r.remote_updates},
         {"workload_info",
          {{"note", r.workload.note},
           {"mean_sent_bytes", r.workload.mean_sent_bytes},
           {"busiest_ratio", r.workload.busiest_ratio},
           {"local_bytes", r.workload.local_bytes}}}};
  if (r.reorder.on) {  // ofan-emu's names: status --json per port, run rows
    const ReorderStats& ro = r.reorder;
    j["reorder"] = {{"held", ro.held},
                    {"in_order", ro.in_order},
                    {"timeouts", ro.timeouts},
                    {"overflow", ro.overflow},
                    {"table_full", ro.table_full},
                    {"old", ro.old},
                    {"max_bytes", ro.max_bytes},
                    {"max_frames", ro.max_frames},
                    {"max_hold_us", ro.max_hold_us},
                    {"mean_max_bytes", ro.mean_max_bytes},
                    {"ports", ro.ports}};
    j["reorder_max_bytes"] = ro.max_bytes;
    j["reorder_max_hold_us"] = ro.max_hold_us;
    j["reorder_timeouts"] = ro.timeouts;
    j["reorder_held"] = ro.held;
  }
  if (r.gbn) {
    j["out_of_seq"] = r.out_of_seq;
    j["naks"] = r.naks;
  }
  if (r.pfc.on) {  // ofan-emu run's names for the same counts
    const PfcStats& p = r.pfc;
    j["pfc_pause_frames"] = p.pause_frames;
    j["pfc_paused_us"] = p.paused_us;
    j["lossless_drops"] = p.lossless_drops;
    j["pfc"] = {{"xoff_events", p.xoff_events},
                {"headroom_max_bytes", p.headroom_max_bytes},
                {"host_pause_frames", p.host_pause_frames},
                {"host_paused_us", p.host_paused_us},
                {"xoff_bytes", p.xoff_bytes},
                {"xon_bytes", p.xon_bytes},
                {"headroom_bytes", p.headroom_bytes},
                {"frames_lost", p.frames_lost},
                {"watchdog",
                 {{"fired", p.watchdog_fired},
                  {"restored", p.watchdog_restored},
                  {"dropped", p.watchdog_dropped}}}};
  }
  return j;
}

namespace {

// Mean of numeric leaves of several objects of the same shape.
json MeanOf(const std::vector<json>& xs) {
  const json& first = xs.front();
  if (xs.size() == 1) return first;
  if (first.is_object()) {
    json out = json::object();
    for (auto it = first.begin(); it != first.end(); ++it) {
      std::vector<json> col;
      col.reserve(xs.size());
      for (const json& x : xs) col.push_back(x.at(it.key()));
      out[it.key()] = MeanOf(col);
    }
    return out;
  }
  if (first.is_number()) {
    double s = 0;
    for (const json& x : xs) s += x.get<double>();
    return s / static_cast<double>(xs.size());
  }
  return first;
}

double Sem(const std::vector<json>& xs, const char* key) {
  const size_t n = xs.size();
  if (n < 2) return 0.0;
  double mean = 0;
  for (const json& x : xs) mean += x.at(key).get<double>();
  mean /= static_cast<double>(n);
  double var = 0;
  for (const json& x : xs) var += std::pow(x.at(key).get<double>() - mean, 2);
  var /= static_cast<double>(n - 1);
  return std::sqrt(var / static_cast<double>(n));
}

}  // namespace

json AggregateJson(const SimConfig& c, const std::vector<uint64_t>& seeds,
                   const std::vector<SimResult>& runs) {
  std::vector<json> rs;
  rs.reserve(runs.size());
  for (const SimResult& r : runs) rs.push_back(ResultJson(r));
  json out = MeanOf(rs);
  for (const char* key :
       {"cct_us", "cct_inflation", "queue_max_pkts", "queue_avg_pkts", "utilization"}) {
    out[fmt::format("{}_sem", key)] = Sem(rs, key);
  }
  double wall = 0;
  uint64_t events = 0;
  for (const SimResult& r : runs) wall += r.wall_s, events += r.events;
  out["wall_s"] = wall;  // total over seeds
  out["events"] = events;
  out["seeds"] = seeds;
  out["config"] = ConfigJson(c);
  if (runs.size() > 1) {
    json per = json::array();
    for (size_t i = 0; i < rs.size(); ++i) {
      json r = rs[i];
      r["seed"] = seeds[i];
      per.push_back(r);
    }
    out["runs"] = per;
  }
  return out;
}

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      out += i == 0 ? fmt::format("{:<{}}", cells[i], width[i])
                    : fmt::format("  {:>{}}", cells[i], width[i]);
    }
    out += '\n';
  };
  line(header);
  std::string rule;
  for (size_t i = 0; i < width.size(); ++i) rule += std::string(width[i] + (i ? 2 : 0), '-');
  out += rule + '\n';
  for (const auto& r : rows) line(r);
  return out;
}

std::string SummaryTable(const json& a) {
  auto num = [&](const json& j, const char* key, int prec) {
    return fmt::format("{:.{}f}", j.at(key).get<double>(), prec);
  };
  const json& cfg = a.at("config");
  std::string out = fmt::format(
      "ofan-sim: {} {} lb={} host={} k={} levels={} ({} hosts), {} seed(s), {} events, {:.2f} "
      "s\n\n",
      cfg.at("workload").get<std::string>(),
      cfg.contains("model") || cfg.contains("moe_scale")
          ? std::string("traffic")
          : cfg.at("msg").get<std::string>() + " messages",
      cfg.at("lb").get<std::string>(), cfg.at("host").get<std::string>(), cfg.at("k").get<int>(),
      cfg.at("levels").get<int>(), a.at("hosts").get<double>(), a.at("seeds").size(),
      a.at("events").get<uint64_t>(), a.at("wall_s").get<double>());
  std::vector<std::vector<std::string>> rows = {
      {"CCT (us)", num(a, "cct_us", 4)},
      {fmt::format("CCT lower bound (us, {})", a.at("cct_lower_bound_kind").get<std::string>()),
       num(a, "cct_lower_bound_us", 4)},
      {"CCT inflation (%)", fmt::format("{:.3f}", 100 * a.at("cct_inflation").get<double>())},
      {"max queue (pkts)", num(a, "queue_max_pkts", 2)},
      {"avg queue (pkts)", num(a, "queue_avg_pkts", 4)},
      {"utilization", num(a, "utilization", 4)},
      {"rho", num(a, "rho", 4)},
  };
  out += FormatTable({"metric", "value"}, rows);
  if (const auto& note = a.at("workload_info").at("note").get_ref<const std::string&>();
      !note.empty()) {
    out += "\nworkload: " + note + "\n";
  }
  out += fmt::format("flows: {} ({} incomplete)\n", a.at("flows").get<double>(),
                     a.at("flows_incomplete").get<double>());
  const bool pfc = a.contains("pfc");
  std::vector<std::vector<std::string>> st;
  for (auto it = a.at("stages").begin(); it != a.at("stages").end(); ++it) {
    st.push_back({it.key(), num(*it, "max_pkts", 2), num(*it, "avg_pkts", 4),
                  fmt::format("{}", it->at("queues").get<double>())});
    if (pfc) {
      st.back().push_back(fmt::format("{:.0f}", it->at("pause_frames").get<double>()));
      st.back().push_back(num(*it, "paused_us", 1));
    }
  }
  out += "\n";
  std::vector<std::string> head = {"stage", "max (pkts)", "avg (pkts)", "queues"};
  if (pfc) head.insert(head.end(), {"pause frames rx", "paused (us)"});
  out += FormatTable(head, st);
  if (pfc) {
    const json& p = a.at("pfc");
    out += fmt::format(
        "PFC: {:.0f} pause frames sent by switches ({:.0f} XOFF events), {:.1f} us paused (switch "
        "ports summed), hosts {:.0f} pause frames / {:.1f} us; {:.0f} lossless drops; headroom "
        "max {:.0f} of {:.0f} B; watchdog fired {:.0f}\n",
        a.at("pfc_pause_frames").get<double>(), p.at("xoff_events").get<double>(),
        a.at("pfc_paused_us").get<double>(), p.at("host_pause_frames").get<double>(),
        p.at("host_paused_us").get<double>(), a.at("lossless_drops").get<double>(),
        p.at("headroom_max_bytes").get<double>(), p.at("headroom_bytes").get<double>(),
        p.at("watchdog").at("fired").get<double>());
  }
  if (a.contains("reorder")) {
    const json& ro = a.at("reorder");
    out += fmt::format(
        "reorder (edges' host ports): {:.0f} frames held, {:.0f} released by timeout, {:.0f} "
        "passed (buffer full), {:.0f} (table full); max {:.0f} B / {:.0f} frames held on a "
        "port (mean of the ports' max {:.0f} B), longest wait {:.1f} us\n",
        ro.at("held").get<double>(), ro.at("timeouts").get<double>(),
        ro.at("overflow").get<double>(), ro.at("table_full").get<double>(),
        ro.at("max_bytes").get<double>(), ro.at("max_frames").get<double>(),
        ro.at("mean_max_bytes").get<double>(), ro.at("max_hold_us").get<double>());
  }
  if (a.contains("out_of_seq")) {
    out += fmt::format(
        "go-back-N receivers: {:.0f} out-of-sequence packets dropped, {:.0f} NAKs; senders "
        "{:.0f} packets sent again, {:.0f} timeouts; {:.0f} duplicates\n",
        a.at("out_of_seq").get<double>(), a.at("naks").get<double>(),
        a.at("retransmits").get<double>(), a.at("timeouts").get<double>(),
        a.at("duplicates").get<double>());
  }
  if (cfg.at("cca").get<std::string>() != "none") {
    out += fmt::format("transport: {}, {} retransmits, {} timeouts, {} duplicates\n",
                       cfg.at("cca").get<std::string>(), a.at("retransmits").get<double>(),
                       a.at("timeouts").get<double>(), a.at("duplicates").get<double>());
  }
  const json& d = a.at("drops");
  const double drops = d.at("no_route").get<double>() + d.at("link_down").get<double>() +
                       d.at("buffer").get<double>();
  if (drops > 0 || a.at("flows_incomplete").get<double>() > 0) {
    out += fmt::format(
        "\nwarning: {} packets dropped ({} no route, {} link down, {} buffer); {} flows "
        "incomplete\n",
        drops, d.at("no_route").get<double>(), d.at("link_down").get<double>(),
        d.at("buffer").get<double>(), a.at("flows_incomplete").get<double>());
  }
  out += "\nQueues are in data-packet equivalents (bytes / (payload + header)).\n";
  return out;
}

}  // namespace ofan::sim
