// The command-line ending every ofan binary shares (CLI11): --help and
// --version print and end with 0, a bad command line prints CLI11's message
// and ends with 2, and a value the program itself refuses gets
// "PROGRAM: MESSAGE (see PROGRAM --help)" and 2. With OFAN_PARSE_ONLY set
// in the environment a command line that parsed ends the program with 0
// before it does anything: how tests/cli/doc_commands_test.py checks that
// every command line the docs show still parses.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string_view>

#include "common/units.h"

namespace ofan {

inline constexpr int kExitBadCommandLine = 2;

// OFAN_PARSE_ONLY is set: stop once the command line parsed.
inline bool ParseOnly() { return std::getenv("OFAN_PARSE_ONLY") != nullptr; }

// Parses into `app`; the exit code when the program should end now.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadCommandLine;
  }
  if (ParseOnly()) return 0;
  return std::nullopt;
}

// A --...-gbps option's check: a line rate as LinkRate::FromGbps takes it
// (with or_zero, 0 too: none), so that NaN, infinities and rates out of
// range get the one message everywhere.
inline CLI::Validator GbpsRate(bool or_zero = false) {
  return CLI::Validator(
      [or_zero](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
        if (or_zero) {
          auto r = LinkRate::FromGbpsOrZero(v, "a rate");
          return r.ok() ? "" : r.error().message;
        }
        auto r = LinkRate::FromGbps(v, "a rate");
        return r.ok() ? "" : r.error().message;
      },
      or_zero ? "GBPS (0: none)" : "GBPS");
}

// `help` is how the program's help is asked for (ofan-dp's comes after "--").
inline int UsageError(std::string_view program, std::string_view message,
                      std::string_view help = "--help") {
  std::cerr << program << ": " << message << "\n(see " << program << " " << help << ")\n";
  return kExitBadCommandLine;
}

}  // namespace ofan
