#include "emu/verbs/qp_attr.h"

#include <fmt/format.h>

#include <algorithm>

namespace ofan::verbs {

Result<ibv_mtu> MtuFromBytes(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return InvalidArgument(
          fmt::format("MTU {} is not an IB MTU (256, 512, 1024, 2048, 4096)", bytes));
  }
}

uint32_t MtuBytes(ibv_mtu mtu) {
  const int e = static_cast<int>(mtu);
  return e >= 1 && e <= 5 ? 128u << e : 0;
}

ibv_gid GidOfIpv4(uint32_t ip) {
  ibv_gid g{};
  g.raw[10] = 0xff;
  g.raw[11] = 0xff;
  g.raw[12] = static_cast<uint8_t>(ip >> 24);
  g.raw[13] = static_cast<uint8_t>(ip >> 16);
  g.raw[14] = static_cast<uint8_t>(ip >> 8);
  g.raw[15] = static_cast<uint8_t>(ip);
  return g;
}

QpTransition InitTransition() {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = 0;
  t.attr.port_num = kPort;
  t.attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

Result<QpTransition> RtrTransition(const LocalEnd& local, const RemoteEnd& remote) {
  if (local.gid_index > 255) {
    return InvalidArgument(
        fmt::format("GID index {} does not fit ibv_ah_attr's 8 bits", local.gid_index));
  }
  auto mtu = MtuFromBytes(std::min(local.mtu, remote.mtu));
  if (!mtu) return mtu.error();
  QpTransition t;
  t.attr.qp_state = IBV_QPS_RTR;
  t.attr.path_mtu = *mtu;
  t.attr.dest_qp_num = remote.qpn & 0xFFFFFF;
  t.attr.rq_psn = remote.psn & 0xFFFFFF;
  t.attr.max_dest_rd_atomic = 1;
  t.attr.min_rnr_timer = kMinRnrTimer;
  t.attr.ah_attr.is_global = 1;
  t.attr.ah_attr.grh.dgid = GidOfIpv4(remote.ip);
  t.attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(local.gid_index);
  t.attr.ah_attr.grh.hop_limit = kHopLimit;
  t.attr.ah_attr.grh.flow_label = 0;
  t.attr.ah_attr.grh.traffic_class = local.traffic_class;
  t.attr.ah_attr.dlid = 0;
  t.attr.ah_attr.sl = 0;
  t.attr.ah_attr.src_path_bits = 0;
  t.attr.ah_attr.port_num = kPort;
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  return t;
}

QpTransition RtsTransition(const LocalEnd& local) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.sq_psn = local.psn & 0xFFFFFF;
  t.attr.timeout = local.ack_timeout;
  t.attr.retry_cnt = kRetryCount;
  t.attr.rnr_retry = kRnrRetry;
  t.attr.max_rd_atomic = 1;
  t.mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

}  // namespace ofan::verbs
