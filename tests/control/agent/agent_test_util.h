// What the agent's tests share: the captured fixtures' folder (meson passes
// it as OFAN_AGENT_FIXTURES) and reading a fixture whole.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ofan::agent::testing {

inline std::string FixturePath(const std::string& name) {
  const char* dir = std::getenv("OFAN_AGENT_FIXTURES");
  return std::string(dir != nullptr ? dir : "tests/control/agent/fixtures") + "/" + name;
}

inline std::string ReadFixture(const std::string& name) {
  std::ifstream in(FixturePath(name), std::ios::binary);
  EXPECT_TRUE(in.good()) << "no fixture " << FixturePath(name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every input of `cases` (input, a part of the message) is refused by
// `parse` with a message that starts with `what: ` and holds that part.
template <class Parse>
void ExpectRefused(Parse parse, const std::string& what,
                   const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [text, want] : cases) {
    const auto r = parse(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(want), std::string::npos)
        << "input " << text << "\nmessage " << r.error().message;
    EXPECT_EQ(r.error().message.rfind(what + ": ", 0), 0u) << r.error().message;
  }
}

}  // namespace ofan::agent::testing
