// main() of the test binaries that read golden fixtures: GoogleTest's, plus
// the fixtures' folder from --golden-dir=DIR.
#include <gtest/gtest.h>

#include "tests/golden/golden.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  ofan::golden::TakeDirArgument(argc, argv);
  return RUN_ALL_TESTS();
}
