#include "control/ofanctl/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/protocol/counters.h"
#include "common/units.h"

namespace ofan::control {
namespace {

using nlohmann::json;

// A scalar as a table cell: integers exactly, floats with `prec` decimals,
// null as "-", booleans as yes/no.
std::string Cell(const json& j, int prec = 1) {
  if (j.is_null()) return "-";
  if (j.is_boolean()) return j.get<bool>() ? "yes" : "no";
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_unsigned()) return fmt::format("{}", j.get<uint64_t>());
  if (j.is_number_integer()) return fmt::format("{}", j.get<int64_t>());
  if (j.is_number_float()) return fmt::format("{:.{}f}", j.get<double>(), prec);
  return j.dump();
}

std::string Join(const json& list, const char* sep) {
  std::string out;
  for (const json& x : list) {
    if (!out.empty()) out += sep;
    out += Cell(x);
  }
  return out.empty() ? "-" : out;
}

std::string Duration(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return Cell(json(s));
  const auto total = static_cast<uint64_t>(s);
  const uint64_t d = total / 86400, h = total / 3600 % 24, m = total / 60 % 60;
  const double sec = s - static_cast<double>(total - total % 60);
  if (d) return fmt::format("{}d {}h {:02}m {:04.1f}s", d, h, m, sec);
  if (h) return fmt::format("{}h {:02}m {:04.1f}s", h, m, sec);
  if (m) return fmt::format("{}m {:04.1f}s", m, sec);
  return fmt::format("{:.1f}s", s);
}

std::string KeyValues(const std::vector<std::pair<std::string, std::string>>& kv) {
  size_t w = 0;
  for (const auto& [k, v] : kv) w = std::max(w, k.size());
  std::string out;
  for (const auto& [k, v] : kv) out += fmt::format("{:<{}}  {}\n", k, w, v);
  return out;
}

// Counter names in the switch's order (common/protocol/counters.h), then any name
// this ofanctl does not know (a newer switch) in alphabetical order.
std::vector<std::string> CounterOrder(const json& total) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::string_view n : control::kCounterNames) {
    if (total.contains(std::string(n))) {
      out.emplace_back(n);
      seen.emplace(n);
    }
  }
  for (auto it = total.begin(); it != total.end(); ++it) {
    if (!seen.count(it.key())) out.push_back(it.key());
  }
  return out;
}

bool IsZero(const json& v) { return v.is_number() && v.get<double>() == 0; }

}  // namespace

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::string& align) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  auto left = [&](size_t i) { return i < align.size() ? align[i] == 'l' : i == 0; };
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < cells.size() && i < width.size(); ++i) {
      if (i) l += "  ";
      l += left(i) ? fmt::format("{:<{}}", cells[i], width[i])
                   : fmt::format("{:>{}}", cells[i], width[i]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + '\n';
  };
  line(header);
  size_t rule = 0;
  for (size_t i = 0; i < width.size(); ++i) rule += width[i] + (i ? 2 : 0);
  out += std::string(rule, '-') + '\n';
  for (const auto& r : rows) line(r);
  return out;
}

std::string RenderVersion(const json& r) {
  return fmt::format("ofan-dp {}, control protocol v{}\n", Cell(r.at("ofan_dp")),
                     Cell(r.at("protocol")));
}

