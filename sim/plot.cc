#include "sim/plot.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

// OFAN_PLOT_DIR (from sim/meson.build): where the installed scripts are,
// relative to the executable's directory unless absolute.
#ifndef OFAN_PLOT_DIR
#error "OFAN_PLOT_DIR is defined by sim/meson.build"
#endif

namespace ofan::sim {

namespace {

bool RunPlot(const std::string& script, const std::string& json_path, const std::string& png) {
  std::vector<std::string> args = {"/usr/bin/python3", script, json_path, png};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);  // the child must not repeat buffered output
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

Status WriteAndPlot(const std::string& json_text, std::string json_path, const std::string& png,
                    const std::string& script) {
  if (json_path.empty()) {
    const auto dot = png.rfind('.');
    json_path =
        (dot == std::string::npos || png.find('/', dot) != std::string::npos ? png
                                                                             : png.substr(0, dot)) +
        ".json";
  }
  std::ofstream f(json_path);
  if (!f) return MakeError(ErrorCode::kIo, "cannot write " + json_path);
  f << json_text << "\n";
  f.close();
  if (!f) return MakeError(ErrorCode::kIo, "cannot write " + json_path);
  if (!png.empty() && !RunPlot(script, json_path, png)) {
    return MakeError(ErrorCode::kInternal,
                     "plotting failed (is python3-matplotlib installed? run scripts/setup.sh)");
  }
  return {};
}

Result<std::string> FindPlotScript(const std::string& name, const char* env) {
  namespace fs = std::filesystem;
  if (const char* v = std::getenv(env); v != nullptr && *v != '\0') {
    if (access(v, R_OK) == 0) return std::string(v);
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("--plot: {}={}: {}", env, v, std::strerror(errno)));
  }
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe_dir / name);
  const fs::path dir(OFAN_PLOT_DIR);
  if (dir.is_absolute()) {
    candidates.push_back(dir / name);
  } else if (!ec) {
    candidates.push_back((exe_dir / dir / name).lexically_normal());
  }
  std::string tried;
  for (const fs::path& p : candidates) {
    if (access(p.c_str(), R_OK) == 0) return p.string();
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  return MakeError(
      ErrorCode::kNotFound,
      fmt::format("--plot: cannot find {} (looked for {}); install ofan-sim with "
                  "meson install, or set {} to its path",
                  name, tried.empty() ? "nothing: /proc/self/exe unreadable" : tried, env));
}

}  // namespace ofan::sim
