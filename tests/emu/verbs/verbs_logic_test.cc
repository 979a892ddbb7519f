// The verbs hosts' pure logic, without a device: the QP attributes an
// ofan-rc-1 hello maps to (qp_attr.h), the RoCE v2 GID index chosen from a
// fake sysfs port directory (gid_table.h), hw_counters read from a fake
// directory and their deltas (hw_counters.h), the pair check's data pattern
// and option checks (pair_check.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "emu/verbs/gid_table.h"
#include "emu/verbs/hw_counters.h"
#include "emu/verbs/pair_check.h"
#include "emu/verbs/qp_attr.h"

namespace ofan::verbs {
namespace {
namespace fs = std::filesystem;

TEST(QpAttr, MtuMapsBothWaysAndRefusesOthers) {
  for (uint32_t b : {256u, 512u, 1024u, 2048u, 4096u}) {
    auto m = MtuFromBytes(b);
    ASSERT_TRUE(m.ok()) << b;
    EXPECT_EQ(MtuBytes(*m), b);
  }
  auto bad = MtuFromBytes(1500);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("1500"), std::string::npos);
}

TEST(QpAttr, RtrFollowsThePeersHello) {
  const LocalEnd local{3, 4096, 0x123456};
  const RemoteEnd remote{0x11, 0xABCDEF, 0x0A090002, 1024};
  auto t = RtrTransition(local, remote);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->attr.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(t->attr.path_mtu, IBV_MTU_1024);  // the smaller of both ends
  EXPECT_EQ(t->attr.dest_qp_num, 0x11u);
  EXPECT_EQ(t->attr.rq_psn, 0xABCDEFu);
  EXPECT_EQ(t->attr.ah_attr.is_global, 1);
  EXPECT_EQ(t->attr.ah_attr.grh.sgid_index, 3);
  EXPECT_EQ(t->attr.ah_attr.port_num, kPort);
  const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 9, 0, 2};
  EXPECT_EQ(0, std::memcmp(t->attr.ah_attr.grh.dgid.raw, want, 16));
  EXPECT_TRUE(t->mask & IBV_QP_AV);
  EXPECT_TRUE(t->mask & IBV_QP_DEST_QPN);
  EXPECT_TRUE(t->mask & IBV_QP_RQ_PSN);
  EXPECT_TRUE(t->mask & IBV_QP_PATH_MTU);
  EXPECT_TRUE(t->mask & IBV_QP_MAX_DEST_RD_ATOMIC);
  EXPECT_TRUE(t->mask & IBV_QP_MIN_RNR_TIMER);
}

// rxe puts the GRH traffic class in every packet's TOS: RoCE data's DSCP
// (26, the lossless class under PFC) by default, the strict-priority DSCP
// (48) for a QP of clear-to-sends; ECN's bits stay 0.
TEST(QpAttr, TrafficClassCarriesTheQpsDscp) {
  const RemoteEnd remote{0x11, 0, 0x0A090002, 1024};
  auto data = RtrTransition(LocalEnd{0, 1024, 0}, remote);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->attr.ah_attr.grh.traffic_class, 26 << 2);
  LocalEnd prio{0, 1024, 0};
  prio.traffic_class = kPriorityTrafficClass;
  auto cts = RtrTransition(prio, remote);
  ASSERT_TRUE(cts.ok());
  EXPECT_EQ(cts->attr.ah_attr.grh.traffic_class, 48 << 2);
}

TEST(QpAttr, RtsRetriesAndStartsAtOurPsn) {
  auto t = RtsTransition({0, 2048, 0x1FFFFFF});
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(t.attr.sq_psn, 0xFFFFFFu);  // 24 bits
  EXPECT_EQ(t.attr.retry_cnt, 7);
  EXPECT_EQ(t.attr.rnr_retry, 7);
  EXPECT_EQ(t.attr.timeout, 14);
  EXPECT_EQ(t.attr.max_rd_atomic, 1);
  EXPECT_TRUE(t.mask & IBV_QP_SQ_PSN);
  EXPECT_TRUE(t.mask & IBV_QP_RETRY_CNT);
  EXPECT_TRUE(t.mask & IBV_QP_RNR_RETRY);
  EXPECT_TRUE(t.mask & IBV_QP_TIMEOUT);
}

TEST(QpAttr, InitAllowsRemoteWrites) {
  auto t = InitTransition();
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_INIT);
  EXPECT_TRUE(t.attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE);
  EXPECT_EQ(t.attr.port_num, kPort);
}

TEST(QpAttr, RefusesABadMtuOrGidIndex) {
  EXPECT_FALSE(RtrTransition({0, 1500, 0}, {1, 1, 1, 1500}).ok());
  auto t = RtrTransition({300, 1024, 0}, {1, 1, 1, 1024});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("GID index 300"), std::string::npos);
}

// A fake /sys/class/infiniband/DEV/ports/1 and /sys/class/net.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ofan-verbs-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(port() / "gids");
    fs::create_directories(port() / "gid_attrs" / "types");
    fs::create_directories(port() / "gid_attrs" / "ndevs");
    fs::create_directories(root_ / "net" / "va0");
    Write(root_ / "net" / "va0" / "address", "02:00:00:00:00:01\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path port() const { return root_ / "ports" / "1"; }
  static void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  // type "" leaves the type file out (the kernel's EINVAL for empty slots).
  void Gid(int i, const std::string& gid, const std::string& type, const std::string& ndev = "") {
    Write(port() / "gids" / std::to_string(i), gid + "\n");
    if (!type.empty()) Write(port() / "gid_attrs" / "types" / std::to_string(i), type + "\n");
    if (!ndev.empty()) Write(port() / "gid_attrs" / "ndevs" / std::to_string(i), ndev + "\n");
  }
  fs::path root_;
};

