#include "dataplane/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/units.h"

namespace ofan::dp {
namespace {

template <class T>
Result<T> Get(const YAML::Node& n, const std::string& where) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    return InvalidArgument(fmt::format("{}: expected {} (line {})", where,
                                       std::is_same_v<T, bool>   ? "true/false"
                                       : std::is_arithmetic_v<T> ? "a number"
                                                                 : "a string",
                                       n.Mark().line + 1));
  }
}

Result<uint64_t> GetSize(const YAML::Node& n, const std::string& where) {
  auto s = Get<std::string>(n, where);
  if (!s) return s.error();
  auto v = ParseSize(*s);
  if (!v) return InvalidArgument(fmt::format("{}: {}", where, v.error().message));
  return *v;
}

// "section.key", or "key" at the top level.
std::string Path(const std::string& section, const char* key) {
  return section.empty() ? std::string(key) : section + "." + key;
}

// section.key into out when the key is present: for the fields that need
// no check beyond their type (the others keep their own code).
template <class T>
Status ReadIf(const YAML::Node& sec, const std::string& section, const char* key, T& out) {
  if (!sec[key]) return {};
  auto v = Get<T>(sec[key], Path(section, key));
  if (!v) return v.error();
  out = *v;
  return {};
}

// The same for a size ("64KiB", "1MB", a plain number of bytes).
Status ReadSizeIf(const YAML::Node& sec, const std::string& section, const char* key,
                  uint64_t& out) {
  if (!sec[key]) return {};
  auto v = GetSize(sec[key], Path(section, key));
  if (!v) return v.error();
  out = *v;
  return {};
}

Status CheckKeys(const YAML::Node& n, const std::string& where,
                 std::initializer_list<const char*> allowed) {
  if (!n.IsMap()) return InvalidArgument(fmt::format("{}: expected a mapping", where));
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) {
      return InvalidArgument(fmt::format("{}: a key must be a plain name (line {})", where,
                                         it->first.Mark().line + 1));
    }
    const std::string key = it->first.as<std::string>();
    bool ok = false;
    for (const char* a : allowed) ok |= key == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      return InvalidArgument(fmt::format("{}: unknown key '{}' (line {}; allowed: {})", where, key,
                                         it->first.Mark().line + 1, list));
    }
  }
  return {};
}

// var is a name, not an expression: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define OFAN_TRY(var, expr)             \
  auto var##_r = (expr);                \
  if (!var##_r) return var##_r.error(); \
  auto var = *var##_r
// NOLINTEND(bugprone-macro-parentheses)

#define OFAN_CHECK(expr)        \
  do {                          \
    Status s_ = (expr);         \
    if (!s_) return s_.error(); \
  } while (0)

}  // namespace

Result<pkt::MacAddr> ParseMac(std::string_view s) {
  pkt::MacAddr m;
  if (s.size() != 17)
    return InvalidArgument(fmt::format("'{}' is not a MAC address (aa:bb:cc:dd:ee:ff)", s));
  for (int i = 0; i < 6; ++i) {
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const size_t at = static_cast<size_t>(i) * 3;
    const int hi = hex(s[at]), lo = hex(s[at + 1]);
    if (hi < 0 || lo < 0 || (i < 5 && s[at + 2] != ':')) {
      return InvalidArgument(fmt::format("'{}' is not a MAC address (aa:bb:cc:dd:ee:ff)", s));
    }
    m.b[static_cast<size_t>(i)] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return m;
}

Result<fabric::PfcWdAction> ParsePfcWdAction(std::string_view s) {
  auto a = fabric::ParsePfcWdAction(s);
  if (!a) return InvalidArgument("pfc.watchdog.action " + a.error().message);
  return *a;
}

std::string FormatMac(const pkt::MacAddr& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m.b[0], m.b[1], m.b[2], m.b[3],
                     m.b[4], m.b[5]);
}

std::optional<LinkRate> DpConfig::PortRate(const PortConfig& pc) const {
  auto r = LinkRate::FromGbpsOrZero(PortGbps(pc), "egress.rate_gbps");
  return r.ok() ? *r : std::nullopt;  // not ok: not validated; Validate() says why
}

