#include "dataplane/port_device.h"

#include <fmt/format.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "dataplane/idle_wait.h"
#include "dataplane/packet/frame_budget.h"

namespace ofan::dp {

Result<int> StartPortDevice(uint16_t id, rte_mempool* pool, uint16_t rxd, uint16_t txd, int socket,
                            const std::string& what) {
  auto fail = [&](const char* step, int rc) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("{} {}: {}", what, step, rte_strerror(rc < 0 ? -rc : rc)));
  };
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(id, &info); rc != 0) return fail("info", rc);
  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof(conf));
  if (int rc = rte_eth_dev_configure(id, 1, 1, &conf); rc != 0) return fail("configure", rc);
  // Room for RoCE MTU 2048 frames, but no more than an mbuf holds
  // (dataplane/packet/frame_budget.h: how 3438 comes about).
  static_assert(pkt::kMbufHeadroom == RTE_PKTMBUF_HEADROOM && pkt::kXdpHeadroom == 256);
  const uint16_t mtu = static_cast<uint16_t>(std::min<uint32_t>(info.max_mtu, pkt::kNetdevMtu));
  rte_eth_dev_set_mtu(id, mtu);  // best effort: ring/null ports ignore it
  rte_eth_dev_adjust_nb_rx_tx_desc(id, &rxd, &txd);
  const std::vector<int> before = AfXdpFds();
  if (int rc = rte_eth_rx_queue_setup(id, 0, rxd, static_cast<unsigned>(socket), nullptr, pool);
      rc != 0)
    return fail("rx queue", rc);
  if (int rc = rte_eth_tx_queue_setup(id, 0, txd, static_cast<unsigned>(socket), nullptr); rc != 0)
    return fail("tx queue", rc);
  rte_eth_promiscuous_enable(id);  // a switch port takes every frame
  if (int rc = rte_eth_dev_start(id); rc != 0) return fail("start", rc);
  // The AF_XDP socket this setup made, if it made one.
  std::vector<int> added;
  const std::vector<int> after = AfXdpFds();
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  return added.size() == 1 ? added[0] : -1;
}

}  // namespace ofan::dp
