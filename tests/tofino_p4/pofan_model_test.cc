// The P4 model (tofino_p4/model/) with the control plane's tables, held to
// dataplane/lb's POfan and to ofan-dp:
//  - for long random sequences (several destinations, both classes, every
//    ingress pipe, with and without failures, and failures changing in the
//    middle), the model picks the uplink lb::Pofan picks with the same pipe
//    size, seed and salt;
//  - every valid uplink is used exactly once per round, per key and pipe;
//  - whole frames come out as ofan-dp's stages make them (port and bytes);
//  - the vectors on disk are what the model makes now;
//  - the control plane refuses what the program cannot take, saying why.
#include "tofino_p4/model/pofan_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/rng.h"
#include "dataplane/egress/mark.h"
#include "dataplane/packet/builder.h"
#include "dataplane/stages/parse.h"
#include "tests/golden/golden.h"
#include "tests/tofino_p4/ofan_dp_reference.h"
#include "tofino_p4/control/bfrt_writer.h"
#include "tofino_p4/control/pofan_tables.h"
#include "tofino_p4/model/vectors.h"

namespace ofan::p4 {
namespace {

using lb::FatTree;
using lb::HostId;
using lb::SwitchId;
using testing::OfanDpReference;
using testing::OfanDpResult;

std::string g_vectors_dir;

struct Case {
  int k, levels;
  const char* sw;
  uint32_t pipe_size;
  std::vector<uint32_t> failed;
  lb::PolicyKind policy = lb::PolicyKind::kPofan;
};

std::string Name(const Case& c) {
  std::string s = fmt::format("{}_k{}_l{}_{}_ps{}_f{}", lb::PolicyName(c.policy), c.k, c.levels,
                              c.sw, c.pipe_size, c.failed.size());
  for (char& ch : s) {
    if (ch == '-') ch = '_';
  }
  return s;
}

// A frame from host `src` to host `dst` entering through fabric port `in`.
std::vector<uint8_t> RoceFrame(const FatTree& t, SwitchId s, int in, HostId src, HostId dst,
                               bool ack, Rng& rng) {
  pkt::PacketBuilder b;
  b.Eth(pkt::MacAddr{lb::SwitchPortMac(s, in)}, pkt::MacAddr{lb::PeerMac(t, s, in)})
      .Ipv4(t.host_addr(src), t.host_addr(dst), static_cast<uint8_t>(2 + rng.Below(62)),
            static_cast<uint8_t>(rng.Below(4)))
      .Udp(static_cast<uint16_t>(0xC000 | rng.Below(0x4000)), pkt::kRoceV2Port);
  if (ack) {
    b.Bth(OFAN_P4_BTH_OPCODE_ACK, 0x11, rng.Below(1u << 24)).Aeth(0x1F, 0);
  } else {
    b.Bth(static_cast<uint8_t>(pkt::Opcode::kSendMiddle), 0x11, rng.Below(1u << 24)).Payload(32);
  }
  return b.PadTo(60).Build();
}

class ModelVsLb : public ::testing::TestWithParam<Case> {};

// The heart of it: the model's uplink is lb::Pofan's, packet for packet, and
// the model's frame is ofan-dp's, byte for byte.
TEST_P(ModelVsLb, SameUplinkAndFrameAsOfanDpForLongRandomSequences) {
  const Case& c = GetParam();
  auto tree = FatTree::Make(c.k, c.levels);
  ASSERT_TRUE(tree);
  auto sw = lb::ParseSwitchName(*tree, c.sw);
  ASSERT_TRUE(sw) << sw.error().message;
  PofanOptions o;
  o.policy = c.policy;
  o.pipe_size = c.pipe_size;
  o.seed = 17;
  auto tables = ComputePofanTables(*tree, *sw, c.failed, o);
  ASSERT_TRUE(tables) << tables.error().message;
  PofanModel model(*tables);
  auto failed = tree->FailedLinks(c.failed);
  ASSERT_TRUE(failed);
  OfanDpReference ref(*tree, *tables, *failed);

  const auto& dev = tables->options.dev_ports;
  std::map<uint16_t, int> fabric_of;
  for (size_t p = 0; p < dev.size(); ++p) fabric_of[dev[p]] = static_cast<int>(p);
  std::vector<HostId> below, above;
  for (int h = 0; h < tree->num_hosts(); ++h) {
    const HostId id(static_cast<uint32_t>(h));
    (tree->is_below(*sw, id) ? below : above).push_back(id);
  }
  ASSERT_FALSE(above.empty());
  Rng rng(99);
  // Round checks: per (pipe, key), the uplinks since the round began.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint8_t>> round;
  uint64_t balanced = 0, rounds = 0;
  std::set<uint32_t> pipes_seen;
  for (int i = 0; i < 20000; ++i) {
    if (i == 10000) {
      // Failures change under traffic: new tables, the registers stay.
      std::vector<uint32_t> now = {static_cast<uint32_t>(rng.Below(tree->num_links())),
                                   static_cast<uint32_t>(rng.Below(tree->num_links()))};
      auto next = ComputePofanTables(*tree, *sw, now, o);
      ASSERT_TRUE(next);
      model.UpdateTables(*next);
      auto fs = tree->FailedLinks(now);
      ASSERT_TRUE(fs);
      ref.UpdateFailures(*fs);
      round.clear();
    }
    const HostId src = below[rng.Below(static_cast<uint32_t>(below.size()))];
    const HostId dst = above[rng.Below(static_cast<uint32_t>(above.size()))];
    // Up-bound traffic enters through a down port; any pipe.
    const int in = c.levels == 2 && tree->role(*sw) == lb::Role::kEdge
                       ? tree->down_port(*sw, src)
                       : static_cast<int>(rng.Below(static_cast<uint32_t>(tree->w())));
    const bool ack = rng.Below(4) == 0;
    const auto frame = RoceFrame(*tree, *sw, in, src, dst, ack, rng);
    const auto out = model.Process(dev[static_cast<size_t>(in)], frame);
    ASSERT_TRUE(out);
    const OfanDpResult want = ref.Process(static_cast<uint32_t>(in), frame);
    ASSERT_TRUE(want.balanced);
    if (want.kind != OfanDpResult::Kind::kForward) {
      ASSERT_TRUE(out->dropped()) << "packet " << i;
      EXPECT_EQ(out->drop_reason, OFAN_P4_DROP_NO_UPLINK) << "packet " << i;
      continue;
    }
    ASSERT_FALSE(out->dropped()) << "packet " << i << ": " << DropReasonName(out->drop_reason);
    ASSERT_EQ(fabric_of.at(out->port), static_cast<int>(want.port)) << "packet " << i;
    ASSERT_EQ(out->bytes, want.bytes) << "packet " << i;
    ++balanced;
    pipes_seen.insert(out->pipe);
    // Every valid uplink once per round: a round is the key's list length.
    const uint32_t key = out->ptr;
    const uint32_t n = ref.table().list(key).n;
    auto& r = round[{out->pipe, key}];
    r.push_back(want.uplink);
    if (r.size() == n) {
      std::set<uint8_t> used(r.begin(), r.end());
      const lb::UplinkList l = ref.table().list(key);
      EXPECT_EQ(used, std::set<uint8_t>(l.ports, l.ports + l.n))
          << "pipe " << out->pipe << " key " << key;
      r.clear();
      ++rounds;
    }
  }
  EXPECT_GT(balanced, 15000u);
  EXPECT_GT(rounds, 1000u);
  // Up-bound traffic came in through every pipe that has down ports.
  const uint32_t down_pipes = (static_cast<uint32_t>(tree->w()) + c.pipe_size - 1) / c.pipe_size;
  EXPECT_EQ(pipes_seen.size(), std::min<size_t>(down_pipes, tables->options.num_pipes));
}

INSTANTIATE_TEST_SUITE_P(
    Switches, ModelVsLb,
    ::testing::Values(Case{8, 3, "e0-0", 2, {}}, Case{12, 3, "a3-2", 3, {}},
                      Case{8, 3, "e0-0", 4, {26, 36, 37, 38, 39, 141, 160, 161, 162, 163}},
                      Case{8, 3, "e1-3", 2, {5, 26, 141}}, Case{8, 3, "a0-0", 2, {}},
                      Case{8, 3, "a2-1", 2, {176, 193, 195, 208, 209, 210, 211}},
                      Case{4, 3, "e0-0", 1, {}}, Case{4, 3, "a1-1", 1, {24, 30}},
                      Case{16, 3, "e3-5", 4, {1, 99, 300}}, Case{8, 2, "l3", 2, {0, 9}},
                      // Ofan: one table, every port in one pipe.
                      Case{8, 3, "e0-0", 8, {}, lb::PolicyKind::kOfan},
                      Case{8, 3, "a2-1", 8, {176, 193, 195}, lb::PolicyKind::kOfan}),
    [](const auto& test_info) { return Name(test_info.param); });

TEST(PofanModel, EveryUplinkOncePerRoundFromTheRegisterAlone) {
  // Straight from the register: for each pipe and key, w consecutive picks
  // of a key with all uplinks valid are the w uplinks.
  auto tree = FatTree::Make(8, 3);
  auto t = ComputePofanTables(*tree, SwitchId(0), {}, PofanOptions{.pipe_size = 2});
  ASSERT_TRUE(t);
  PofanModel model(*t);
  Rng rng(5);
  for (uint32_t pipe = 0; pipe < 2; ++pipe) {
    for (uint32_t d = 1; d < 32; ++d) {
      for (bool ack : {false, true}) {
        std::set<uint16_t> ports;
        for (int i = 0; i < 4; ++i) {
          const HostId dst(d * 4 + static_cast<uint32_t>(rng.Below(4)));
          const int in = static_cast<int>(pipe * 2);
          const auto f =
              RoceFrame(*tree, SwitchId(0), in, HostId(static_cast<uint32_t>(in)), dst, ack, rng);
          const auto out = model.Process(t->options.dev_ports[static_cast<size_t>(in)], f);
          ASSERT_TRUE(out && !out->dropped());
          ports.insert(out->port);
        }
        EXPECT_EQ(ports.size(), 4u) << "pipe " << pipe << " dest " << d << " ack " << ack;
      }
    }
  }
}

TEST(PofanModel, TheRegisterHoldsTheRankUsedLast) {
  // The register's compare-and-reset on the stored value gives the rank lb
  // started the key at.
  for (uint32_t n = 1; n <= 32; ++n) {
    for (uint32_t next = 0; next < n; ++next) {
      uint8_t used = lb::LastUsedBefore(next, n);
      EXPECT_EQ(lb::NextRank(used, n), next);
      used = used >= n - 1 ? 0 : static_cast<uint8_t>(used + 1);
      EXPECT_EQ(used, next) << n;
    }
  }
  const uint8_t none = lb::LastUsedBefore(0, 0);  // a key with no uplink
  for (uint32_t n = 1; n <= 32; ++n) EXPECT_EQ(lb::NextRank(none, n), 0u);
}

TEST(PofanModel, TheVectorsOnDiskAreWhatTheModelMakesNow) {
  ASSERT_FALSE(g_vectors_dir.empty()) << "give --vectors-dir=DIR";
  for (const VectorSpec& spec : DefaultVectorSpecs()) {
    auto v = MakeVectors(spec);
    ASSERT_TRUE(v) << v.error().message;
    for (const auto& [file, text] : {std::pair{spec.name + ".golden", v->golden},
                                     std::pair{spec.name + ".tables.json", v->tables_json}}) {
      std::ifstream f(std::filesystem::path(g_vectors_dir) / file, std::ios::binary);
      ASSERT_TRUE(f) << file << " is missing: ofan-p4 vectors --out tofino_p4/vectors makes it";
      std::ostringstream s;
      s << f.rdbuf();
      EXPECT_TRUE(s.str() == text)
          << file << " is not what the model makes now: ofan-p4 vectors --out tofino_p4/vectors";
    }
  }
}

// The vectors replayed through ofan-dp's stages: every frame either leaves
// as ofan-dp would send it, or both drop it, or both hand it to the CPU
// (ofan-dp's exception path).
TEST(PofanModel, TheVectorsAgreeWithOfanDpFrameByFrame) {
  ASSERT_FALSE(g_vectors_dir.empty());
  for (const VectorSpec& spec : DefaultVectorSpecs()) {
    const auto path = (std::filesystem::path(g_vectors_dir) / (spec.name + ".golden")).string();
    auto file = golden::Load(path);
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_EQ(file->switches.size(), 1u);
    const golden::Switch& s = file->switches[0];
    auto tree = FatTree::Make(s.k, s.levels);
    ASSERT_TRUE(tree);
    auto failed = tree->FailedLinks(spec.failed_links);
    ASSERT_TRUE(failed);
    auto tables = ComputePofanTables(*tree, SwitchId(s.id), spec.failed_links,
                                     PofanOptions{.pipe_size = spec.pipe_size, .seed = spec.seed});
    ASSERT_TRUE(tables);
    OfanDpReference ref(*tree, *tables, *failed);
    std::map<uint32_t, uint32_t> fabric_of;
    for (size_t p = 0; p < tables->options.dev_ports.size(); ++p) {
      fabric_of[tables->options.dev_ports[p]] = static_cast<uint32_t>(p);
    }
    ASSERT_EQ(s.ports.size(), fabric_of.size() + 1);  // and the CPU port
    ASSERT_EQ(file->frames.size(), spec.frames);
    int forwarded = 0, cpu = 0, dropped = 0, ce = 0;
    for (const golden::Frame& f : file->frames) {
      const uint32_t in = static_cast<uint32_t>(f.Num("in_port"));
      const OfanDpResult want = ref.Process(fabric_of.at(in), f.in);
      if (f.Has("to_cpu")) {
        EXPECT_EQ(want.kind, OfanDpResult::Kind::kException) << spec.name << " " << f.name;
        ++cpu;
      } else if (f.out.empty()) {
        // Dropped by pofan.p4; by ofan-dp too, or (the documented
        // differences) answered with Time Exceeded, or a fragment forwarded.
        EXPECT_TRUE(want.kind == OfanDpResult::Kind::kDrop ||
                    want.kind == OfanDpResult::Kind::kTtlExpired ||
                    want.kind == OfanDpResult::Kind::kFragment)
            << spec.name << " " << f.name;
        ++dropped;
      } else {
        ASSERT_EQ(f.out.size(), 1u);
        ASSERT_EQ(want.kind, OfanDpResult::Kind::kForward) << spec.name << " " << f.name;
        EXPECT_EQ(fabric_of.at(f.out[0].port), want.port) << spec.name << " " << f.name;
        EXPECT_EQ(f.out[0].bytes, want.bytes) << spec.name << " " << f.name;
        // ECN: the marked frame is ofan-dp's MarkCe of the same frame; an
        // unmarked one is not ECT.
        std::vector<uint8_t> marked = want.bytes;
        const bool ect = dp::MarkCe(marked.data(), dp::ForwardedL3Offset(marked.data()));
        ASSERT_EQ(f.ce.size(), ect ? 1u : 0u) << spec.name << " " << f.name;
        if (ect) {
          EXPECT_EQ(f.ce[0].port, f.out[0].port);
          EXPECT_EQ(f.ce[0].bytes, marked) << spec.name << " " << f.name;
          ++ce;
        }
        ++forwarded;
      }
    }
    EXPECT_GT(forwarded, 250) << spec.name;
    EXPECT_GT(ce, 100) << spec.name;
    EXPECT_GT(cpu, 0) << spec.name;
    EXPECT_GT(dropped, 10) << spec.name;
  }
}

TEST(PofanModel, DropsWhatItCannotParseAndCountsIt) {
  auto tree = FatTree::Make(4, 3);
  auto t = ComputePofanTables(*tree, SwitchId(0), {}, PofanOptions{.pipe_size = 1});
  ASSERT_TRUE(t);
  PofanModel model(*t);
  const std::vector<uint8_t> runt(10, 0);
  auto out = model.Process(t->options.dev_ports[0], runt);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->drop_reason, OFAN_P4_DROP_PARSER_ERROR);
  EXPECT_EQ(model.drops()[OFAN_P4_DROP_PARSER_ERROR], 1u);
  EXPECT_EQ(DropReasonName(OFAN_P4_DROP_NO_UPLINK), "no_uplink");
  // A port no pipe of the device has.
  EXPECT_FALSE(model.Process(OFAN_P4_PORT_TABLE_SIZE, runt));
  // IPv4 options: the program drops them (ofan-dp forwards them).
  auto f = pkt::PacketBuilder()
               .Eth(pkt::MacAddr{}, pkt::MacAddr{})
               .Ipv4(tree->host_addr(HostId(0)), tree->host_addr(HostId(9)))
               .Payload(20)
               .Build();
  f[14] = 0x46;
  out = model.Process(t->options.dev_ports[0], f);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->drop_reason, OFAN_P4_DROP_IPV4_OPTIONS);
}

