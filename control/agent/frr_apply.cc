#include "control/agent/frr_apply.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "control/agent/fabric_roles.h"

namespace ofan::agent {
namespace {

std::vector<std::string> Vtysh(const std::string& pathspace) {
  std::vector<std::string> argv{"vtysh"};
  if (!pathspace.empty()) {
    argv.emplace_back("-N");
    argv.push_back(pathspace);
  }
  return argv;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return MakeError(ErrorCode::kIo, fmt::format("cannot write {}: {}", tmp, strerror(errno)));
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return MakeError(ErrorCode::kIo, fmt::format("cannot write {}: {}", tmp, strerror(e)));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return MakeError(ErrorCode::kIo, fmt::format("cannot write {}: {}", tmp, strerror(e)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot rename {} to {}: {}", tmp, path, strerror(e)));
  }
  return {};
}

std::vector<std::string> ApplyArgv(const std::string& pathspace, const std::string& file) {
  std::vector<std::string> argv = Vtysh(pathspace);
  argv.emplace_back("-f");
  argv.push_back(file);
  return argv;
}

std::vector<std::string> RemoveNeighborsArgv(const std::string& pathspace, uint32_t asn,
                                             const std::vector<int>& ports) {
  std::vector<std::string> argv = Vtysh(pathspace);
  for (const std::string& c :
       {std::string("configure terminal"), fmt::format("router bgp {}", asn)}) {
    argv.emplace_back("-c");
    argv.push_back(c);
  }
  for (int p : ports) {
    argv.emplace_back("-c");
    argv.push_back("no neighbor " + PortIfName(p));
  }
  return argv;
}

std::vector<std::string> VtyshArgv(const std::string& pathspace, const std::string& command) {
  std::vector<std::string> argv = Vtysh(pathspace);
  argv.emplace_back("-c");
  argv.push_back(command);
  return argv;
}

}  // namespace ofan::agent
