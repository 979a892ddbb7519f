// PofanTables written for Intel's SDE, in the program's names (pofan.p4):
//  - JSON ("ofan-p4-tables-1"): tables and entries with their key and data
//    field names as BF Runtime knows them, and the register per pipe; what
//    tofino_p4/ptf/pofan_vectors_test.py loads through bfrt_grpc, and what a
//    user's own BF Runtime client can load;
//  - a bfrt_python script: `$SDE/run_bfshell.sh -b FILE` loads it into a
//    running switch (the pointer register asymmetric, one value per pipe).
// An update script (failures changed) touches only the entries that
// changed, adding list entries before the keys that use them and deleting
// them after, and never the register (pofan.p4's comment says why none is
// needed).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tofino_p4/control/pofan_tables.h"

namespace ofan::p4 {

inline constexpr const char* kTablesFormat = "ofan-p4-tables-1";

nlohmann::json TablesToJson(const PofanTables& t, bool with_registers = true);
std::string BfrtPythonScript(const PofanTables& t, const std::string& command_line,
                             bool with_registers = true);
// From the tables loaded (`from`) to `to` (same switch and options).
std::string BfrtPythonUpdate(const PofanTables& from, const PofanTables& to,
                             const std::string& command_line);

}  // namespace ofan::p4