// The control plane's frames go to the CPU as they came, as ofan-dp hands
// them to its exception path: ARP, LLDP, and IPv6 (BGP unnumbered, ND).
TEST(PofanModel, ControlFramesGoToTheCpuUntouched) {
  auto tree = FatTree::Make(4, 3);
  auto t = ComputePofanTables(*tree, SwitchId(0), {}, PofanOptions{.pipe_size = 1});
  ASSERT_TRUE(t);
  PofanModel model(*t);
  const pkt::MacAddr a{{0x02, 0, 0, 0, 0, 1}}, b{{0x02, 0, 0, 0, 0, 2}};
  for (const uint16_t type : {pkt::ethertype::kLldp, pkt::ethertype::kIpv6}) {
    const auto f = pkt::PacketBuilder().Eth(b, a, type).Payload(46).Build();
    auto out = model.Process(t->options.dev_ports[3], f);
    ASSERT_TRUE(out);
    EXPECT_TRUE(out->to_cpu) << std::hex << type;
    EXPECT_EQ(out->bytes, f);
    EXPECT_EQ(ofan::dp::ParseFrame(f.data(), static_cast<uint32_t>(f.size())).verdict,
              ofan::dp::Verdict::kException);
  }
  const auto other = pkt::PacketBuilder().Eth(b, a, 0x88B5).Payload(46).Build();
  auto out = model.Process(t->options.dev_ports[3], other);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->drop_reason, OFAN_P4_DROP_UNKNOWN_ETHERTYPE);
}