std::string RenderStatus(const json& s) {
  const json& f = s.at("fabric");
  std::vector<std::pair<std::string, std::string>> kv = {
      {"name", Cell(s.at("name"))},
      {"fabric", fmt::format("k={}, {} levels", Cell(f.at("k")), Cell(f.at("levels")))},
      {"switch", fmt::format("{}: {}, pod {}, index {}", Cell(f.at("switch")), Cell(f.at("role")),
                             Cell(f.at("pod")), Cell(f.at("index")))},
      {"policy", Cell(s.at("policy"))},
      {"ofan_mode", Cell(s.at("ofan_mode"))},
      {"uplinks", Cell(s.at("uplinks"))},
      {"pipe_size", Cell(s.at("pipe_size"))},
      {"generation", Cell(s.at("generation"))},
      {"running", Cell(s.at("running"))},
      {"uptime", Duration(s.at("uptime_s").get<double>())},
      {"workers", fmt::format("{}", s.at("workers").size())},
  };
  // The buffer and its alarm (an older switch has no "buffer").
  if (s.contains("buffer")) {
    const json& b = s.at("buffer");
    const uint64_t cap = b.at("capacity_bytes").get<uint64_t>();
    const auto pct = [&](const char* k) {
      return cap ? fmt::format(" ({:.0f} %)",
                               100.0 * b.at(k).get<double>() / static_cast<double>(cap))
                 : std::string();
    };
    kv.emplace_back("buffer",
                    cap ? fmt::format("{} of {} B held{}, at most {}{}", Cell(b.at("bytes")), cap,
                                      pct("bytes"), Cell(b.at("max_bytes")), pct("max_bytes"))
                        : fmt::format("{} B held, unlimited (no alarm)", Cell(b.at("bytes"))));
    kv.emplace_back(
        "buffer alarm",
        fmt::format("{} above {} %: raised {} times, up {:.1f} ms in all",
                    b.at("alarm_active").get<bool>() ? "ON" : "off", Cell(b.at("alarm_pct")),
                    Cell(b.at("alarms")), b.at("alarm_us").get<double>() / 1000));
  }
  std::string out = KeyValues(kv);
  if (!s.at("workers").empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const json& w : s.at("workers")) {
      // sleeps and sleep_us came later: a switch without them shows "-".
      auto opt = [&](const char* k) { return w.contains(k) ? Cell(w.at(k)) : std::string("-"); };
      rows.push_back({Cell(w.at("worker")), Cell(w.at("lcore")), Join(w.at("ports"), ","),
                      Cell(w.at("busy_loops")), Cell(w.at("idle_loops")), opt("sleeps"),
                      opt("sleep_us"), opt("blocking")});
    }
    out += "\n" + FormatTable({"worker", "lcore", "ports", "busy_loops", "idle_loops", "sleeps",
                               "sleep_us", "blocking"},
                              rows, "rrlrrrrl");
  }
  return out;
}

std::string RenderCounters(const json& c, bool all) {
  const json& total = c.at("total");
  const json& drops = c.at("drops");
  const json& per = c.at("per_worker");
  // Per-worker columns only when there is more than one worker.
  const bool split = per.is_array() && per.size() > 1;
  std::vector<std::string> header{"counter", "total"};
  if (split) {
    for (size_t w = 0; w < per.size(); ++w) header.push_back(fmt::format("w{}", w));
  }
  auto row = [&](const std::string& label, const std::string& name) {
    std::vector<std::string> r{label, Cell(total.at(name))};
    if (split) {
      for (const json& w : per) r.push_back(w.contains(name) ? Cell(w.at(name)) : "0");
    }
    return r;
  };
  std::vector<std::vector<std::string>> rows, drop_rows;
  size_t hidden = 0, hidden_drops = 0;
  for (const std::string& name : CounterOrder(total)) {
    const bool is_drop = name.rfind("drop_", 0) == 0 && drops.contains(name.substr(5));
    if (!all && IsZero(total.at(name))) {
      ++(is_drop ? hidden_drops : hidden);
      continue;
    }
    if (is_drop) {
      drop_rows.push_back(row(name.substr(5), name));
    } else {
      rows.push_back(row(name, name));
    }
  }
  std::string out;
  if (rows.empty()) {
    out += "counters: all zero\n";
  } else {
    out += FormatTable(header, rows);
  }
  if (hidden) out += fmt::format("({} zero counters not shown; --all lists them)\n", hidden);
  out += fmt::format("\ndrops: {} in total\n", Cell(c.at("drops_total")));
  if (!drop_rows.empty()) {
    header[0] = "reason";
    out += FormatTable(header, drop_rows);
  }
  if (hidden_drops && !drop_rows.empty()) {
    out += fmt::format("({} drop reasons at zero not shown; --all lists them)\n", hidden_drops);
  }
  return out;
}

