#include "tofino_p4/control/bfrt_writer.h"

#include <fmt/format.h>

#include <map>
#include <sstream>
#include <tuple>

namespace ofan::p4 {

using nlohmann::json;

namespace {

constexpr const char* kIngress = "Ingress";

uint64_t MacValue(const lb::MacBytes& m) {
  uint64_t v = 0;
  for (uint8_t b : m) v = v << 8 | b;
  return v;
}

// One entry in BF Runtime's terms: key fields, action, data fields.
struct Entry {
  std::string table;  // "route", or "Egress.ecn_threshold" outside Ingress
  std::vector<std::pair<std::string, uint64_t>> key;
  std::string action;  // without the control's prefix
  std::vector<std::pair<std::string, uint64_t>> data;
};

std::vector<Entry> Entries(const PofanTables& t) {
  std::vector<Entry> out;
  for (const RouteEntry& e : t.route) {
    Entry x{"route", {{"dst_addr", e.dst_addr}}, "", {}};
    switch (e.action) {
      case RouteAction::kDown:
        x.action = "route_down";
        x.data = {{"port", e.port}};
        break;
      case RouteAction::kUp:
        x.action = "route_up";
        x.data = {{"dest", e.dest}};
        break;
      case RouteAction::kLocal:
        x.action = "route_local";
        break;
    }
    out.push_back(std::move(x));
  }
  for (const XorwEntry& e : t.f2_xorw) {
    out.push_back({"f2_xorw", {{"rank", e.rank}, {"id1", e.id1}}, "set_xorw", {{"x", e.x}}});
  }
  for (const AddEntry& e : t.f2_add) {
    out.push_back({"f2_add", {{"x", e.x}, {"id2", e.id2}}, "set_uplink", {{"port", e.port}}});
  }
  for (const ListEntry& e : t.uplink_list) {
    out.push_back(
        {"uplink_list", {{"ptr", e.ptr}, {"rank", e.rank}}, "set_uplink", {{"port", e.port}}});
  }
  for (const KeyEntry& e : t.pofan_key) {
    Entry x{"pofan_key", {{"dest", e.dest}, {"cls", e.cls}}, "", {}};
    switch (e.action) {
      case KeyAction::kSetKey:
        x.action = "set_key";
        x.data = {{"ptr", e.ptr}, {"last", e.last}, {"id1", e.id1}, {"id2", e.id2}};
        break;
      case KeyAction::kSetKeyDegraded:
        x.action = "set_key_degraded";
        x.data = {{"ptr", e.ptr}, {"last", e.last}};
        break;
      case KeyAction::kNoUplink:
        x.action = "no_uplink";
        break;
    }
    out.push_back(std::move(x));
  }
  for (const PortMacEntry& e : t.port_mac) {
    out.push_back({"port_mac",
                   {{"port", e.port}},
                   "set_macs",
                   {{"src", MacValue(e.src)}, {"dst", MacValue(e.dst)}}});
  }
  return out;
}

const std::vector<std::string>& TableNames() {
  static const std::vector<std::string> n = {
      "route", "f2_xorw", "f2_add", "uplink_list", "pofan_key", "port_mac", "Egress.ecn_threshold"};
  return n;
}

// The control a table (or its action) belongs to, and its short name.
std::string ControlOf(const std::string& table) {
  return table.rfind("Egress.", 0) == 0 ? "Egress" : kIngress;
}
std::string ShortName(const std::string& table) {
  return table.rfind("Egress.", 0) == 0 ? table.substr(7) : table;
}
// The table's variable in the scripts: ig.route, eg.ecn_threshold.
std::string ScriptTable(const std::string& table) {
  return (ControlOf(table) == kIngress ? "ig." : "eg.") + ShortName(table);
}

std::string Args(const std::vector<std::pair<std::string, uint64_t>>& f) {
  std::string s;
  for (const auto& [name, v] : f) s += fmt::format("{}{}=0x{:x}", s.empty() ? "" : ", ", name, v);
  return s;
}

std::string Join(const std::vector<std::pair<std::string, uint64_t>>& a,
                 const std::vector<std::pair<std::string, uint64_t>>& b) {
  const std::string x = Args(a), y = Args(b);
  return x.empty() ? y : y.empty() ? x : x + ", " + y;
}

std::string Header(const PofanTables& t, const std::string& command_line, const char* what) {
  std::ostringstream o;
  o << "# " << what << " for " << OFAN_P4_PROGRAM_NAME << ".p4 on switch " << t.switch_name
    << " (id " << t.sw.value() << ") of a k=" << t.k << " " << t.levels << "-level fat tree";
  o << ", failed links [";
  for (size_t i = 0; i < t.failed_links.size(); ++i) o << (i ? ", " : "") << t.failed_links[i];
  o << "].\n# Made by: " << command_line << "\n";
  o << "# Load into a running switch: $SDE/run_bfshell.sh -b THIS_FILE\n";
  o << "p4 = bfrt." << OFAN_P4_PROGRAM_NAME << ".pipe\n";
  o << "ig = p4." << kIngress << "\n";
  o << "eg = p4.Egress\n";
  return o.str();
}

std::string AddLine(const Entry& e) {
  return fmt::format("{}.add_with_{}({})\n", ScriptTable(e.table), e.action, Join(e.key, e.data));
}

}  // namespace

json TablesToJson(const PofanTables& t, bool with_registers) {
  json j;
  j["format"] = kTablesFormat;
  j["program"] = OFAN_P4_PROGRAM_NAME;
  j["switch"] = {{"name", t.switch_name},
                 {"id", t.sw.value()},
                 {"role", std::string(lb::RoleName(t.role))},
                 {"k", t.k},
                 {"levels", t.levels},
                 {"failed_links", t.failed_links}};
  j["options"] = {{"policy", lb::PolicyName(t.options.policy)},
                  {"pipe_size", t.options.pipe_size},
                  {"num_pipes", t.options.num_pipes},
                  {"dev_ports", t.options.dev_ports},
                  {"cpu_port", t.cpu_port},
                  {"seed", t.options.seed},
                  {"salt", t.options.salt}};
  json tables = json::array();
  tables.push_back({{"name", fmt::format("pipe.{}.switch_config", kIngress)},
                    {"default_action",
                     {{"action", fmt::format("{}.set_switch", kIngress)},
                      {"data", {{"cpu_port", t.cpu_port}}}}}});
  std::map<std::string, json> by_table;
  for (const std::string& n : TableNames()) by_table[n] = json::array();
  for (const Entry& e : Entries(t)) {
    json key = json::object(), data = json::object();
    for (const auto& [n, v] : e.key) key[n] = v;
    for (const auto& [n, v] : e.data) data[n] = v;
    by_table[e.table].push_back({{"key", key},
                                 {"action", fmt::format("{}.{}", ControlOf(e.table), e.action)},
                                 {"data", data}});
  }
  for (const std::string& n : TableNames()) {
    tables.push_back({{"name", fmt::format("pipe.{}.{}", ControlOf(n), ShortName(n))},
                      {"entries", by_table[n]}});
  }
  j["tables"] = tables;
  if (with_registers) {
    j["registers"] = json::array({{{"name", fmt::format("pipe.{}.pointers", kIngress)},
                                   {"data_field", fmt::format("{}.pointers.f1", kIngress)},
                                   {"pipes", t.pointers}}});
  }
  return j;
}

std::string BfrtPythonScript(const PofanTables& t, const std::string& command_line,
                             bool with_registers) {
  std::ostringstream o;
  o << Header(t, command_line, with_registers ? "Tables and pointers" : "Tables");
  // Clearing and the register's mode go before the batch: they are not
  // entry operations.
  for (const std::string& n : TableNames()) o << ScriptTable(n) << ".clear()\n";
  // One value per pipe: POfan's pointers are the pipe's own (App. H).
  if (with_registers) o << "ig.pointers.symmetric_mode_set(False)\n";
  o << "bfrt.batch_begin()\n";
  o << fmt::format("ig.switch_config.set_default_with_set_switch(cpu_port=0x{:x})\n", t.cpu_port);
  for (const Entry& e : Entries(t)) o << AddLine(e);
  if (with_registers) {
    for (size_t pipe = 0; pipe < t.pointers.size(); ++pipe) {
      for (size_t i = 0; i < t.pointers[pipe].size(); ++i) {
        o << fmt::format("ig.pointers.mod(REGISTER_INDEX={}, f1={}, pipe={})\n", i,
                         t.pointers[pipe][i], pipe);
      }
    }
  }
  o << "bfrt.batch_end()\nbfrt.complete_operations()\n";
  return o.str();
}

std::string BfrtPythonUpdate(const PofanTables& from, const PofanTables& to,
                             const std::string& command_line) {
  // Entries by (table, key): what to add, modify and delete.
  using Key = std::pair<std::string, std::vector<std::pair<std::string, uint64_t>>>;
  std::map<Key, Entry> old_entries, new_entries;
  for (Entry& e : Entries(from)) old_entries[{e.table, e.key}] = std::move(e);
  for (Entry& e : Entries(to)) new_entries[{e.table, e.key}] = std::move(e);
  std::ostringstream o;
  o << Header(to, command_line, "An update of the tables (no register write)");
  o << "bfrt.batch_begin()\n";
  auto same = [](const Entry& a, const Entry& b) {
    return a.action == b.action && a.data == b.data;
  };
  auto upsert = [&](const std::string& table) {
    for (const auto& [k, e] : new_entries) {
      if (k.first != table) continue;
      const auto old = old_entries.find(k);
      if (old == old_entries.end()) {
        o << AddLine(e);
      } else if (!same(old->second, e)) {
        o << fmt::format("{}.mod_with_{}({})\n", ScriptTable(e.table), e.action,
                         Join(e.key, e.data));
      }
    }
  };
  auto remove = [&](const std::string& table) {
    for (const auto& [k, e] : old_entries) {
      if (k.first == table && !new_entries.count(k)) {
        o << fmt::format("{}.delete({})\n", ScriptTable(e.table), Args(e.key));
      }
    }
  };
  // Lists before the keys that read them; stale list entries after.
  for (const std::string& n : TableNames()) {
    if (n != "pofan_key") upsert(n);
  }
  upsert("pofan_key");
  remove("pofan_key");
  for (const std::string& n : TableNames()) {
    if (n != "pofan_key") remove(n);
  }
  o << "bfrt.batch_end()\nbfrt.complete_operations()\n";
  return o.str();
}

}  // namespace ofan::p4
