// LLDP neighbours as lldpd reports them: `lldpcli -f json0 show neighbors`
// parsed into typed records, one per (local interface, neighbour).
//
// expects:  the text lldpcli printed (lldpd 1.0.16, Debian 12; fixtures in
//           tests/control/agent/fixtures/ are captured from it). json0, not
//           json: json0 gives every element as a list whatever its count,
//           where plain json turns a list of one into an object keyed by name
//           (one neighbour and two neighbours have different shapes).
// gives:    the neighbours in lldpcli's order, or kInvalidArgument with what
//           was wrong and where (not text, not JSON, a field of the wrong
//           shape); never a crash (tests/fuzz/agent_fuzz.cc)
// why:      ofan-agent learns its wiring from LLDP (chassis name = switch
//           name, port id = interface name); fabric_roles.h turns
//           these records into per-port verdicts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ofan::agent {

struct LldpNeighbor {
  std::string local_port;       // our interface ("p2")
  std::string via;              // "LLDP" (lldpd also speaks CDP, EDP, ...)
  std::string chassis_name;     // the neighbour's system name; "" if it sent none
  std::string chassis_id;       // e.g. a MAC
  std::string chassis_id_type;  // "mac", "local", "ip", ...
  std::string port_id;          // with portidsubtype ifname: its interface name
  std::string port_id_type;     // "ifname", "mac", "local", ...
  std::string port_descr;
  std::optional<uint32_t> ttl_s;  // the TTL the neighbour announced
  std::optional<uint32_t> age_s;  // since lldpd first saw it ("0 day, 00:00:04")
  friend bool operator==(const LldpNeighbor&, const LldpNeighbor&) = default;
};

Result<std::vector<LldpNeighbor>> ParseLldpNeighbors(std::string_view json0_text);

// lldpd's age text, "<d> day[s], HH:MM:SS", in seconds.
std::optional<uint32_t> ParseLldpAge(std::string_view age);

}  // namespace ofan::agent
