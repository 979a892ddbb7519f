// The Python plot scripts ofan-sim runs for --plot (plot_sweep.py for
// --sweep, plot_paper.py for `ofan-sim paper`): where to find them and how to
// run them without a shell.
//
// Contract: FindPlotScript(name, env) returns $env if that variable is set
// (an unreadable file is an error), else `name` next to the executable (the
// build tree has a copy there), else in OFAN_PLOT_DIR (installed; relative to
// the executable's directory unless absolute). No source path is compiled in.
// The error names every place looked at.
#pragma once

#include <string>

#include "common/result.h"

namespace ofan::sim {

Result<std::string> FindPlotScript(const std::string& name, const char* env);

// Writes json_text to json_path (empty: png's path with .json for its
// extension), then, if png is not empty, runs python3 SCRIPT JSON PNG
// (without a shell: any character may be in a path). The error says which
// step failed.
Status WriteAndPlot(const std::string& json_text, std::string json_path, const std::string& png,
                    const std::string& script);

}  // namespace ofan::sim