Status DpConfig::Validate() const {
  auto tr = lb::FatTree::Make(k, levels);
  if (!tr) return InvalidArgument("fabric: " + tr.error().message);
  if (switch_id >= static_cast<uint32_t>(tr->num_switches())) {
    return InvalidArgument(fmt::format("fabric.switch {} does not exist ({} has switches 0..{})",
                                       switch_id, tr->Describe(), tr->num_switches() - 1));
  }
  if (name.empty() || name.size() > 64 || name.find('/') != std::string::npos) {
    return InvalidArgument(fmt::format("name '{}' must be 1..64 characters without '/'", name));
  }
  if (ports.empty()) return InvalidArgument("ports: at least one port is needed");
  std::set<uint32_t> seen;
  std::set<std::string> devs;
  for (const PortConfig& p : ports) {
    if (p.port >= static_cast<uint32_t>(k)) {
      return InvalidArgument(fmt::format(
          "ports: port {} out of range (a k={} switch has ports 0..{})", p.port, k, k - 1));
    }
    if (!seen.insert(p.port).second)
      return InvalidArgument(fmt::format("ports: port {} listed twice", p.port));
    if (p.dev.empty()) return InvalidArgument(fmt::format("ports: port {} has no dev", p.port));
    if (!devs.insert(p.dev).second)
      return InvalidArgument(fmt::format("ports: device '{}' used twice", p.dev));
    if (p.rate_gbps) {
      auto r = LinkRate::FromGbpsOrZero(*p.rate_gbps,
                                        fmt::format("ports: port {}: egress.rate_gbps", p.port));
      if (!r) return r.error();
    }
    if (p.buffer_bytes && *p.buffer_bytes < 2048) {
      return InvalidArgument(
          fmt::format("ports: port {}: egress.buffer must be at least 2KiB", p.port));
    }
    if (p.latency_us && !(*p.latency_us >= 0 && *p.latency_us <= 1e6)) {
      return InvalidArgument(
          fmt::format("ports: port {}: egress.latency_us must be in [0, 1e6]", p.port));
    }
    if (!(p.loss_pct >= 0 && p.loss_pct <= 100) || !(p.reorder_pct >= 0 && p.reorder_pct <= 100)) {
      return InvalidArgument(fmt::format(
          "ports: port {}: egress.loss_pct and reorder_pct are percents, 0..100", p.port));
    }
  }
  if (!(egress.latency_us >= 0 && egress.latency_us <= 1e6))
    return InvalidArgument("egress.latency_us must be in [0, 1e6]");
  if (netns.size() > 255 || netns.find('/') != std::string::npos)
    return InvalidArgument(fmt::format("netns '{}': a namespace name (no '/')", netns));
  if (pipe_size == 0 || pipe_size > static_cast<uint32_t>(k)) {
    return InvalidArgument(fmt::format("pipe_size must be in 1..k={}, got {}", k, pipe_size));
  }
  if (auto r = LinkRate::FromGbpsOrZero(egress.rate_gbps, "egress.rate_gbps"); !r) return r.error();
  if (egress.buffer_bytes < 2048) return InvalidArgument("egress.buffer must be at least 2KiB");
  if (egress.ring_slots < 64 || (egress.ring_slots & (egress.ring_slots - 1)) != 0 ||
      egress.ring_slots > (1u << 20)) {
    return InvalidArgument("egress.ring_slots must be a power of two in [64, 1Mi]");
  }
  if (pfc.priority > 7) return InvalidArgument("pfc.priority must be in 0..7");
  if (pfc.enabled && pfc.xoff_bytes && pfc.xon_bytes >= pfc.xoff_bytes)
    return InvalidArgument("pfc.xon must be below pfc.xoff");
  if (pfc.dscp > 63) return InvalidArgument("pfc.dscp must be in 0..63");
  if (pfc.quanta == 0) return InvalidArgument("pfc.quanta must be in 1..65535");
  if (pfc.response_quanta > 65535)
    return InvalidArgument("pfc.response_quanta must be in 0..65535");
  if (pfc.wd_detect_ms < fabric::kPfcWdDetectMinMs ||
      pfc.wd_detect_ms > fabric::kPfcWdDetectMaxMs) {
    return InvalidArgument(fmt::format("pfc.watchdog.detect_ms must be in {}..{}",
                                       fabric::kPfcWdDetectMinMs, fabric::kPfcWdDetectMaxMs));
  }
  if (pfc.wd_restore_ms < fabric::kPfcWdRestoreMinMs ||
      pfc.wd_restore_ms > fabric::kPfcWdRestoreMaxMs) {
    return InvalidArgument(fmt::format("pfc.watchdog.restore_ms must be in {}..{}",
                                       fabric::kPfcWdRestoreMinMs, fabric::kPfcWdRestoreMaxMs));
  }
  if (reorder.buffer_bytes == 0) return InvalidArgument("reorder.buffer must be above 0");
  if (reorder.timeout_us > fabric::kReorderMaxTimeoutUs) {
    return InvalidArgument(
        fmt::format("reorder.timeout_us must be in 1..{} (0 or absent: the buffer's drain "
                    "time at the port's rate)",
                    fabric::kReorderMaxTimeoutUs));
  }
  if (reorder.max_flows < 1 || reorder.max_flows > 1'000'000)
    return InvalidArgument("reorder.flows must be in 1..1000000");
  if (burst == 0 || burst > 64) return InvalidArgument("burst must be in 1..64");
  if (max_sleep_us > 100000) return InvalidArgument("idle.max_sleep_us must be <= 100000");
  if (max_wait_us < 1 || max_wait_us > 1000000)
    return InvalidArgument("idle.max_wait_us must be in 1..1000000");
  return {};
}

