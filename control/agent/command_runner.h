// The one way ofan-agent runs another program (lldpcli, ip, vtysh): argv in,
// exit status and output out, behind an interface so that tests substitute
// captured outputs (tests/control/agent/fixtures/) for the daemons.
//
// expects:  argv[0] a program name found on PATH (or a path); no shell.
// gives:    the exit code, stdout and stderr of a program that ran (a nonzero
//           exit is a CommandOutput, not an error), or kIo/kNotFound when it
//           could not be started, was killed or outlived `timeout_ms`
//           (then it is killed: the agent's cycle must not hang on a stuck
//           vtysh). Output beyond kMaxCommandOutput is refused (kIo).
// why:      one seam for every outside input keeps the cycle testable without
//           root or daemons (tests/control/agent/), and one place bounds
//           what a misbehaving program can cost the agent.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"

namespace ofan::agent {

inline constexpr size_t kMaxCommandOutput = size_t{16} << 20;
inline constexpr int kDefaultCommandTimeoutMs = 5000;

struct CommandOutput {
  int exit_code = 0;
  std::string out;
  std::string err;
};

// "lldpcli -u /run/x.sock -f json0 show neighbors": argv for messages, words
// with spaces quoted.
std::string FormatArgv(const std::vector<std::string>& argv);

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual Result<CommandOutput> Run(const std::vector<std::string>& argv) = 0;
};

// fork + execvp, stdin from /dev/null, stdout and stderr read until both
// close, the child reaped (never left behind).
class ProcessRunner final : public CommandRunner {
 public:
  explicit ProcessRunner(int timeout_ms = kDefaultCommandTimeoutMs) : timeout_ms_(timeout_ms) {}
  Result<CommandOutput> Run(const std::vector<std::string>& argv) override;

 private:
  int timeout_ms_;
};

}  // namespace ofan::agent
