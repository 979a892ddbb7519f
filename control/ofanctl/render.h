// Human-readable renderings of the control socket's results (the JSON shapes
// of Switch::StatusJson, CountersJson, PortsJson, QueuesJson, PointersJson in
// dataplane/switch.cc). A result of another shape throws nlohmann::json's
// exceptions; the caller reports them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ofan::control {

// Columns padded to their widest cell; `align` holds 'l' or 'r' per column
// (default: the first column left, the others right).
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::string& align = "");

std::string RenderVersion(const nlohmann::json& result);
std::string RenderStatus(const nlohmann::json& status);
// Zero counters are left out unless `all`.
std::string RenderCounters(const nlohmann::json& counters, bool all);
std::string RenderPorts(const nlohmann::json& ports);
std::string RenderQueues(const nlohmann::json& queues);
// The summary counts every key; the rows are `only_key`'s if given.
std::string RenderPointers(const nlohmann::json& pointers, std::optional<uint32_t> only_key = {});
// One line after set_policy / load_tables (both answer with the status).
std::string RenderPolicyLine(const nlohmann::json& status);
// The row of `port` in a PortsJson array, as one line.
std::string RenderPortLine(const nlohmann::json& ports, uint32_t port);
// A line per capture (capture_start/status/stop's result: one, or {captures}).
std::string RenderCapture(const nlohmann::json& capture);
// `agent`: the agent's last report ({"report", "age_ms"}), or a line saying
// no agent has reported.
std::string RenderAgent(const nlohmann::json& agent);

// --fabric: one row per switch of [{name, ok, result | error}].
std::string RenderStatusFabric(const nlohmann::json& switches);
std::string RenderAgentFabric(const nlohmann::json& switches);

}  // namespace ofan::control