namespace {

// The config's sections, each read from its node into c (ParseConfigNode
// calls them in the file's order of checks).
Status ParseFabric(const YAML::Node& f, DpConfig& c) {
  OFAN_CHECK(CheckKeys(f, "fabric", {"k", "levels", "switch", "role", "pod", "index"}));
  OFAN_CHECK(ReadIf(f, "fabric", "k", c.k));
  OFAN_CHECK(ReadIf(f, "fabric", "levels", c.levels));
  auto tree = lb::FatTree::Make(c.k, c.levels);
  if (!tree) return InvalidArgument("fabric: " + tree.error().message);
  if (f["switch"]) {
    OFAN_TRY(v, Get<uint32_t>(f["switch"], "fabric.switch"));
    c.switch_id = v;
  } else if (f["role"]) {
    OFAN_TRY(role, Get<std::string>(f["role"], "fabric.role"));
    int pod = 0, index = 0;
    OFAN_CHECK(ReadIf(f, "fabric", "pod", pod));
    OFAN_CHECK(ReadIf(f, "fabric", "index", index));
    const int per_pod = role == "edge" ? tree->edges_per_pod() : tree->w();
    if (role == "core") {
      if (index < 0 || index >= tree->num_cores())
        return InvalidArgument(fmt::format("fabric.index {} out of range for a core", index));
      c.switch_id = tree->core(index).value();
    } else if (role == "edge" || role == "agg" || role == "spine") {
      if (pod < 0 || pod >= tree->num_pods()) {
        return InvalidArgument(
            fmt::format("fabric.pod {} out of range (0..{})", pod, tree->num_pods() - 1));
      }
      if (index < 0 || index >= per_pod) {
        return InvalidArgument(
            fmt::format("fabric.index {} out of range (0..{})", index, per_pod - 1));
      }
      c.switch_id = role == "edge" ? tree->edge(pod, index).value() : tree->agg(pod, index).value();
    } else {
      return InvalidArgument(
          fmt::format("fabric.role '{}' (expected edge, agg, spine or core)", role));
    }
  }
  return {};
}

Status ParsePorts(const YAML::Node& ps, DpConfig& c) {
  if (!ps.IsSequence()) return InvalidArgument("ports: expected a list");
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::string where = fmt::format("ports[{}]", i);
    OFAN_CHECK(CheckKeys(ps[i], where, {"port", "dev", "mac", "peer_mac", "admin", "egress"}));
    PortConfig p;
    if (!ps[i]["port"] || !ps[i]["dev"]) return InvalidArgument(where + ": needs 'port' and 'dev'");
    OFAN_TRY(port, Get<uint32_t>(ps[i]["port"], where + ".port"));
    OFAN_TRY(dev, Get<std::string>(ps[i]["dev"], where + ".dev"));
    p.port = port;
    p.dev = dev;
    if (ps[i]["mac"]) {
      OFAN_TRY(s, Get<std::string>(ps[i]["mac"], where + ".mac"));
      OFAN_TRY(m, ParseMac(s));
      p.mac = m;
    }
    if (ps[i]["peer_mac"]) {
      OFAN_TRY(s, Get<std::string>(ps[i]["peer_mac"], where + ".peer_mac"));
      OFAN_TRY(m, ParseMac(s));
      p.peer_mac = m;
    }
    if (ps[i]["admin"]) {
      OFAN_TRY(s, Get<std::string>(ps[i]["admin"], where + ".admin"));
      if (s != "up" && s != "down") return InvalidArgument(where + ".admin: expected up or down");
      p.admin_up = s == "up";
    }
    if (const YAML::Node e = ps[i]["egress"]) {
      const std::string ew = where + ".egress";
      OFAN_CHECK(CheckKeys(
          e, ew, {"rate_gbps", "buffer", "ecn", "latency_us", "loss_pct", "reorder_pct"}));
      OFAN_CHECK(ReadIf(e, ew, "loss_pct", p.loss_pct));
      OFAN_CHECK(ReadIf(e, ew, "reorder_pct", p.reorder_pct));
      if (e["latency_us"]) {
        double v = 0;
        OFAN_CHECK(ReadIf(e, ew, "latency_us", v));
        p.latency_us = v;
      }
      if (e["rate_gbps"]) {
        double r = 0;
        OFAN_CHECK(ReadIf(e, ew, "rate_gbps", r));
        p.rate_gbps = r;
      }
      if (e["buffer"]) {
        uint64_t b = 0;
        OFAN_CHECK(ReadSizeIf(e, ew, "buffer", b));
        p.buffer_bytes = b;
      }
      if (e["ecn"]) {
        uint64_t b = 0;
        OFAN_CHECK(ReadSizeIf(e, ew, "ecn", b));
        p.ecn_bytes = b;
      }
    }
    c.ports.push_back(p);
  }
  return {};
}

