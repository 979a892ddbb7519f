#include "control/agent/dp_link.h"

#include <fmt/format.h>

#include <algorithm>

namespace ofan::agent {

using nlohmann::json;

namespace {
// A non-negative integer (nlohmann types one parsed as unsigned, one built
// from an int as signed).
bool IsIndex(const json& j) { return j.is_number_integer() && j.get<int64_t>() >= 0; }
}  // namespace

Result<std::optional<std::vector<lb::PortMask>>> MasksFromPointers(const json& result) {
  const auto bad = [](std::string m) { return InvalidArgument("pointers: " + std::move(m)); };
  if (!result.is_object() || !result.contains("keys") || !result["keys"].is_array()) {
    return bad("no 'keys' array");
  }
  std::vector<lb::PortMask> masks;
  for (const json& k : result["keys"]) {
    if (!k.is_object()) return bad("a key is not an object");
    if (k.value("class", "") != "data") continue;
    const auto dest = k.find("dest");
    const auto order = k.find("order");
    if (dest == k.end() || !IsIndex(*dest) || order == k.end() || !order->is_array()) {
      return bad("a key without 'dest' or 'order': " + k.dump());
    }
    const uint64_t d = dest->get<uint64_t>();
    if (d > 1u << 20) return bad(fmt::format("destination {} is out of range", d));
    if (masks.size() <= d) masks.resize(d + 1, 0);
    for (const json& u : *order) {
      if (!IsIndex(u) || u.get<uint64_t>() >= 64) {
        return bad("an uplink that is no index below 64: " + u.dump());
      }
      masks[d] |= lb::PortMask{1} << u.get<uint64_t>();
    }
  }
  if (masks.empty()) return std::optional<std::vector<lb::PortMask>>();
  return std::optional<std::vector<lb::PortMask>>(std::move(masks));
}

void DpLink::Drop(int64_t now_ms) {
  client_.reset();
  masks_.reset();
  backoff_ms_ = backoff_ms_ == 0 ? kMinBackoffMs : std::min(backoff_ms_ * 2, kMaxBackoffMs);
  next_attempt_ms_ = now_ms + backoff_ms_;
}

Status DpLink::ReadMasks() {
  auto r = client_->Command(control::Command::kPointers);
  if (!r) return r.error();
  masks_.reset();
  if (r->ok) {
    auto m = MasksFromPointers(r->result);
    if (m) masks_ = std::move(*m);  // otherwise unknown: pushed once
  }
  return {};
}

Status DpLink::Connect(int64_t now_ms) {
  if (client_) {
    // The connection may be to an ofan-dp that has since restarted (with its
    // configured tables), or someone else may have loaded tables: read back.
    if (ReadMasks()) return {};
    client_.reset();  // reconnect at once: a restart is the likely cause
    next_attempt_ms_ = now_ms;
  }
  if (now_ms < next_attempt_ms_) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("ofan-dp at {} unreachable ({}); next try in {} ms", path_,
                                 last_error_, next_attempt_ms_ - now_ms));
  }
  auto c = control::ControlClient::Connect(path_, timeout_ms_);
  if (!c) {
    last_error_ = c.error().message;
    Drop(now_ms);
    return MakeError(ErrorCode::kIo,
                     fmt::format("ofan-dp at {} unreachable ({}); retrying in {} ms", path_,
                                 last_error_, backoff_ms_));
  }
  client_ = std::move(*c);
  // What the switch forwards with now: the agent compares before it sends.
  if (Status s = ReadMasks(); !s) {
    last_error_ = s.error().message;
    Drop(now_ms);
    return MakeError(ErrorCode::kIo, fmt::format("ofan-dp at {}: pointers: {}; retrying in {} ms",
                                                 path_, last_error_, backoff_ms_));
  }
  ++connects_;
  backoff_ms_ = 0;
  next_attempt_ms_ = 0;
  last_error_.clear();
  return {};
}

Status DpLink::Report(const json& status, int64_t now_ms) {
  if (!client_) return MakeError(ErrorCode::kIo, "ofan-dp not connected");
  auto r = client_->Command(control::Command::kAgentReport, json{{"report", status}});
  if (!r) {
    last_error_ = r.error().message;
    Drop(now_ms);
    return MakeError(ErrorCode::kIo,
                     fmt::format("ofan-dp at {}: agent_report: {}", path_, last_error_));
  }
  if (!r->ok) {
    return InvalidArgument(fmt::format("ofan-dp at {} refused agent_report: {}", path_, r->error));
  }
  return {};
}

Status DpLink::Push(const std::vector<lb::PortMask>& masks, int64_t now_ms) {
  if (!client_) return MakeError(ErrorCode::kIo, "ofan-dp not connected");
  json arr = json::array();
  for (lb::PortMask m : masks) arr.push_back(m);
  auto r = client_->Command(control::Command::kLoadTables, json{{"masks", arr}});
  if (!r) {
    last_error_ = r.error().message;
    Drop(now_ms);
    return MakeError(ErrorCode::kIo,
                     fmt::format("ofan-dp at {}: load_tables: {}; retrying in {} ms", path_,
                                 last_error_, backoff_ms_));
  }
  if (!r->ok) {
    // The switch refused them (a different fabric?): unknown what it holds.
    masks_.reset();
    return InvalidArgument(fmt::format("ofan-dp at {} refused load_tables: {}", path_, r->error));
  }
  masks_ = masks;
  return {};
}

}  // namespace ofan::agent
