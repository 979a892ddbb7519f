#include "emu/verbs/device.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "emu/verbs/qp_attr.h"

namespace ofan::verbs {

Result<std::unique_ptr<Device>> Device::Open(const std::string& name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("no RDMA devices: {} (is rdma_rxe loaded, `rdma link add` done?)",
                                 std::strerror(errno)));
  }
  std::unique_ptr<Device> d(new Device());
  ibv_device* pick = nullptr;
  std::string names;
  for (int i = 0; i < n; ++i) {
    const char* dn = ibv_get_device_name(list[i]);
    names += fmt::format("{}{}", names.empty() ? "" : ", ", dn);
    if (!pick && (name.empty() || name == dn)) pick = list[i];
  }
  if (!pick) {
    ibv_free_device_list(list);
    return MakeError(ErrorCode::kNotFound,
                     name.empty() ? std::string("no RDMA devices (is rdma_rxe loaded, `rdma link "
                                                "add rxe0 type rxe netdev IF` done?)")
                                  : fmt::format("no RDMA device '{}' (there are: {})", name,
                                                names.empty() ? "none" : names));
  }
  d->name_ = ibv_get_device_name(pick);
  d->ctx_ = ibv_open_device(pick);
  ibv_free_device_list(list);
  if (!d->ctx_) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("{}: ibv_open_device: {}", d->name_, std::strerror(errno)));
  }
  if (int rc = ibv_query_device(d->ctx_, &d->attr_); rc != 0) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("{}: ibv_query_device: {}", d->name_, std::strerror(rc)));
  }
  if (int rc = ibv_query_port(d->ctx_, kPort, &d->port_); rc != 0) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("{}: ibv_query_port: {}", d->name_, std::strerror(rc)));
  }
  if (d->port_.state != IBV_PORT_ACTIVE) {
    return MakeError(ErrorCode::kIo, fmt::format("{}: port 1 is {}, not ACTIVE (is its netdev up?)",
                                                 d->name_, ibv_port_state_str(d->port_.state)));
  }
  d->pd_ = ibv_alloc_pd(d->ctx_);
  if (!d->pd_) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("{}: ibv_alloc_pd: {}", d->name_, std::strerror(errno)));
  }
  return d;
}

Device::~Device() {
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

uint32_t Device::active_mtu() const { return MtuBytes(port_.active_mtu); }

std::filesystem::path Device::sysfs_port() const {
  return std::filesystem::path("/sys/class/infiniband") / name_ / "ports" / std::to_string(kPort);
}

Result<GidChoice> Device::FindGid(std::optional<uint32_t> ip) const {
  return FindRoceV2Gid(sysfs_port(), ip);
}

}  // namespace ofan::verbs