TEST(PofanModel, MarksEctAtTheThresholdAsOfanDpDoes) {
  auto tree = FatTree::Make(4, 3);
  auto t =
      ComputePofanTables(*tree, SwitchId(0), {}, PofanOptions{.pipe_size = 1, .ecn_bytes = 8000});
  ASSERT_TRUE(t);
  ASSERT_EQ(EcnCells(8000), 101u);  // more than 8,000 bytes: 101 cells of 80
  PofanModel model(*t);
  Rng rng(3);
  for (uint8_t ecn = 0; ecn < 4; ++ecn) {
    auto f = RoceFrame(*tree, SwitchId(0), 0, HostId(0), HostId(1), false, rng);
    f[15] = static_cast<uint8_t>((f[15] & ~3u) | ecn);
    pkt::SetIpv4Checksum20(&f[14]);
    for (uint32_t depth : {0u, 100u, 101u, 5000u}) {
      const auto out = model.Process(t->options.dev_ports[0], f, depth);
      ASSERT_TRUE(out && !out->dropped());
      const bool mark = depth >= 101 && (ecn == 1 || ecn == 2);
      EXPECT_EQ(out->bytes[15] & 3, mark ? 3 : ecn) << int(ecn) << " " << depth;
      EXPECT_EQ(pkt::Ipv4Checksum(&out->bytes[14], 20), 0) << "checksum kept valid";
    }
  }
  // No marking at all with a threshold of 0, and nothing to the CPU is marked.
  auto off =
      ComputePofanTables(*tree, SwitchId(0), {}, PofanOptions{.pipe_size = 1, .ecn_bytes = 0});
  ASSERT_TRUE(off);
  EXPECT_TRUE(off->ecn_threshold.empty());
  for (const EcnEntry& e : t->ecn_threshold) EXPECT_NE(e.port, t->cpu_port);
}

