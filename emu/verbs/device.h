// Device: one RDMA device opened through libibverbs (rxe in a VM), its port
// 1 and a protection domain, released in the right order on every path.
//
// expects:  a device name as `ibv_devices` lists it, or "" for the first
// gives:    the context, the PD, port 1's state and active MTU, the device's
//           limits (max QP WRs, CQ entries, message size), its sysfs port
//           directory (for the GID table and hw_counters), and the RoCE v2
//           GID of this host's address (gid_table.h); errors that name the
//           device and the devices there are
// next:     RegisteredBuffer (memory.h), CompletionQueue (completion_queue.h)
//           and RcQp (rc_qp.h) are made on it
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "emu/verbs/gid_table.h"

namespace ofan::verbs {

class Device {
 public:
  static Result<std::unique_ptr<Device>> Open(const std::string& name);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }
  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  // Port 1's active MTU in bytes (rxe: the netdev's MTU less headers).
  uint32_t active_mtu() const;
  const ibv_port_attr& port() const { return port_; }
  const ibv_device_attr& attr() const { return attr_; }
  std::filesystem::path sysfs_port() const;
  std::filesystem::path counters_dir() const { return sysfs_port() / "hw_counters"; }
  // The GID of `ip` (host order), or the first IPv4 RoCE v2 GID.
  Result<GidChoice> FindGid(std::optional<uint32_t> ip) const;

 private:
  Device() = default;
  std::string name_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_port_attr port_{};
  ibv_device_attr attr_{};
};

}  // namespace ofan::verbs