namespace {
// A port's PFC watchdog in a cell: its action, how often it fired and
// restored, STORM while it is on, what its drop action discarded.
std::string Watchdog(const json& w) {
  if (!w.is_object()) return "-";
  std::string s =
      fmt::format("{} {}/{}", Cell(w.at("action")), Cell(w.at("fired")), Cell(w.at("restored")));
  if (w.value("active", false)) s += " STORM";
  if (w.value("dropped", 0) > 0) s += fmt::format(" dropped {}", Cell(w.at("dropped")));
  return s;
}
}  // namespace

std::string RenderPorts(const json& ports) {
  if (ports.empty()) return "no ports\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& p : ports) {
    // "wire" came with set_port's wire: a switch before it has none.
    const std::string wire = p.contains("wire") ? Cell(p.at("wire")) : "-";
    rows.push_back({Cell(p.at("port")), Cell(p.at("direction")), Cell(p.at("admin")),
                    Cell(p.at("link")), wire, Cell(p.at("mac")), Cell(p.at("neighbor")),
                    Cell(p.at("rx_packets")), Cell(p.at("rx_bytes")), Cell(p.at("tx_packets")),
                    Cell(p.at("tx_bytes")), Cell(p.at("dpdk_port")), Cell(p.at("dev"))});
  }
  std::string out = FormatTable({"port", "dir", "admin", "link", "wire", "mac", "neighbor",
                                 "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "dpdk", "dev"},
                                rows, "rllllllrrrrrl");
  // PFC (a switch with it on): each port's thresholds as an ingress port,
  // then its counts since the switch started (headroom_max: since the last
  // reset-queues).
  std::vector<std::vector<std::string>> pfc_rows;
  for (const json& p : ports) {
    const json f = p.value("pfc", json());
    if (!f.is_object()) continue;
    pfc_rows.push_back({Cell(p.at("port")), Cell(f.at("xoff_bytes")), Cell(f.at("xon_bytes")),
                        Cell(f.at("headroom_bytes")), Cell(f.at("sent")), Cell(f.at("received")),
                        Cell(f.at("paused_us"), 1), Cell(f.at("xoff_events")),
                        Cell(f.at("headroom_max_bytes")), Cell(f.at("held_bytes")),
                        Cell(f.at("lossless_drops")), Watchdog(f.value("watchdog", json()))});
  }
  if (!pfc_rows.empty()) {
    out += "\nPFC (lossless priority; sent/received: pause frames, XOFF and XON):\n";
    out += FormatTable({"port", "xoff", "xon", "headroom", "sent", "received", "paused_us",
                        "xoff_events", "headroom_max", "held", "lossless_drops", "watchdog"},
                       pfc_rows, "rrrrrrrrrrrl");
  }
  // The reorder stage (an edge's host ports with reorder on): its counts
  // since the switch started, its maxima since the last reset-queues.
  std::vector<std::vector<std::string>> ro_rows;
  for (const json& p : ports) {
    const json r = p.value("reorder", json());
    if (!r.is_object()) continue;
    ro_rows.push_back({Cell(p.at("port")), Cell(r.at("held")), Cell(r.at("in_order")),
                       Cell(r.at("timeouts")), Cell(r.at("overflow")), Cell(r.at("table_full")),
                       Cell(r.at("old")), Cell(r.at("bad_length")), Cell(r.at("max_bytes")),
                       Cell(r.at("max_frames")), Cell(r.at("max_hold_us"), 1),
                       Cell(r.value("timeout_us", json()))});
  }
  if (!ro_rows.empty()) {
    out += "\nreorder (RoCE data to the host in PSN order per QP; held: frames that waited):\n";
    out += FormatTable({"port", "held", "in_order", "timeouts", "overflow", "table_full", "old",
                        "bad_length", "max_bytes", "max_frames", "max_hold_us", "timeout_us"},
                       ro_rows, "rrrrrrrrrrrr");
  }
  // The ports' kernel interfaces (the switch's control plane): what went where.
  for (const json& p : ports) {
    const json k = p.value("kernel", json());
    if (!k.is_object()) continue;
    const std::string head = fmt::format("port {} kernel {} ({}): ", Cell(p.at("port")),
                                         Cell(k.at("name")), k.value("via", std::string("tap")));
    if (k.contains("error")) {
      out += head + "counters unreadable: " + Cell(k.at("error")) + "\n";
    } else if (k.value("via", "") == "xdp") {
      std::string classes;
      const json by_class = k.value("to_kernel_by_class", json::object());
      for (const auto& [name, n] : by_class.items()) {
        if (!classes.empty()) classes += ", ";
        classes += fmt::format("{} {}", name, Cell(n));
      }
      out += head + fmt::format("to kernel {} ({}), to ofan-dp {}, no socket {}\n",
                                Cell(k.at("to_kernel")), classes, Cell(k.at("to_dataplane")),
                                Cell(k.at("no_socket")));
    } else {
      out += head + fmt::format("to kernel {} (lost {}), from kernel {} (lost {})\n",
                                Cell(k.at("to_kernel")), Cell(k.at("to_kernel_lost")),
                                Cell(k.at("from_kernel")), Cell(k.at("from_kernel_lost")));
    }
  }
  return out;
}

