// `ofan-sim paper`: runs one of the paper's §6 figures (figures.h) in
// process and prints its rows beside the paper's claims.
//
//   ofan-sim paper --list [--json]
//   ofan-sim paper --figure F [--size tiny|default|full | --full] [--seeds N]
//                  [--jobs N] [--json] [--plot FILE.png] [--no-progress]
//
// Contract: progress goes to stderr, results to stdout: a table (one row per
// point, means over seeds), then one line per claim ("holds" / "does not
// hold" / "not computed": a row it needs is missing or measured nothing;
// the measured numbers), then the notes; with --json one object with
// `figure`, `size`, `seeds`, `rows`, `claims` (each `text`, `holds`,
// `verdict` and `measured`; `holds` is false unless the verdict is
// "holds") and `notes`, deterministic for a given size and seeds (no
// timings in it). Exit codes: 0 done (claims that do not hold or were not
// computed are findings, not failures); 1 a run or the plot
// failed; 2 bad command line, or a figure the engine cannot run yet (one
// line saying what is missing).
#pragma once

namespace ofan::sim {

int PaperMain(int argc, char** argv);

}  // namespace ofan::sim