Status ParseLb(const YAML::Node& l, DpConfig& c) {
  OFAN_CHECK(
      CheckKeys(l, "lb", {"policy", "ofan_mode", "seed", "flowlet_gap_us", "drill_samples"}));
  if (l["policy"]) {
    OFAN_TRY(s, Get<std::string>(l["policy"], "lb.policy"));
    auto k = lb::ParsePolicy(s);
    if (!k) return InvalidArgument("lb.policy: " + k.error().message);
    c.policy.kind = *k;
  }
  if (l["ofan_mode"]) {
    OFAN_TRY(s, Get<std::string>(l["ofan_mode"], "lb.ofan_mode"));
    LbChoice ch = c.lb();
    if (Status st = ApplyOfanMode(s, ch); !st)
      return InvalidArgument("lb.ofan_mode: " + st.error().message);
    c.set_lb(ch);
  }
  OFAN_CHECK(ReadIf(l, "lb", "seed", c.policy.seed));
  if (l["flowlet_gap_us"]) {
    OFAN_TRY(v, Get<double>(l["flowlet_gap_us"], "lb.flowlet_gap_us"));
    // Written so that NaN fails too; 1e9 us (1000 s) keeps the cast in range.
    if (!(v >= 0 && v <= 1e9)) return InvalidArgument("lb.flowlet_gap_us must be in [0, 1e9]");
    c.policy.flowlet_gap_ps = static_cast<lb::TimePs>(v * 1e6);
  }
  OFAN_CHECK(ReadIf(l, "lb", "drill_samples", c.policy.drill_samples));
  return {};
}