std::string RenderQueues(const json& queues) {
  if (queues.empty()) return "no ports\n";
  std::set<std::string> limits, ecns;
  for (const json& q : queues) {
    limits.insert(Cell(q.at("limit_bytes")));
    ecns.insert(Cell(q.at("ecn_bytes")));
  }
  // Buffer limits and ECN thresholds: a footer when every port has the same,
  // columns otherwise.
  const bool uniform = limits.size() == 1 && ecns.size() == 1;
  std::vector<std::string> header{"port",      "bytes",      "pkts",      "prio",
                                  "max_bytes", "max_pkts",   "avg_bytes", "avg_pkts",
                                  "drops",     "ecn_marked", "paused"};
  if (!uniform) {
    header.push_back("limit");
    header.push_back("ecn_at");
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& q : queues) {
    std::vector<std::string> r{Cell(q.at("port")),         Cell(q.at("bytes")),
                               Cell(q.at("packets")),      Cell(q.at("priority_packets")),
                               Cell(q.at("max_bytes")),    Cell(q.at("max_packets")),
                               Cell(q.at("avg_bytes"), 1), Cell(q.at("avg_packets"), 2),
                               Cell(q.at("drops_buffer")), Cell(q.at("ecn_marked")),
                               Cell(q.at("paused"))};
    if (!uniform) {
      r.push_back(Cell(q.at("limit_bytes")));
      r.push_back(Cell(q.at("ecn_bytes")));
    }
    rows.push_back(r);
  }
  std::string out = FormatTable(header, rows, std::string(header.size(), 'r'));
  if (uniform) {
    const json& q = queues.front();
    const uint64_t limit = q.at("limit_bytes").get<uint64_t>();
    const uint64_t ecn = q.at("ecn_bytes").get<uint64_t>();
    out += fmt::format("buffer {} B ({}) per port; ECN {}\n", limit, FormatSize(limit),
                       ecn ? fmt::format("above {} B ({})", ecn, FormatSize(ecn)) : "off");
  }
  out +=
      "bytes/pkts: now; prio: of pkts, in the strict-priority queue; max/avg: since the last "
      "reset-queues\n";
  return out;
}

std::string RenderPointers(const json& p, std::optional<uint32_t> only_key) {
  const json& keys = p.at("keys");
  size_t data = 0;
  for (const json& k : keys) data += k.at("class") == "data";
  std::string out = fmt::format("policy {}, ofan_mode {}, {} uplinks, {} keys ({} data, {} ack)\n",
                                Cell(p.at("policy")), Cell(p.at("ofan_mode")),
                                Cell(p.at("uplinks")), keys.size(), data, keys.size() - data);
  if (keys.empty()) return out;
  bool counter = false;
  for (const json& k : keys) counter |= k.contains("counter");
  std::vector<std::string> header{"key", "dest", "class", "order"};
  if (counter) header.push_back("counter");
  std::vector<std::vector<std::string>> rows;
  for (const json& k : keys) {
    if (only_key && k.at("key") != *only_key) continue;
    std::vector<std::string> r{Cell(k.at("key")), Cell(k.at("dest")), Cell(k.at("class")),
                               Join(k.at("order"), " ")};
    if (counter) r.push_back(k.contains("counter") ? Cell(k.at("counter")) : "-");
    rows.push_back(r);
  }
  return out + "\n" + FormatTable(header, rows, "rrllr");
}

