// The RoCEv2 GID of this host's address in an RDMA port's GID table, read
// from sysfs (the port's `gids/N` and `gid_attrs/types/N`, plus the netdev of
// the entry for its MAC), as rdma-core's own tools find it.
//
// expects:  a port directory laid out as /sys/class/infiniband/DEV/ports/1
//           (tests give a fake one); entries that are empty (all-zero GID,
//           or a type file that cannot be read: the kernel answers EINVAL
//           for unused slots) are skipped
// gives:    the index whose GID is the IPv4-mapped form of `ip` and whose
//           type is "RoCE v2" (with ip unset: the first such IPv4-mapped
//           entry, and its address), the entry's netdev and that netdev's
//           MAC when sysfs names them; an error that lists the IPv4 GIDs the
//           port has when none fits
// next:     the QP's RTR ah_attr.grh.sgid_index, and the hello's ip / mac
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/result.h"

namespace ofan::verbs {

struct GidChoice {
  uint32_t index = 0;
  uint32_t ip = 0;     // host order
  std::string netdev;  // "" when sysfs does not say
  std::string mac;     // the netdev's, "" when unknown
};

// An IPv4 address (host order) from a GID's text ("0000:...:ffff:0a09:0001"
// or "::ffff:10.9.0.1"), or none when the GID is not IPv4-mapped.
std::optional<uint32_t> Ipv4OfGid(const std::string& text);

// `port_dir`: /sys/class/infiniband/DEV/ports/1. `net_dir`: where netdevs'
// `address` files are (/sys/class/net).
Result<GidChoice> FindRoceV2Gid(const std::filesystem::path& port_dir, std::optional<uint32_t> ip,
                                const std::filesystem::path& net_dir = "/sys/class/net");

}  // namespace ofan::verbs