TEST(PofanTables, RefusesWhatTheProgramCannotTakeSayingWhy) {
  auto tree = FatTree::Make(8, 3);
  ASSERT_TRUE(tree);
  auto expect_error = [&](SwitchId s, std::vector<uint32_t> failed, PofanOptions o,
                          const std::string& part) {
    auto t = ComputePofanTables(*tree, s, failed, o);
    ASSERT_FALSE(t) << part;
    EXPECT_NE(t.error().message.find(part), std::string::npos) << t.error().message;
  };
  expect_error(SwitchId(999), {}, {}, "out of range");
  expect_error(SwitchId(0), {100000}, {}, "no link 100000");
  expect_error(SwitchId(0), {}, PofanOptions{.pipe_size = 1}, "pipe size 1 makes 8 pipes");
  expect_error(SwitchId(0), {}, PofanOptions{.pipe_size = 0}, "pipe size 0");
  expect_error(SwitchId(0), {}, PofanOptions{.num_pipes = 5}, "5 pipes");
  expect_error(SwitchId(0), {}, PofanOptions{.dev_ports = {0, 4}}, "2 device ports");
  expect_error(SwitchId(0), {}, PofanOptions{.dev_ports = {0, 0, 8, 12, 128, 132, 136, 140}},
               "given to two ports");
  // Ports 0..3 (one lb pipe of size 4) split over two device pipes.
  expect_error(SwitchId(0), {}, PofanOptions{.dev_ports = {0, 4, 128, 132, 256, 260, 264, 268}},
               "breaks the pipe size 4");
  expect_error(SwitchId(0), {}, PofanOptions{.cpu_port = 0}, "also a fabric port");
  expect_error(SwitchId(0), {}, PofanOptions{.policy = lb::PolicyKind::kOfan, .pipe_size = 4},
               "every fat-tree port must sit in one pipe");
  expect_error(SwitchId(0), {}, PofanOptions{.policy = lb::PolicyKind::kEcmp},
               "policy ecmp: pofan.p4 balances with the Ofan pointer only");
  auto names = lb::ParseSwitchName(*tree, "x9");
  ASSERT_FALSE(names);
  EXPECT_NE(names.error().message.find("no switch 'x9'"), std::string::npos);
}

