// main() of the in-process DPDK unit tests: GoogleTest with the test EAL.
#include <gtest/gtest.h>

#include "tests/dataplane/eal_env.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new ofan::dp::testing::EalEnvironment);
  return RUN_ALL_TESTS();
}