constexpr const char* kZero = "0000:0000:0000:0000:0000:0000:0000:0000";

TEST_F(FakeSysfs, PicksTheRoceV2EntryOfTheAddress) {
  Gid(0, "fe80:0000:0000:0000:0496:e1ff:fe97:f571", "RoCE v2", "va0");
  Gid(1, "0000:0000:0000:0000:0000:ffff:0a09:0001", "IB/RoCE v1", "va0");
  Gid(2, kZero, "");
  Gid(10, "0000:0000:0000:0000:0000:ffff:0a09:0002", "RoCE v2", "va0");
  Gid(3, "0000:0000:0000:0000:0000:ffff:0a09:0001", "RoCE v2", "va0");
  auto c = FindRoceV2Gid(port(), 0x0A090001u, root_ / "net");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->index, 3u);  // 1 is RoCE v1
  EXPECT_EQ(c->ip, 0x0A090001u);
  EXPECT_EQ(c->netdev, "va0");
  EXPECT_EQ(c->mac, "02:00:00:00:00:01");
  auto other = FindRoceV2Gid(port(), 0x0A090002u, root_ / "net");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->index, 10u);  // numeric order, not the directory's
  auto first = FindRoceV2Gid(port(), std::nullopt, root_ / "net");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->index, 3u);
}

TEST_F(FakeSysfs, SaysWhatThereIsWhenNothingFits) {
  Gid(0, "fe80:0000:0000:0000:0496:e1ff:fe97:f571", "RoCE v2");
  Gid(1, "0000:0000:0000:0000:0000:ffff:0a09:0001", "RoCE v2");
  auto c = FindRoceV2Gid(port(), 0x0A090005u, root_ / "net");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("::ffff:10.9.0.5"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("10.9.0.1 (RoCE v2, index 1)"), std::string::npos)
      << c.error().message;
  auto none = FindRoceV2Gid(root_ / "nowhere", std::nullopt);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
}

TEST(Gid, Ipv4OfGidReadsBothSpellings) {
  EXPECT_EQ(Ipv4OfGid("0000:0000:0000:0000:0000:ffff:0a09:0001"), 0x0A090001u);
  EXPECT_EQ(Ipv4OfGid("::ffff:10.9.0.1"), 0x0A090001u);
  EXPECT_FALSE(Ipv4OfGid("fe80::1").has_value());
  EXPECT_FALSE(Ipv4OfGid("not a gid").has_value());
}

TEST_F(FakeSysfs, CountersByNameAndTheirDeltas) {
  const fs::path dir = root_ / "hw_counters";
  fs::create_directories(dir);
  Write(dir / "sent_pkts", "400\n");
  Write(dir / "rcvd_seq_err", "2\n");
  Write(dir / "not_a_counter", "abc\n");
  Write(dir / "huge", "99999999999999999999999\n");  // does not fit: skipped
  auto before = ReadCounters(dir);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->size(), 2u);
  Write(dir / "sent_pkts", "1000\n");
  Write(dir / "rcvd_seq_err", "1\n");  // went down: a re-created device, counted from 0
  Write(dir / "rcvd_pkts", "7\n");     // new: no delta
  Write(dir / "lifespan", "1\n");      // the core's cache, waited out: not a counter
  auto after = ReadCounters(dir);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->count("lifespan"), 0u);
  EXPECT_EQ(after->count("rcvd_pkts"), 1u);
  Counters d = CounterDeltas(*before, *after);
  EXPECT_EQ(d, (Counters{{"sent_pkts", 600}, {"rcvd_seq_err", 1}}));
  EXPECT_EQ(CountersJson(d)["sent_pkts"], 600);
  EXPECT_FALSE(ReadCounters(root_ / "absent").ok());
}

TEST(PairCheck, PatternIsTheProtocols) {
  EXPECT_EQ(PairByte(0, 0), 1);
  EXPECT_EQ(PairByte(0, 1), 8);
  EXPECT_EQ(PairByte(1, 0), 14);
  EXPECT_EQ(PairByte(3, 100), (100 * 7 + 3 * 13 + 1) & 0xff);
}

TEST(PairCheck, OptionsAreCheckedWithReasons) {
  PairCheckOptions o;
  EXPECT_FALSE(CheckPairOptions(o).has_value());
  auto with = [](auto f) {
    PairCheckOptions x;
    f(x);
    return CheckPairOptions(x).value_or("");
  };
  EXPECT_NE(with([](auto& x) { x.listen = false; }).find("--connect"), std::string::npos);
  EXPECT_NE(with([](auto& x) { x.count = 0; }).find("--count"), std::string::npos);
  EXPECT_NE(with([](auto& x) { x.qps = 0; }).find("--qps"), std::string::npos);
  EXPECT_NE(with([](auto& x) { x.mtu = 1500; }).find("--mtu"), std::string::npos);
  EXPECT_NE(with([](auto& x) {
              x.count = 1 << 20;
              x.size = 4096;
            }).find("at most"),
            std::string::npos);
}

}  // namespace
}  // namespace ofan::verbs