TEST(PofanTables, EntriesFollowTheLibrary) {
  auto tree = FatTree::Make(8, 3);
  const std::vector<uint32_t> failed = {26, 36, 37, 38, 39, 141, 160, 161, 162, 163};
  auto t = ComputePofanTables(*tree, SwitchId(0), failed, PofanOptions{.pipe_size = 2});
  ASSERT_TRUE(t);
  auto fs = tree->FailedLinks(failed);
  const lb::UplinkTable table = lb::UplinkTable::ForSwitch(*tree, SwitchId(0), *fs);
  EXPECT_EQ(t->route.size(), 128u + 1);  // every host and the gateway
  EXPECT_EQ(t->pofan_key.size(), table.num_keys());
  EXPECT_EQ(t->f2_xorw.size(), 4u * 4);
  EXPECT_EQ(t->f2_add.size(), 4u * 4);
  size_t list = 0, none = 0, full = 0;
  for (const KeyEntry& e : t->pofan_key) {
    const uint32_t n = table.list(e.ptr).n;
    switch (e.action) {
      case KeyAction::kNoUplink:
        EXPECT_EQ(n, 0u);
        ++none;
        break;
      case KeyAction::kSetKey:
        EXPECT_EQ(n, 4u);
        EXPECT_EQ(e.last, 3);
        ++full;
        break;
      case KeyAction::kSetKeyDegraded:
        EXPECT_GT(n, 0u);
        EXPECT_LT(n, 4u);
        EXPECT_EQ(e.last, n - 1);
        list += n;
        break;
    }
  }
  EXPECT_EQ(list, t->uplink_list.size());
  EXPECT_EQ(none, 4u);  // e0-0 itself (dest 0), and e2-1 (dest 9) that lost every uplink
  EXPECT_GT(full, 0u);
  EXPECT_GT(list, 0u);
  // Four pipes of registers; the two with down ports differ (their own draws).
  ASSERT_EQ(t->pointers.size(), 4u);
  EXPECT_NE(t->pointers[0], t->pointers[1]);
}

