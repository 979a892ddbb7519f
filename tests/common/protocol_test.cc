#include "common/protocol/protocol.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ofan::control {
namespace {

// The wire names ofan-dp and ofanctl have always used, in the table's order.
constexpr const char* kWireNames[] = {
    "version",      "status",       "counters",      "ports",
    "queues",       "pointers",     "set_policy",    "set_port",
    "load_tables",  "reset_queues", "capture_start", "capture_status",
    "capture_stop", "switch_admin", "agent_report",  "agent"};

TEST(Protocol, EveryCommandNameParsesBackToItsCommand) {
  ASSERT_EQ(kNumCommands, std::size(kWireNames));
  std::set<std::string_view> seen;
  for (size_t i = 0; i < kNumCommands; ++i) {
    const auto c = static_cast<Command>(i);
    EXPECT_EQ(CommandName(c), kWireNames[i]);
    const auto back = ParseCommand(CommandName(c));
    ASSERT_TRUE(back.has_value()) << CommandName(c);
    EXPECT_EQ(*back, c);
    EXPECT_TRUE(seen.insert(CommandName(c)).second) << "twice: " << CommandName(c);
  }
  static_assert(ParseCommand("set_port") == Command::kSetPort);
  static_assert(CommandName(Command::kResetQueues) == "reset_queues");
}

TEST(Protocol, UnknownNamesAreRefused) {
  for (const char* bad : {"", "raw", "frobnicate", "Status", "status ", " status", "set-policy",
                          "set_policy\n", "reset_queue", "reset_queuess"}) {
    EXPECT_FALSE(ParseCommand(bad).has_value()) << "'" << bad << "'";
  }
  EXPECT_FALSE(ParseCommand(std::string_view("status\0", 7)).has_value());
}

TEST(Protocol, UnknownCommandMessageListsEveryCommand) {
  EXPECT_EQ(CommandList(),
            "version, status, counters, ports, queues, pointers, set_policy, set_port, "
            "load_tables, reset_queues, capture_start, capture_status, capture_stop, "
            "switch_admin, agent_report, agent");
  const std::string m = UnknownCommandMessage("frobnicate");
  EXPECT_EQ(m.rfind("unknown command 'frobnicate' (", 0), 0u) << m;
  for (const std::string_view name : kCommandNames) {
    EXPECT_NE(m.find(name), std::string::npos) << name;
  }
}

TEST(Protocol, EveryReplyErrorNameParsesBack) {
  const char* wire[] = {"bad_request", "unsupported_version", "unknown_command", "bad_argument",
                        "failed"};
  ASSERT_EQ(kReplyErrorNames.size(), std::size(wire));
  for (size_t i = 0; i < std::size(wire); ++i) {
    const auto e = static_cast<ReplyError>(i);
    EXPECT_EQ(ReplyErrorName(e), wire[i]);
    EXPECT_EQ(ParseReplyError(wire[i]), e) << wire[i];
  }
  for (const char* bad : {"", "ok", "bad-request", "BAD_REQUEST", "failed "}) {
    EXPECT_FALSE(ParseReplyError(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(Protocol, ResultErrorsMapToReplyErrors) {
  EXPECT_EQ(ReplyErrorOf(ErrorCode::kInvalidArgument), ReplyError::kBadArgument);
  EXPECT_EQ(ReplyErrorOf(ErrorCode::kNotFound), ReplyError::kBadArgument);  // e.g. a port
  EXPECT_EQ(ReplyErrorOf(ErrorCode::kUnsupported), ReplyError::kBadArgument);
  EXPECT_EQ(ReplyErrorOf(ErrorCode::kInfeasible), ReplyError::kBadArgument);
  EXPECT_EQ(ReplyErrorOf(ErrorCode::kIo), ReplyError::kFailed);
  EXPECT_EQ(ReplyErrorOf(ErrorCode::kInternal), ReplyError::kFailed);
}

TEST(Protocol, DefaultSocketPath) {
  EXPECT_EQ(kDefaultSocketDir, "/run/ofan");
  EXPECT_EQ(DefaultSocketPath("ofan-dp"), "/run/ofan/ofan-dp.sock");
  EXPECT_EQ(DefaultSocketPath("e0"), "/run/ofan/e0.sock");
  EXPECT_EQ(DefaultSocketPath("<name>"), "/run/ofan/<name>.sock");
}

TEST(Protocol, Version) {
  EXPECT_EQ(kProtocolVersion, 1);
  EXPECT_EQ(kMaxRequestBytes, size_t{1} << 20);
}

}  // namespace
}  // namespace ofan::control
