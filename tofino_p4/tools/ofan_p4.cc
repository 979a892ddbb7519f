// ofan-p4: the control plane of tofino_p4/pofan.p4 and its test vectors.
//
//   ofan-p4 tables --k 8 --switch e0-0 [--failed 26,141] [--policy pofan|ofan]
//                  [--pipe-size 2]
//                  [--format bfrt|json] [--update-from none|ID,...] [-o FILE]
//       every table entry and register value of one switch, as a bfrt_python
//       script ($SDE/run_bfshell.sh -b FILE) or as JSON; --update-from gives
//       the script that takes a loaded switch from those failed links to
//       --failed (tables only, no register write)
//   ofan-p4 vectors --out DIR | --check DIR
//       writes the test vectors (vectors.h), or checks that DIR holds what
//       the model makes now
//
// Exit codes: 0 done; 1 --check found a difference, or a file could not be
// written; 2 a bad command line (with a message).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/cli.h"
#include "common/main_guard.h"
#include "common/version.h"
#include "dataplane/lb/names.h"
#include "dataplane/lb/policy.h"
#include "tofino_p4/control/bfrt_writer.h"
#include "tofino_p4/control/pofan_tables.h"
#include "tofino_p4/model/vectors.h"

namespace ofan::p4 {
namespace {

constexpr const char* kProgram = "ofan-p4";
constexpr int kExitOk = 0, kExitFailed = 1;

std::string CommandLine(int argc, char** argv) {
  std::string s = kProgram;
  for (int i = 1; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) {
    std::cerr << kProgram << ": cannot write " << path << "\n";
    return false;
  }
  return true;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

struct TablesArgs {
  int k = 8, levels = 3;
  std::string sw = "e0-0";
  std::vector<uint32_t> failed;
  std::string update_from;  // "": a full load; "none" or "ID,ID,...": an update
  std::string policy = "pofan";
  uint32_t pipe_size = 4, pipes = 4;
  bool pipe_size_given = false;
  std::vector<uint16_t> dev_ports;
  int cpu_port = -1;
  uint64_t seed = 1;
  uint64_t ecn_bytes = uint64_t{100} * 1024;
  std::string format = "bfrt", out;
  bool no_registers = false;
};

int RunTables(const TablesArgs& a, const std::string& cmd) {
  auto tree = lb::FatTree::Make(a.k, a.levels);
  if (!tree) return UsageError(kProgram, tree.error().message);
  auto sw = lb::ParseSwitchName(*tree, a.sw);
  if (!sw) return UsageError(kProgram, "--switch: " + sw.error().message);
  PofanOptions o;
  auto policy = lb::ParsePolicy(a.policy);
  if (!policy) return UsageError(kProgram, "--policy: " + policy.error().message);
  o.policy = *policy;
  // Ofan's one table: every fat-tree port in one pipe, unless told otherwise
  // (which ComputePofanTables refuses with the reason).
  o.pipe_size = *policy == lb::PolicyKind::kOfan && !a.pipe_size_given ? static_cast<uint32_t>(a.k)
                                                                       : a.pipe_size;
  o.num_pipes = a.pipes;
  o.dev_ports = a.dev_ports;
  if (a.cpu_port >= 0) o.cpu_port = static_cast<uint16_t>(a.cpu_port);
  o.seed = a.seed;
  o.ecn_bytes = a.ecn_bytes;
  auto t = ComputePofanTables(*tree, *sw, a.failed, o);
  if (!t) return UsageError(kProgram, t.error().message);
  std::string text;
  if (!a.update_from.empty()) {
    if (a.format != "bfrt") return UsageError(kProgram, "--update-from writes a bfrt script");
    std::vector<uint32_t> before;
    if (a.update_from != "none") {
      std::istringstream in(a.update_from);
      for (std::string id; std::getline(in, id, ',');) {
        uint32_t v = 0;
        const auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
        if (ec != std::errc() || p != id.data() + id.size()) {
          return UsageError(kProgram,
                            "--update-from: '" + id + "' is not a link id (or give none)");
        }
        before.push_back(v);
      }
    }
    auto from = ComputePofanTables(*tree, *sw, before, o);
    if (!from) return UsageError(kProgram, "--update-from: " + from.error().message);
    text = BfrtPythonUpdate(*from, *t, cmd);
  } else if (a.format == "json") {
    text = TablesToJson(*t, !a.no_registers).dump(1) + "\n";
  } else {
    text = BfrtPythonScript(*t, cmd, !a.no_registers);
  }
  if (a.out.empty() || a.out == "-") {
    std::cout << text;
    return kExitOk;
  }
  return WriteFile(a.out, text) ? kExitOk : kExitFailed;
}

int RunVectors(const std::string& out_dir, const std::string& check_dir, bool json_out) {
  const bool check = !check_dir.empty();
  const std::string dir = check ? check_dir : out_dir;
  if (!check) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      std::cerr << kProgram << ": cannot make " << dir << ": " << ec.message() << "\n";
      return kExitFailed;
    }
  }
  int differ = 0;
  nlohmann::json report = nlohmann::json::array();
  auto say = [&](const std::string& path, const char* status) {
    if (json_out) {
      report.push_back({{"path", path}, {"status", status}});
    } else {
      std::cout << (std::string(status) == "ok" ? "ok  " : std::string(status) + " ") << path
                << "\n";
    }
  };
  for (const VectorSpec& spec : DefaultVectorSpecs()) {
    auto v = MakeVectors(spec);
    if (!v) {
      std::cerr << kProgram << ": " << spec.name << ": " << v.error().message << "\n";
      return kExitFailed;
    }
    const std::pair<std::string, const std::string*> files[] = {
        {spec.name + ".golden", &v->golden}, {spec.name + ".tables.json", &v->tables_json}};
    for (const auto& [file, text] : files) {
      const std::string path = (std::filesystem::path(dir) / file).string();
      if (check) {
        const auto disk = ReadFile(path);
        if (!disk) {
          std::cerr << kProgram << ": " << path << " is missing (ofan-p4 vectors --out " << dir
                    << " makes it)\n";
          ++differ;
          say(path, "missing");
        } else if (*disk != *text) {
          std::cerr << kProgram << ": " << path
                    << " is not what the model makes now (ofan-p4 vectors --out " << dir
                    << " remakes it; look at the diff before committing)\n";
          ++differ;
          say(path, "differs");
        } else {
          say(path, "ok");
        }
      } else {
        if (!WriteFile(path, *text)) return kExitFailed;
        say(path, "wrote");
      }
    }
  }
  if (json_out) std::cout << report.dump(1) << "\n";
  return differ ? kExitFailed : kExitOk;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "ofan-p4: the control plane of tofino_p4/pofan.p4 (POfan for Intel Tofino): its tables "
      "for one switch of a fat tree, and its test vectors"};
  app.set_version_flag("--version", std::string(kOfanVersion));
  app.require_subcommand(1);