Status ParseEgress(const YAML::Node& e, DpConfig& c) {
  OFAN_CHECK(CheckKeys(e, "egress",
                       {"rate_gbps", "buffer", "ecn", "priority", "ring_slots", "latency_us"}));
  OFAN_CHECK(ReadIf(e, "egress", "latency_us", c.egress.latency_us));
  OFAN_CHECK(ReadIf(e, "egress", "rate_gbps", c.egress.rate_gbps));
  OFAN_CHECK(ReadSizeIf(e, "egress", "buffer", c.egress.buffer_bytes));
  OFAN_CHECK(ReadSizeIf(e, "egress", "ecn", c.egress.ecn_bytes));
  OFAN_CHECK(ReadIf(e, "egress", "ring_slots", c.egress.ring_slots));
  if (const YAML::Node pr = e["priority"]) {
    if (!pr.IsSequence())
      return InvalidArgument("egress.priority: expected a list, e.g. [ack, control]");
    c.egress.priority_ack = c.egress.priority_control = false;
    for (const auto& x : pr) {
      OFAN_TRY(s, Get<std::string>(x, "egress.priority[]"));
      if (s == "ack") {
        c.egress.priority_ack = true;
      } else if (s == "control") {
        c.egress.priority_control = true;
      } else {
        return InvalidArgument(
            fmt::format("egress.priority: unknown class '{}' (expected ack, control)", s));
      }
    }
  }
  return {};
}

Status ParsePfc(const YAML::Node& p, DpConfig& c) {
  OFAN_CHECK(CheckKeys(
      p, "pfc",
      {"enabled", "priority", "dscp", "xoff", "xon", "quanta", "response_quanta", "watchdog"}));
  if (const YAML::Node w = p["watchdog"]) {
    OFAN_CHECK(CheckKeys(w, "pfc.watchdog", {"detect_ms", "restore_ms", "action"}));
    OFAN_CHECK(ReadIf(w, "pfc.watchdog", "detect_ms", c.pfc.wd_detect_ms));
    OFAN_CHECK(ReadIf(w, "pfc.watchdog", "restore_ms", c.pfc.wd_restore_ms));
    if (w["action"]) {
      OFAN_TRY(a, Get<std::string>(w["action"], "pfc.watchdog.action"));
      auto act = ParsePfcWdAction(a);
      if (!act) return act.error();
      c.pfc.wd_action = *act;
    }
  }
  OFAN_CHECK(ReadIf(p, "pfc", "enabled", c.pfc.enabled));
  if (p["priority"]) {
    OFAN_TRY(v, Get<uint32_t>(p["priority"], "pfc.priority"));
    if (v > 7) return InvalidArgument("pfc.priority must be in 0..7");
    c.pfc.priority = static_cast<uint8_t>(v);
  }
  OFAN_CHECK(ReadSizeIf(p, "pfc", "xoff", c.pfc.xoff_bytes));
  OFAN_CHECK(ReadSizeIf(p, "pfc", "xon", c.pfc.xon_bytes));
  if (p["quanta"]) {
    OFAN_TRY(v, Get<uint32_t>(p["quanta"], "pfc.quanta"));
    if (v < 1 || v > 0xFFFF) return InvalidArgument("pfc.quanta must be in 1..65535");
    c.pfc.quanta = static_cast<uint16_t>(v);
  }
  if (p["dscp"]) {
    OFAN_TRY(v, Get<uint32_t>(p["dscp"], "pfc.dscp"));
    if (v > 63) return InvalidArgument("pfc.dscp must be in 0..63");
    c.pfc.dscp = static_cast<uint8_t>(v);
  }
  if (p["response_quanta"]) {
    OFAN_TRY(v, Get<uint32_t>(p["response_quanta"], "pfc.response_quanta"));
    if (v > 0xFFFF) return InvalidArgument("pfc.response_quanta must be in 0..65535");
    c.pfc.response_quanta = v;
  }
  return {};
}

