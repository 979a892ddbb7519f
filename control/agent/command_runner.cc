#include "control/agent/command_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/steady_ms.h"

namespace ofan::agent {
namespace {

Error Io(std::string message) { return MakeError(ErrorCode::kIo, std::move(message)); }

// Waits for the child; kills it first when `kill_it`.
int Reap(pid_t pid, bool kill_it) {
  if (kill_it) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::string FormatArgv(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    const bool quote = a.empty() || a.find_first_of(" \t'\"") != std::string::npos;
    s += quote ? "'" + a + "'" : a;
  }
  return s;
}

Result<CommandOutput> ProcessRunner::Run(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("no command to run");
  const std::string what = FormatArgv(argv);
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Io(fmt::format("{}: pipe: {}", what, strerror(errno)));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Io(fmt::format("{}: pipe: {}", what, strerror(errno)));
  }
  // Written by the child only when exec fails: its errno.
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return Io(fmt::format("{}: pipe: {}", what, strerror(errno)));
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]})
      ::close(fd);
    return Io(fmt::format("{}: fork: {}", what, strerror(errno)));
  }
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    // The agent blocks SIGTERM/SIGINT for its signal handling; the child
    // gets the default disposition back.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(args[0], args.data());
    const int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);

  CommandOutput result;
  const int64_t deadline = SteadyMs() + timeout_ms_;
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_fds = 2;
  std::string failure;
  std::array<char, 65536> buf;
  while (open_fds > 0) {
    const int64_t left = deadline - SteadyMs();
    if (left <= 0) {
      failure = fmt::format("{}: still running after {} ms; killed", what, timeout_ms_);
      break;
    }
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left));
    if (n < 0) {
      if (errno == EINTR) continue;
      failure = fmt::format("{}: poll: {}", what, strerror(errno));
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t r = ::read(fds[i].fd, buf.data(), buf.size());
      if (r > 0) {
        sinks[i]->append(buf.data(), static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    if (result.out.size() + result.err.size() > kMaxCommandOutput) {
      failure = fmt::format("{}: more than {} bytes of output; killed", what, kMaxCommandOutput);
      break;
    }
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  const int status = Reap(pid, !failure.empty());
  int exec_errno = 0;
  const bool exec_failed =
      ::read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(exec_pipe[0]);
  if (exec_failed) {
    return MakeError(exec_errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                     fmt::format("{}: cannot run {}: {}", what, argv[0], strerror(exec_errno)));
  }
  if (!failure.empty()) return Io(failure);
  if (WIFSIGNALED(status)) {
    return Io(fmt::format("{}: killed by signal {}", what, WTERMSIG(status)));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return result;
}

}  // namespace ofan::agent
