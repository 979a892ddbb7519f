#include "control/agent/lldp_neighbors.h"

#include <gtest/gtest.h>

#include "tests/control/agent/agent_test_util.h"

namespace ofan::agent {
namespace {

// The fixtures are lldpd 1.0.16's own output (capture_daemons.sh): agg a0-0 of
// a k=4 fat tree with 0, 1, 2 and 4 neighbours, announcing names and
// interface names as fabric switches do.
TEST(LldpNeighbors, RealLldpdOutputWithZeroOneTwoFourNeighbours) {
  const auto none = ParseLldpNeighbors(testing::ReadFixture("lldp_a0-0_0.json"));
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->empty());

  const auto one = ParseLldpNeighbors(testing::ReadFixture("lldp_a0-0_1.json"));
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(one->size(), 1u);
  const LldpNeighbor& n = (*one)[0];
  EXPECT_EQ(n.local_port, "p0");
  EXPECT_EQ(n.via, "LLDP");
  EXPECT_EQ(n.chassis_name, "e0-0");
  EXPECT_EQ(n.chassis_id_type, "mac");
  EXPECT_EQ(n.chassis_id.size(), 17u);
  EXPECT_EQ(n.port_id, "p2");
  EXPECT_EQ(n.port_id_type, "ifname");
  EXPECT_EQ(n.port_descr, "p2");
  ASSERT_TRUE(n.ttl_s.has_value());
  EXPECT_GT(*n.ttl_s, 0u);
  EXPECT_TRUE(n.age_s.has_value());

  const auto two = ParseLldpNeighbors(testing::ReadFixture("lldp_a0-0_2.json"));
  ASSERT_TRUE(two.ok()) << two.error().message;
  ASSERT_EQ(two->size(), 2u);

  const auto four = ParseLldpNeighbors(testing::ReadFixture("lldp_a0-0_4.json"));
  ASSERT_TRUE(four.ok()) << four.error().message;
  ASSERT_EQ(four->size(), 4u);
  std::vector<std::string> seen;
  for (const LldpNeighbor& x : *four)
    seen.push_back(x.local_port + ">" + x.chassis_name + ":" + x.port_id);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"p0>e0-0:p2", "p1>e0-1:p2", "p2>c0:p0", "p3>c1:p0"}));
}

TEST(LldpNeighbors, PlainJsonIsRefusedWithAHint) {
  // lldpcli -f json turns a list of one into an object: the shape json0 avoids.
  const auto r = ParseLldpNeighbors(testing::ReadFixture("lldp_a0-0_1_plain.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("-f json rather than -f json0"), std::string::npos)
      << r.error().message;
}

TEST(LldpNeighbors, OptionalFieldsMayBeMissing) {
  const auto r = ParseLldpNeighbors(R"({"lldp":[{"interface":[
      {"name":"p3","chassis":[{"id":[{"type":"local","value":"x"}]}],
       "port":[{"id":[{"type":"mac","value":"02:00:00:01:02:01"}]}],
       "ttl":[{"value":"120"}]}]}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].chassis_name, "");
  EXPECT_EQ((*r)[0].port_id_type, "mac");
  EXPECT_EQ((*r)[0].ttl_s, 120u);  // lldpd's later releases: the TTL on the interface
  EXPECT_FALSE((*r)[0].age_s.has_value());
  const auto empty = ParseLldpNeighbors(R"({"lldp":[]})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(LldpNeighbors, BadInputIsATypedErrorThatSaysWhat) {
  testing::ExpectRefused(
      [](const std::string& t) { return ParseLldpNeighbors(t); }, "lldpcli json0",
      {
          {"", "empty input"},
          {"   \n", "empty input"},
          {"lldp", "not JSON"},
          {"{\"lldp\":", "not JSON"},
          {"[]", "not an object with 'lldp'"},
          {R"({"lldp":{"interface":{}}})", "-f json rather than -f json0"},
          {R"({"lldp":[1]})", "an element is not an object"},
          {R"({"lldp":[{"interface":{"p0":{}}}]})", "-f json rather than -f json0"},
          {R"({"lldp":[{"interface":[7]}]})", "interface #0: not an object"},
          {R"({"lldp":[{"interface":[{"via":"LLDP"}]}]})", "no interface 'name'"},
          {R"({"lldp":[{"interface":[{"name":"p0"}]}]})", "interface p0: no 'chassis'"},
          {R"({"lldp":[{"interface":[{"name":"p0","chassis":{}}]}]})", "'chassis' is not a list"},
          {R"({"lldp":[{"interface":[{"name":"p0","chassis":[{"name":[{"v":1}]}]}]}]})",
           "'name' has no string 'value'"},
          {R"({"lldp":[{"interface":[{"name":"p0","chassis":[{}]}]}]})", "interface p0: no 'port'"},
          {R"({"lldp":[{"interface":[{"name":"p0","chassis":[{}],"port":[{"ttl":[{"value":"x"}]}]}]}]})",
           "ttl 'x' is not a number"},
          {R"({"lldp":[{"interface":[{"name":"p0","age":"soon","chassis":[{}],"port":[{}]}]}]})",
           "age 'soon'"},
          {R"({"lldp":[{"interface":[{"name":"p0","chassis":[{"id":[{"type":5,"value":"x"}]}]}]}]})",
           "'type' that is not a string"},
          {"{\"lldp\":[{\"interface\":[{\"name\":\"p\xc3\x28\"}]}]}", "not text: byte 0xc3"},
          {std::string("{\"lldp\":\0}", 10), "not text: byte 0x00 at offset 8"},
          {std::string(70, '[') + std::string(70, ']'), "nested deeper than 64"},
      });
}

TEST(LldpNeighbors, AgeText) {
  EXPECT_EQ(ParseLldpAge("0 day, 00:00:04"), 4u);
  EXPECT_EQ(ParseLldpAge("2 days, 01:02:03"), 2u * 86400 + 3723);
  for (const char* bad : {"", "0 day", "0 day, 0:00:04", "x day, 00:00:04", "0 day, 24:00:00",
                          "0 day, 00:60:00", "0 day,00:00:04", "1 week, 00:00:01"}) {
    EXPECT_FALSE(ParseLldpAge(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace ofan::agent