std::string RenderPolicyLine(const json& s) {
  return fmt::format("policy {}, ofan_mode {}, generation {}\n", Cell(s.at("policy")),
                     Cell(s.at("ofan_mode")), Cell(s.at("generation")));
}

std::string RenderPortLine(const json& ports, uint32_t port) {
  for (const json& p : ports) {
    if (p.at("port") == port) {
      return fmt::format("port {}: admin {}, link {}{}\n", port, Cell(p.at("admin")),
                         Cell(p.at("link")),
                         p.contains("wire") ? ", wire " + Cell(p.at("wire")) : "");
    }
  }
  return fmt::format("port {}: done\n", port);
}

namespace {
std::string CaptureLine(const json& c) {
  std::string ports;
  for (const json& p : c.at("ports")) {
    if (!ports.empty()) ports += ',';
    ports += p.dump();
  }
  std::string out = fmt::format(
      "capture {} {}: ports {} -> {}, {} frames{}, {} dropped (ring full), snaplen {}\n",
      c.at("id").get<uint64_t>(), c.at("active").get<bool>() ? "running" : "ended",
      ports.empty() ? "-" : ports, c.at("file").get<std::string>(), c.at("frames").get<uint64_t>(),
      c.at("count").get<uint64_t>() ? fmt::format(" of {}", c.at("count").get<uint64_t>()) : "",
      c.at("dropped").get<uint64_t>(), c.at("snaplen").get<uint64_t>());
  if (!c.at("error").get<std::string>().empty())
    out += fmt::format("  error: {}\n", c.at("error").get<std::string>());
  return out;
}
}  // namespace

std::string RenderCapture(const json& c) {
  if (!c.contains("captures")) return CaptureLine(c);
  if (c.at("captures").empty()) return "no captures\n";
  std::string out;
  for (const json& one : c.at("captures")) out += CaptureLine(one);
  return out;
}

// The agent's status is its own (control/agent/agent_cycle.cc): read with
// defaults, since an agent of another version may lack a member.
std::string RenderAgent(const json& a) {
  const json& r = a.at("report");
  if (r.is_null()) return "no agent has reported to this switch\n";
  const auto str = [](const json& o, const char* k) {
    return o.is_object() && o.contains(k) ? Cell(o.at(k)) : std::string("-");
  };
  const json id = r.value("identity", json::object());
  std::string out = fmt::format(
      "agent of {} (cycle {}, reported {} ms ago): converged {}; the neighbours place it as "
      "{}\n",
      str(r, "switch"), str(r, "cycle"), Cell(a.at("age_ms")),
      r.value("converged", false) ? "yes" : "no", str(id, "switch"));
  const json masks = r.value("masks", json::object());
  out += fmt::format("masks: {}{}\n", str(masks, "action"),
                     masks.contains("reason") ? " (" + str(masks, "reason") + ")" : "");
  // One row per port: what LLDP shows, and the BGP session and BFD peer on it.
  std::map<std::string, json> bgp, bfd;
  for (const json& b : r.value("bgp", json::array())) bgp[b.value("interface", "")] = b;
  for (const json& b : r.value("bfd", json::array())) bfd[b.value("interface", "")] = b;
  std::vector<std::vector<std::string>> rows;
  for (const json& p : r.value("ports", json::array())) {
    std::string seen;
    for (const json& n : p.value("neighbors", json::array())) {
      if (!seen.empty()) seen += ", ";
      seen += str(n, "chassis") + " " + str(n, "port");
    }
    const std::string ifname = p.value("ifname", "");
    const json& b = bgp.count(ifname) ? bgp[ifname] : json();
    rows.push_back({ifname, str(p, "status"), str(p, "expected"), seen.empty() ? "-" : seen,
                    str(b, "state"), str(b, "prefixes_received"),
                    bfd.count(ifname) ? str(bfd[ifname], "status") : "-"});
  }
  out +=
      FormatTable({"port", "lldp", "expected", "neighbour", "bgp", "pfx", "bfd"}, rows, "lllllrl");
  // One row per key: the kernel route its mask came from, and the mask.
  const json computed = masks.value("computed", json::array());
  std::vector<std::vector<std::string>> route_rows;
  for (const json& rt : r.value("routes", json::array())) {
    std::string hops;
    for (const json& h : rt.value("nexthops", json::array())) {
      if (!hops.empty()) hops += ' ';
      hops += Cell(h);
    }
    const size_t key = rt.value("key", size_t{0});
    route_rows.push_back(
        {str(rt, "key"), str(rt, "prefix"),
         rt.value("unicast", true) ? str(rt, "protocol") : "unreachable", hops.empty() ? "-" : hops,
         key < computed.size() ? fmt::format("{:#x}", computed[key].get<uint64_t>()) : "-"});
  }
  if (!route_rows.empty()) {
    out += FormatTable({"key", "route", "from", "next hops", "mask"}, route_rows, "rllll");
  }
  for (const json& m : r.value("miswires", json::array()))
    out += fmt::format("miswire: port {}: {}\n", str(m, "port"), str(m, "detail"));
  for (const json& e : r.value("errors", json::array())) out += "error: " + Cell(e) + "\n";
  return out;
}

