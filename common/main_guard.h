// The last resort of a binary's main(). Errors are returned (Result), not
// thrown; what a library may still throw (allocation, JSON, formatting) is
// reported on stderr with the program's name and ends in a meaningful exit
// code rather than in std::terminate().
#pragma once

#include <exception>
#include <iostream>
#include <string_view>

namespace ofan {

template <class F>
int GuardMain(std::string_view program, int exit_code, F&& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return exit_code;
  }
}

}  // namespace ofan
