// The command-line ending every ofan binary shares (CLI11): --help and
// --version print and end with 0, a bad command line prints CLI11's message
// and ends with 2, and a value the program itself refuses gets
// "PROGRAM: MESSAGE (see PROGRAM --help)" and 2.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string_view>

namespace ofan {

inline constexpr int kExitBadCommandLine = 2;

// Parses into `app`; the exit code when the program should end now.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadCommandLine;
  }
  return std::nullopt;
}

// `help` is how the program's help is asked for (ofan-dp's comes after "--").
inline int UsageError(std::string_view program, std::string_view message,
                      std::string_view help = "--help") {
  std::cerr << program << ": " << message << "\n(see " << program << " " << help << ")\n";
  return kExitBadCommandLine;
}

}  // namespace ofan
