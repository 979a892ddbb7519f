// EAL for in-process tests and fuzz targets: no hugepages (everything in
// anonymous memory, no hugepage files to clean up; --no-huge cannot be
// combined with --in-memory), no PCI, quiet logs.
#pragma once

#include <rte_eal.h>

#include <string>
#include <vector>

namespace ofan::dp::testing {

// rte_eal_init for program `prog` on `lcores` ("0" or "0,1") with `mem_mb`
// of memory; false if it failed.
inline bool InitTestEal(const char* prog, const char* lcores, const char* mem_mb) {
  std::vector<std::string> args = {prog,
                                   "--no-huge",
                                   "--no-shconf",
                                   "-m",
                                   mem_mb,
                                   "--no-pci",
                                   "-l",
                                   lcores,
                                   "--log-level=lib.eal:error",
                                   "--log-level=pmd.*:error"};
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (auto& a : args) argv.push_back(a.data());
  return rte_eal_init(static_cast<int>(argv.size()), argv.data()) >= 0;
}

}  // namespace ofan::dp::testing
