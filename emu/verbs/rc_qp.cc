#include "emu/verbs/rc_qp.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace ofan::verbs {

Result<std::unique_ptr<RcQp>> RcQp::Create(const Device& dev, const CompletionQueue& cq,
                                           const QpDepths& depths) {
  const auto max_wr = static_cast<uint32_t>(dev.attr().max_qp_wr);
  if (depths.send == 0 || depths.recv == 0 || depths.send > max_wr || depths.recv > max_wr) {
    return InvalidArgument(
        fmt::format("{}: QP depths send {} / receive {} (the device allows 1..{})", dev.name(),
                    depths.send, depths.recv, max_wr));
  }
  std::unique_ptr<RcQp> q(new RcQp());
  ibv_qp_init_attr ia{};
  ia.send_cq = cq.cq();
  ia.recv_cq = cq.cq();
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 1;
  ia.cap.max_send_wr = depths.send;
  ia.cap.max_recv_wr = depths.recv;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  q->qp_ = ibv_create_qp(dev.pd(), &ia);
  if (!q->qp_) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("{}: ibv_create_qp: {}", dev.name(), std::strerror(errno)));
  }
  // A random first PSN, as perftest's: a stale packet of an earlier run on
  // the same QP number is then unlikely to look in sequence.
  std::random_device rd;
  q->psn_ = rd() & 0xFFFFFF;
  if (Status s = q->Modify(InitTransition(), "INIT"); !s) return s.error();
  return q;
}

RcQp::~RcQp() {
  if (qp_) ibv_destroy_qp(qp_);
}

Status RcQp::Modify(const QpTransition& t, const char* to) {
  ibv_qp_attr a = t.attr;
  if (int rc = ibv_modify_qp(qp_, &a, t.mask); rc != 0) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("QP {}: to {}: {}", qp_->qp_num, to, std::strerror(rc)));
  }
  return {};
}

Status RcQp::Connect(const LocalEnd& local, const RemoteEnd& remote) {
  auto rtr = RtrTransition(local, remote);
  if (!rtr) return rtr.error();
  if (Status s = Modify(*rtr, "RTR"); !s) return s;
  return Modify(RtsTransition(local), "RTS");
}

Status RcQp::PostSendWr(ibv_wr_opcode opcode, uint64_t wr_id, const uint8_t* src, uint32_t len,
                        uint32_t lkey, uint64_t remote_addr, uint32_t rkey, uint32_t imm) {
  ibv_sge sge{reinterpret_cast<uint64_t>(src), len, lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = len ? &sge : nullptr;  // zero length: no gather entry
  wr.num_sge = len ? 1 : 0;
  wr.opcode = opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    wr.imm_data = htonl(imm);  // big-endian on the wire; the receiver's ntohl undoes it
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
  }
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    return MakeError(
        ErrorCode::kIo,
        fmt::format("QP {}: posting a {}: {}", qp_->qp_num,
                    opcode == IBV_WR_SEND ? "SEND" : "WRITE WITH IMMEDIATE", std::strerror(rc)));
  }
  return {};
}

Status RcQp::PostWriteImm(uint64_t wr_id, const uint8_t* src, uint32_t len, uint32_t lkey,
                          uint64_t remote_addr, uint32_t rkey, uint32_t imm) {
  return PostSendWr(IBV_WR_RDMA_WRITE_WITH_IMM, wr_id, src, len, lkey, remote_addr, rkey, imm);
}

Status RcQp::PostSend(uint64_t wr_id, const uint8_t* src, uint32_t len, uint32_t lkey) {
  return PostSendWr(IBV_WR_SEND, wr_id, src, len, lkey, 0, 0, 0);
}

Status RcQp::PostRecv(uint64_t wr_id, uint8_t* dst, uint32_t len, uint32_t lkey) {
  ibv_sge sge{reinterpret_cast<uint64_t>(dst), len, lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = len ? &sge : nullptr;
  wr.num_sge = len ? 1 : 0;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("QP {}: posting a receive: {}", qp_->qp_num, std::strerror(rc)));
  }
  return {};
}

}  // namespace ofan::verbs