  TablesArgs ta;
  auto* tables = app.add_subcommand("tables", "every table entry and register value of a switch");
  tables->add_option("--k", ta.k, "switch radix of the fat tree")->capture_default_str();
  tables->add_option("--levels", ta.levels, "3 (fat tree) or 2 (leaf-spine)")
      ->capture_default_str();
  tables->add_option("--switch", ta.sw, "switch name (e0-0, a1-0, c3, l0, s1) or id")
      ->capture_default_str();
  tables->add_option("--failed", ta.failed, "failed inter-switch link ids (ofan-topo describe)")
      ->delimiter(',');
  tables->add_option("--update-from", ta.update_from,
                     "failed links the switch was loaded with (ID,ID,... or none): write the "
                     "update from those to --failed");
  tables
      ->add_option("--policy", ta.policy,
                   "pofan (a pointer table per pipe) or ofan (one for the switch: every "
                   "fat-tree port in one pipe, --pipe-size K)")
      ->capture_default_str();
  auto* pipe_size = tables
                        ->add_option("--pipe-size", ta.pipe_size,
                                     "fat-tree ports per pipe (POfan's pipe size; ofan: K)")
                        ->capture_default_str();
  tables->add_option("--pipes", ta.pipes, "pipes of the device")->capture_default_str();
  tables
      ->add_option("--dev-ports", ta.dev_ports,
                   "device port of each fat-tree port 0..k-1 (default: port p on pipe p / "
                   "pipe size, 4 lanes apart)")
      ->delimiter(',');
  tables->add_option("--cpu-port", ta.cpu_port,
                     "CPU device port (default: 320 on 4 pipes, else 192)");
  tables
      ->add_option("--ecn-bytes", ta.ecn_bytes,
                   "CE-mark ECT packets that find more than this many bytes queued (0: never)")
      ->capture_default_str();
  tables->add_option("--seed", ta.seed, "POfan's seed (lb::PolicyConfig::seed)")
      ->capture_default_str();
  tables->add_option("--format", ta.format, "bfrt (a bfrt_python script) or json")
      ->check(CLI::IsMember({"bfrt", "json"}))
      ->capture_default_str();
  tables->add_flag("--no-registers", ta.no_registers, "leave the pointer register out");
  tables->add_option("-o,--out", ta.out, "output file (default: standard output)");

  std::string vec_out, vec_check;
  bool vec_json = false;
  auto* vectors = app.add_subcommand("vectors", "write or check tofino_p4/vectors/");
  auto* vo = vectors->add_option("--out", vec_out, "write the vectors into this folder");
  auto* vc = vectors->add_option("--check", vec_check, "check the vectors in this folder");
  vectors->add_flag("--json", vec_json, "machine-readable output");
  vo->excludes(vc);
  vc->excludes(vo);

  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  ta.pipe_size_given = pipe_size->count() > 0;
  if (tables->parsed()) {
    return RunTables(ta, CommandLine(argc, argv));
  }
  if (vec_out.empty() && vec_check.empty()) {
    return UsageError(kProgram, "vectors needs --out DIR or --check DIR");
  }
  return RunVectors(vec_out, vec_check, vec_json);
}

}  // namespace
}  // namespace ofan::p4

int main(int argc, char** argv) {
  return ofan::GuardMain("ofan-p4", 1, [&] { return ofan::p4::Main(argc, argv); });
}
