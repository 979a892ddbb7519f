#include "control/agent/frr_state.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "control/agent/json_input.h"

namespace ofan::agent {
namespace {

using nlohmann::json;

constexpr std::string_view kBgp = "show bgp summary json";
constexpr std::string_view kBfd = "show bfd peers json";

Error Bad(std::string_view what, std::string message) {
  return InvalidArgument(fmt::format("{}: {}", what, message));
}

// o[key] as a string; "" when absent; an error when of another type.
Result<std::string> OptString(std::string_view what, const json& o, const char* key,
                              std::string_view where) {
  const auto it = o.find(key);
  if (it == o.end()) return std::string();
  if (!it->is_string()) {
    return Bad(what, fmt::format("{}: '{}' is not a string: {}", where, key, JsonSnippet(*it)));
  }
  return it->get<std::string>();
}

}  // namespace

Result<std::vector<BgpPeer>> ParseBgpSummary(std::string_view text) {
  auto doc = ParseJsonText(text, kBgp);
  if (!doc) return doc.error();
  if (!doc->is_object()) return Bad(kBgp, "not a JSON object: " + JsonSnippet(*doc));
  std::vector<BgpPeer> out;
  // FRR prints {} when there is no BGP instance, and an "ipv4Unicast" object
  // per address family for `show bgp summary json` without a family in some
  // versions: take the family's object when the top has no "peers".
  const json* top = &*doc;
  if (!top->contains("peers") && top->contains("ipv4Unicast")) top = &(*top)["ipv4Unicast"];
  if (!top->is_object()) return Bad(kBgp, "'ipv4Unicast' is not an object");
  const auto peers = top->find("peers");
  if (peers == top->end()) return out;
  if (!peers->is_object()) return Bad(kBgp, "'peers' is not an object: " + JsonSnippet(*peers));
  for (const auto& [name, p] : peers->items()) {
    const std::string where = fmt::format("peer '{}'", name);
    if (!p.is_object()) return Bad(kBgp, where + " is not an object: " + JsonSnippet(p));
    BgpPeer b;
    b.interface = name;
    auto state = OptString(kBgp, p, "state", where);
    if (!state) return state.error();
    if (state->empty()) return Bad(kBgp, where + " has no 'state'");
    b.state = std::move(*state);
    auto host = OptString(kBgp, p, "hostname", where);
    if (!host) return host.error();
    b.hostname = std::move(*host);
    if (const auto it = p.find("pfxRcd"); it != p.end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0) {
        return Bad(kBgp, fmt::format("{}: 'pfxRcd' is not a count: {}", where, JsonSnippet(*it)));
      }
      b.prefixes_received = it->get<uint64_t>();
    }
    out.push_back(std::move(b));
  }
  return out;
}

Result<std::vector<BfdPeer>> ParseBfdPeers(std::string_view text) {
  auto doc = ParseJsonText(text, kBfd);
  if (!doc) return doc.error();
  if (!doc->is_array()) return Bad(kBfd, "not a JSON array: " + JsonSnippet(*doc));
  std::vector<BfdPeer> out;
  for (size_t i = 0; i < doc->size(); ++i) {
    const json& p = (*doc)[i];
    const std::string where = fmt::format("peer {}", i);
    if (!p.is_object()) return Bad(kBfd, where + " is not an object: " + JsonSnippet(p));
    BfdPeer b;
    auto iface = OptString(kBfd, p, "interface", where);
    if (!iface) return iface.error();
    auto addr = OptString(kBfd, p, "peer", where);
    if (!addr) return addr.error();
    auto status = OptString(kBfd, p, "status", where);
    if (!status) return status.error();
    if (status->empty()) return Bad(kBfd, where + " has no 'status'");
    b.interface = std::move(*iface);
    b.peer = std::move(*addr);
    b.status = std::move(*status);
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace ofan::agent
