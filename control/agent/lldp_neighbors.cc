#include "control/agent/lldp_neighbors.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "control/agent/json_input.h"

namespace ofan::agent {
namespace {

using nlohmann::json;

constexpr std::string_view kWhat = "lldpcli json0";

Error Bad(std::string_view where, std::string_view problem) {
  return InvalidArgument(fmt::format("{}: {}: {}", kWhat, where, problem));
}

// json0 gives every element as a list of objects; a list of one is the rule.
Result<const json*> OnlyObject(const json& parent, std::string_view key, std::string_view where) {
  const json& v = parent.at(key);
  if (!v.is_array() || v.empty() || !v[0].is_object()) {
    return Bad(where, fmt::format("'{}' is not a list of objects: {}", key, JsonSnippet(v)));
  }
  return &v[0];
}

// A string field given directly ("name": "p0") or json0's way
// ("name": [{"value": "sw1"}]); "" when absent.
Result<std::string> Text(const json& parent, std::string_view key, std::string_view where,
                         std::string* type = nullptr) {
  if (!parent.contains(key)) return std::string();
  const json& v = parent.at(key);
  if (v.is_string()) return v.get<std::string>();
  auto o = OnlyObject(parent, key, where);
  if (!o) return o.error();
  const json& obj = **o;
  if (!obj.contains("value") || !obj["value"].is_string()) {
    return Bad(where, fmt::format("'{}' has no string 'value': {}", key, JsonSnippet(v)));
  }
  if (type != nullptr) {
    if (obj.contains("type") && !obj["type"].is_string()) {
      return Bad(where, fmt::format("'{}' has a 'type' that is not a string", key));
    }
    *type = obj.value("type", "");
  }
  return obj["value"].get<std::string>();
}

std::optional<uint32_t> ParseU32(std::string_view s) {
  uint32_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

Result<LldpNeighbor> ParseInterface(const json& in, size_t index) {
  std::string where = fmt::format("interface #{}", index);
  if (!in.is_object()) return Bad(where, "not an object");
  LldpNeighbor n;
  auto name = Text(in, "name", where);
  if (!name) return name.error();
  if (name->empty()) return Bad(where, "no interface 'name'");
  n.local_port = *name;
  where = fmt::format("interface {}", n.local_port);
  auto via = Text(in, "via", where);
  if (!via) return via.error();
  n.via = *via;
  auto age = Text(in, "age", where);
  if (!age) return age.error();
  if (!age->empty()) {
    n.age_s = ParseLldpAge(*age);
    if (!n.age_s) return Bad(where, fmt::format("age '{}' is not '<d> day, HH:MM:SS'", *age));
  }

  if (!in.contains("chassis")) return Bad(where, "no 'chassis'");
  auto ch = OnlyObject(in, "chassis", where);
  if (!ch) return ch.error();
  auto cname = Text(**ch, "name", where + " chassis");
  if (!cname) return cname.error();
  n.chassis_name = *cname;
  auto cid = Text(**ch, "id", where + " chassis", &n.chassis_id_type);
  if (!cid) return cid.error();
  n.chassis_id = *cid;

  if (!in.contains("port")) return Bad(where, "no 'port'");
  auto port = OnlyObject(in, "port", where);
  if (!port) return port.error();
  auto pid = Text(**port, "id", where + " port", &n.port_id_type);
  if (!pid) return pid.error();
  n.port_id = *pid;
  auto descr = Text(**port, "descr", where + " port");
  if (!descr) return descr.error();
  n.port_descr = *descr;
  // lldpd 1.0.16 puts the TTL under the port; later releases under the
  // interface. Either is read.
  for (const json* holder : {*port, &in}) {
    auto ttl = Text(*holder, "ttl", where);
    if (!ttl) return ttl.error();
    if (ttl->empty()) continue;
    n.ttl_s = ParseU32(*ttl);
    if (!n.ttl_s) return Bad(where, fmt::format("ttl '{}' is not a number of seconds", *ttl));
    break;
  }
  return n;
}

}  // namespace

std::optional<uint32_t> ParseLldpAge(std::string_view age) {
  // "<d> day, HH:MM:SS" or "<d> days, HH:MM:SS"
  const size_t sp = age.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const auto days = ParseU32(age.substr(0, sp));
  std::string_view rest = age.substr(sp + 1);
  for (std::string_view word : {"days, ", "day, "}) {
    if (rest.substr(0, word.size()) == word) {
      rest.remove_prefix(word.size());
      break;
    }
  }
  if (!days || *days > 100000 || rest.size() != 8 || rest[2] != ':' || rest[5] != ':') {
    return std::nullopt;
  }
  const auto h = ParseU32(rest.substr(0, 2)), m = ParseU32(rest.substr(3, 2)),
             s = ParseU32(rest.substr(6, 2));
  if (!h || !m || !s || *h > 23 || *m > 59 || *s > 59) return std::nullopt;
  return *days * 86400 + *h * 3600 + *m * 60 + *s;
}

Result<std::vector<LldpNeighbor>> ParseLldpNeighbors(std::string_view json0_text) {
  auto doc = ParseJsonText(json0_text, kWhat);
  if (!doc) return doc.error();
  const json& d = *doc;
  if (!d.is_object() || !d.contains("lldp")) {
    return Bad("top level", "not an object with 'lldp' (lldpcli -f json0 show neighbors)");
  }
  const json& lldp = d["lldp"];
  // json0 gives "lldp": [{...}]; with no neighbour lldpd prints [{}].
  if (!lldp.is_array()) {
    return Bad("'lldp'", fmt::format("not a list ({}); was it -f json rather than -f json0?",
                                     JsonSnippet(lldp)));
  }
  std::vector<LldpNeighbor> out;
  for (const json& part : lldp) {
    if (!part.is_object()) return Bad("'lldp'", "an element is not an object");
    if (!part.contains("interface")) continue;
    const json& ifs = part["interface"];
    if (!ifs.is_array()) {
      return Bad("'interface'", fmt::format("not a list ({}); was it -f json rather than -f json0?",
                                            JsonSnippet(ifs)));
    }
    for (size_t i = 0; i < ifs.size(); ++i) {
      auto n = ParseInterface(ifs[i], out.size());
      if (!n) return n.error();
      out.push_back(std::move(*n));
    }
  }
  return out;
}

}  // namespace ofan::agent
