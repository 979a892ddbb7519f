// ofan-agent's side of ofan-dp's control socket: connect with backoff, read
// the masks the switch forwards with, push new ones (load_tables).
//
// expects:  the switch's control socket path (DpConfig::socket_path);
//           control/client/client.h for the transport.
// gives:    Connect(now): a connection, or an error with the time of the next
//           attempt (backoff doubling from kMinBackoffMs to kMaxBackoffMs,
//           reset by a success); on every call the switch's current masks,
//           read back from `pointers` (each data key's "order" is its valid
//           uplinks, so its mask is their bits), or none if the switch does
//           not say (then the agent pushes once). A connection that fails
//           that read is redone at once: ofan-dp restarted, with its
//           configured tables, and the agent must see them. Push(masks):
//           load_tables; a transport failure drops the connection.
// why:      a restarted agent resynchronises without disturbing
//           traffic, so it must know what ofan-dp forwards with before it
//           decides to send anything; and ofan-dp down must not stop the
//           agent, only delay its pushes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "control/client/client.h"
#include "dataplane/lb/types.h"

namespace ofan::agent {

inline constexpr int64_t kMinBackoffMs = 100;
inline constexpr int64_t kMaxBackoffMs = 5000;

// masks[d] from a `pointers` result (its data keys); nullopt if it has none.
Result<std::optional<std::vector<lb::PortMask>>> MasksFromPointers(const nlohmann::json& result);

class DpLink {
 public:
  DpLink(std::string socket_path, int timeout_ms)
      : path_(std::move(socket_path)), timeout_ms_(timeout_ms) {}

  // Connected (already, or now if the backoff allows) and the masks read
  // back. kIo when not connected (the message says why and when the next
  // attempt is). Once per cycle: `pointers` is k keys or so.
  Status Connect(int64_t now_ms);
  bool connected() const { return client_ != nullptr; }
  // What ofan-dp forwards with, as far as the agent knows: read on connect,
  // then what the agent pushed. nullopt: unknown.
  const std::optional<std::vector<lb::PortMask>>& masks() const { return masks_; }
  Status Push(const std::vector<lb::PortMask>& masks, int64_t now_ms);
  // A cycle's status to the switch (agent_report), which keeps the last one
  // for `ofanctl agent`. Only when connected; a transport failure drops the
  // connection as Push's does.
  Status Report(const nlohmann::json& status, int64_t now_ms);
  int64_t next_attempt_ms() const { return next_attempt_ms_; }
  int64_t backoff_ms() const { return backoff_ms_; }
  const std::string& path() const { return path_; }
  uint64_t connects() const { return connects_; }

 private:
  void Drop(int64_t now_ms);
  Status ReadMasks();  // masks_ from `pointers`

  std::string path_;
  int timeout_ms_;
  std::unique_ptr<control::ControlClient> client_;
  std::optional<std::vector<lb::PortMask>> masks_;
  int64_t next_attempt_ms_ = 0;
  int64_t backoff_ms_ = 0;  // the wait after the last failure; 0 after a success
  uint64_t connects_ = 0;
  std::string last_error_;
};

}  // namespace ofan::agent