TEST(BfrtWriter, JsonNamesEveryTableAndTheUpdateOnlyWhatChanged) {
  auto tree = FatTree::Make(8, 3);
  auto a = ComputePofanTables(*tree, SwitchId(0), {}, PofanOptions{.pipe_size = 2});
  auto b = ComputePofanTables(*tree, SwitchId(0), {26}, PofanOptions{.pipe_size = 2});
  ASSERT_TRUE(a && b);
  const nlohmann::json j = TablesToJson(*a);
  EXPECT_EQ(j["format"], kTablesFormat);
  std::set<std::string> names;
  for (const auto& t : j["tables"]) names.insert(t["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"pipe.Ingress.switch_config", "pipe.Ingress.route",
                                          "pipe.Ingress.f2_xorw", "pipe.Ingress.f2_add",
                                          "pipe.Ingress.uplink_list", "pipe.Ingress.pofan_key",
                                          "pipe.Ingress.port_mac", "pipe.Egress.ecn_threshold"}));
  EXPECT_EQ(j["registers"][0]["pipes"].size(), 4u);
  const std::string full = BfrtPythonScript(*a, "test");
  EXPECT_NE(full.find("ig.pointers.symmetric_mode_set(False)"), std::string::npos);
  EXPECT_NE(full.find("ig.pofan_key.add_with_set_key(dest=0x1, cls=0x0"), std::string::npos);
  // Failing e1-2's uplink 2 changes only dest 6's keys (data and ACK) and
  // adds their lists (3 uplinks each); no register write.
  const std::string upd = BfrtPythonUpdate(*a, *b, "test");
  EXPECT_EQ(upd.find("pointers"), std::string::npos);
  size_t adds = 0, mods = 0, dels = 0;
  std::istringstream in(upd);
  for (std::string line; std::getline(in, line);) {
    adds += line.find(".add_with_") != std::string::npos;
    mods += line.find(".mod_with_") != std::string::npos;
    dels += line.find(".delete(") != std::string::npos;
  }
  EXPECT_EQ(adds, 6u);
  EXPECT_EQ(mods, 2u);
  EXPECT_EQ(dels, 0u);
  EXPECT_LT(upd.find("uplink_list.add_with"), upd.find("pofan_key.mod_with"));
  // And back: the keys return to the order, the lists go after them.
  const std::string back = BfrtPythonUpdate(*b, *a, "test");
  EXPECT_LT(back.find("pofan_key.mod_with"), back.find("uplink_list.delete"));
}

}  // namespace
}  // namespace ofan::p4

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string flag = "--vectors-dir=";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind(flag, 0) == 0) ofan::p4::g_vectors_dir = a.substr(flag.size());
  }
  return RUN_ALL_TESTS();
}
