// `ofan-coll merge [FILE...]`: one collective's result from the partial
// results of the processes that ran it together (one per rank with
// --transport verbs, one per uroce process), as their callers collect
// them: each FILE (or stdin, with none or "-") holds one JSON object per
// line, as `ofan-coll --json` prints it.
//
// expects:  ResultJson objects (report.h), possibly with "rxe_counters"
//           (name -> count) and "transport"
// gives:    one JSON object on stdout: MergeResults' result, "parts" (how
//           many were merged), and "rxe_counters" summed by name over the
//           parts that have them; exit 0 when it completed and verified, 1
//           when a part failed or they are not one collective (its "error"
//           and stderr say which), 2 when an input cannot be read or is not
//           a result
#pragma once

#include <string>
#include <vector>

namespace ofan::emu {

int RunMerge(const std::vector<std::string>& files);

}  // namespace ofan::emu
