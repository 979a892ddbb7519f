#include "sim/workload.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace ofan::sim {

Result<std::vector<Flow>> MakeWorkload(const SimConfig& c, const lb::FatTree& tree) {
  const uint32_t n = static_cast<uint32_t>(tree.num_hosts());
  std::vector<Flow> flows;
  switch (c.workload) {
    case WorkloadKind::kPerm: {
      const std::vector<uint32_t> p = RandomDerangement(n, c.seed);
      for (uint32_t i = 0; i < n; ++i) flows.push_back({i, p[i], c.msg_bytes});
      break;
    }
    case WorkloadKind::kA2a:
      for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = 1; j < n; ++j) flows.push_back({i, (i + j) % n, c.msg_bytes});
      }
      break;
    case WorkloadKind::kPair:
      flows.push_back({0, n - 1, c.msg_bytes});
      flows.push_back({n - 1, 0, c.msg_bytes});
      break;
    case WorkloadKind::kMatrix: {
      std::ifstream f(c.matrix_file);
      if (!f) {
        return MakeError(ErrorCode::kIo,
                         fmt::format("cannot read matrix file '{}'", c.matrix_file));
      }
      std::stringstream ss;
      ss << f.rdbuf();
      return ParseMatrix(ss.str(), tree);
    }
  }
  return flows;
}

}  // namespace ofan::sim
