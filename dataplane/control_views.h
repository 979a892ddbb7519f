// The control socket's JSON views of a switch, built from a Snapshot
// (dataplane/snapshot.h) outside the switch. Their shapes are the protocol's
// replies (dataplane/control_socket.h); ofanctl renders them.
#pragma once

#include <nlohmann/json.hpp>

#include "dataplane/capture/port_capture.h"
#include "dataplane/snapshot.h"

namespace ofan::dp {

nlohmann::json StatusJson(const Snapshot& s);
nlohmann::json CountersJson(const Snapshot& s);
nlohmann::json PortsJson(const Snapshot& s);
nlohmann::json QueuesJson(const Snapshot& s);
nlohmann::json PointersJson(const Snapshot& s);  // needs SnapshotParts::keys
nlohmann::json CaptureJson(const CaptureStatus& c);
// {"captures": [CaptureJson, ...]}
nlohmann::json CapturesJson(const std::vector<CaptureStatus>& cs);

}  // namespace ofan::dp