std::string RenderStatusFabric(const json& switches) {
  std::vector<std::vector<std::string>> rows;
  std::string errors;  // after the table: a long message would widen a column
  for (const json& one : switches) {
    if (!one.at("ok").get<bool>()) {
      errors += fmt::format("{}: error: {}\n", Cell(one.at("name")), Cell(one.at("error")));
      continue;
    }
    const json& s = one.at("result");
    const json& f = s.at("fabric");
    rows.push_back({Cell(s.at("name")), Cell(f.at("role")), Cell(f.at("pod")), Cell(s.at("policy")),
                    Cell(s.at("generation")), Cell(s.at("running")),
                    Duration(s.at("uptime_s").get<double>())});
  }
  return FormatTable({"switch", "role", "pod", "policy", "generation", "running", "uptime"}, rows,
                     "lllllll") +
         errors;
}

std::string RenderAgentFabric(const json& switches) {
  std::vector<std::vector<std::string>> rows;
  std::string errors;
  for (const json& one : switches) {
    const std::string name = Cell(one.at("name"));
    if (!one.at("ok").get<bool>()) {
      errors += fmt::format("{}: error: {}\n", name, Cell(one.at("error")));
      continue;
    }
    const json& a = one.at("result");
    const json& r = a.at("report");
    if (r.is_null()) {
      errors += fmt::format("{}: no agent has reported to this switch\n", name);
      continue;
    }
    int ports = 0, lldp_ok = 0, miswired = 0, sessions = 0, established = 0, bfd = 0, bfd_up = 0;
    uint64_t pfx = 0;
    for (const json& p : r.value("ports", json::array())) {
      // Hosts speak no LLDP here: the switch ports are what LLDP must confirm.
      if (p.value("faces", "switch") == "host") continue;
      ++ports;
      const std::string st = p.value("status", "");
      lldp_ok += st == "ok";
      miswired += st == "miswired" || st == "unknown-chassis";
    }
    for (const json& b : r.value("bgp", json::array())) {
      ++sessions;
      if (b.value("state", "") == "Established") {
        ++established;
        pfx += b.value("prefixes_received", uint64_t{0});
      }
    }
    for (const json& b : r.value("bfd", json::array())) {
      ++bfd;
      bfd_up += b.value("status", "") == "up";
    }
    const json masks = r.value("masks", json::object());
    rows.push_back({name, Cell(a.at("age_ms")), r.value("converged", false) ? "yes" : "no",
                    fmt::format("{}/{}", lldp_ok, ports), fmt::format("{}", miswired),
                    fmt::format("{}/{} ({} pfx)", established, sessions, pfx),
                    fmt::format("{}/{}", bfd_up, bfd), masks.value("action", std::string("-")),
                    fmt::format("{}", r.value("errors", json::array()).size())});
  }
  return FormatTable({"switch", "age_ms", "converged", "lldp ok", "miswired", "bgp established",
                      "bfd up", "masks", "errors"},
                     rows, "lrllrllll") +
         errors;
}

}  // namespace ofan::control
