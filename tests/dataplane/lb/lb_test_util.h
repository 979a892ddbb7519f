// Helpers shared by the LB tests: fat trees, seeded failure sets and masks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "common/rng.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/types.h"

namespace ofan::lb::testing {

inline PortMask AllPorts(uint32_t w) { return w >= 64 ? ~PortMask{0} : (PortMask{1} << w) - 1; }

inline FatTree MakeTree(int k, int levels) {
  Result<FatTree> r = FatTree::Make(k, levels);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();  // throws (a test failure) if not ok
}

// Each inter-switch link fails with probability p.
inline LinkSet RandomFailures(const FatTree& t, double p, uint64_t seed) {
  LinkSet f(t.num_links());
  Rng rng(seed);
  for (uint32_t l = 0; l < t.num_links(); ++l) {
    if (rng.Uniform() < p) f.set_failed(l);
  }
  return f;
}

// Valid-uplink masks of every flavour: empty, full, one port, sparse, dense.
inline std::vector<PortMask> RandomMasks(uint32_t w, uint32_t nd, Rng& rng) {
  std::vector<PortMask> m(nd);
  for (uint32_t d = 0; d < nd; ++d) {
    switch (rng.Below(5)) {
      case 0:
        m[d] = 0;
        break;
      case 1:
        m[d] = AllPorts(w);
        break;
      case 2:
        m[d] = PortMask{1} << rng.Below(w);
        break;
      default: {
        const uint64_t a = rng.Next(), b = rng.Next();
        m[d] = (rng.Below(2) ? a & b : a | b) & AllPorts(w);
        break;
      }
    }
  }
  return m;
}

}  // namespace ofan::lb::testing