Status ParseReorder(const YAML::Node& r, DpConfig& c) {
  OFAN_CHECK(CheckKeys(r, "reorder", {"enabled", "buffer", "timeout_us", "flows"}));
  OFAN_CHECK(ReadIf(r, "reorder", "enabled", c.reorder.enabled));
  OFAN_CHECK(ReadSizeIf(r, "reorder", "buffer", c.reorder.buffer_bytes));
  OFAN_CHECK(ReadIf(r, "reorder", "timeout_us", c.reorder.timeout_us));
  OFAN_CHECK(ReadIf(r, "reorder", "flows", c.reorder.max_flows));
  return {};
}

Status ParseControl(const YAML::Node& s, DpConfig& c) {
  OFAN_CHECK(CheckKeys(s, "control", {"socket", "kernel_ports"}));
  OFAN_CHECK(ReadIf(s, "control", "socket", c.socket_path));
  OFAN_CHECK(ReadIf(s, "control", "kernel_ports", c.kernel_ports));
  return {};
}

Status ParseIdle(const YAML::Node& s, DpConfig& c) {
  OFAN_CHECK(CheckKeys(s, "idle", {"max_sleep_us", "max_wait_us"}));
  OFAN_CHECK(ReadIf(s, "idle", "max_sleep_us", c.max_sleep_us));
  OFAN_CHECK(ReadIf(s, "idle", "max_wait_us", c.max_wait_us));
  return {};
}

// A section present in root, parsed.
Status ParseSection(const YAML::Node& root, const char* key,
                    Status (*parse)(const YAML::Node&, DpConfig&), DpConfig& c) {
  if (const YAML::Node n = root[key]) return parse(n, c);
  return {};
}

Result<DpConfig> ParseConfigNode(const YAML::Node& root) {
  DpConfig c;
  if (root.IsNull()) return InvalidArgument("config is empty");
  OFAN_CHECK(CheckKeys(root, "config",
                       {"name", "fabric", "ports", "pipe_size", "lb", "egress", "pfc", "reorder",
                        "control", "idle", "burst", "netns"}));
  OFAN_CHECK(ReadIf(root, "", "name", c.name));
  OFAN_CHECK(ReadIf(root, "", "netns", c.netns));
  OFAN_CHECK(ParseSection(root, "fabric", ParseFabric, c));
  OFAN_CHECK(ParseSection(root, "ports", ParsePorts, c));
  OFAN_CHECK(ReadIf(root, "", "pipe_size", c.pipe_size));
  OFAN_CHECK(ReadIf(root, "", "burst", c.burst));
  OFAN_CHECK(ParseSection(root, "lb", ParseLb, c));
  OFAN_CHECK(ParseSection(root, "egress", ParseEgress, c));
  OFAN_CHECK(ParseSection(root, "pfc", ParsePfc, c));
  OFAN_CHECK(ParseSection(root, "reorder", ParseReorder, c));
  // A fabric that resequences for NICs without out-of-order placement
  // queues RC ACKs with data unless egress.priority says otherwise: an ACK
  // that overtook a QP's READ responses tells the reader they were lost
  // (egress/reorder.h, fabric/reorder.h).
  if (c.reorder.enabled && !(root["egress"] && root["egress"]["priority"])) {
    c.egress.priority_ack = false;
  }
  OFAN_CHECK(ParseSection(root, "control", ParseControl, c));
  OFAN_CHECK(ParseSection(root, "idle", ParseIdle, c));
  c.policy.pipe_size = c.pipe_size;
  return c;
}

}  // namespace

Result<DpConfig> ParseConfigYaml(const std::string& text) {
  try {
    return ParseConfigNode(YAML::Load(text));
  } catch (const YAML::ParserException& e) {
    return InvalidArgument(fmt::format("config is not valid YAML: {}", e.what()));
  } catch (const YAML::Exception& e) {
    // Every node is checked for its type before it is read; this is what a
    // shape no check foresaw gets instead of a crash.
    return InvalidArgument(fmt::format("config: {}", e.what()));
  }
}

Result<DpConfig> LoadConfigFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return MakeError(ErrorCode::kIo, fmt::format("cannot read config file '{}'", path));
  std::stringstream ss;
  ss << f.rdbuf();
  auto c = ParseConfigYaml(ss.str());
  if (!c) return MakeError(c.error().code, fmt::format("{}: {}", path, c.error().message));
  return c;
}

}  // namespace ofan::dp
