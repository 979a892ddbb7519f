// ofan-mpi-bench: Open MPI's own collectives (MPI_Allreduce, MPI_Alltoall)
// timed and checked, one row per operation and size, as nccl-tests reports
// them (algorithm and bus bandwidth). What `ofan-emu mpirun` runs across the
// rxe VM hosts (emu/fabric/mpi.py, docs/verbs.md); any MPI launcher works.
//
// expects:  MPI_COMM_WORLD of >= 1 rank; the same arguments on every rank
// gives:    rank 0 prints the rows (a table, or one JSON object with --json);
//           every element of every result is checked against what the
//           ranks' known inputs make it (exact: integers in doubles and in
//           int32)
//           each row: the mean time per call and its median, minimum and
//           maximum (a call's time is its slowest rank's: every call
//           starts after a barrier)
// exit:     0 all results right; 1 a result wrong (each other rank's count
//           of wrong elements on stderr, the total in rank 0's rows); 2 a
//           bad command line (every rank, before MPI
//           traffic beyond MPI_Init)
//
// Bus bandwidth, as nccl-tests defines it (its PERFORMANCE.md): allreduce
// algbw * 2 (n - 1) / n, alltoall algbw * (n - 1) / n, where algbw = the
// per-rank buffer / the slowest rank's time per call.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/main_guard.h"
#include "common/units.h"

namespace {

constexpr const char* kProgram = "ofan-mpi-bench";

struct Options {
  std::string ops = "allreduce,alltoall";
  std::string sizes = "64KiB,256KiB,1MiB,4MiB";
  int iters = 5;
  int warmup = 1;
  bool json = false;
};

struct Row {
  std::string op;
  uint64_t bytes = 0;  // per rank's buffer
  double us = 0;       // per call, the slowest rank, the mean over the calls
  double us_median = 0, us_min = 0, us_max = 0;  // the same, over the calls
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  uint64_t wrong = 0;  // elements that differ, summed over ranks
};

// Allreduce's inputs: rank r's element i = r + 1 + (i % 7); the sum over n
// ranks is n (n + 1) / 2 + n (i % 7), exact in a double.
double AllreduceIn(int rank, uint64_t i) { return rank + 1 + static_cast<double>(i % 7); }
double AllreduceOut(int n, uint64_t i) {
  return n * (n + 1) / 2.0 + n * static_cast<double>(i % 7);
}
// Alltoall's: rank r's element j of the block for rank d = a value naming
// (r, d, j); what d receives from r is that block.
int32_t AlltoallIn(int r, int d, uint64_t j) {
  return static_cast<int32_t>(
      (static_cast<uint64_t>(r) * 7919 + static_cast<uint64_t>(d) * 131 + j) & 0x7fffffff);
}

// This rank's seconds in each timed call of `call`, each call after a
// barrier so that every rank starts it together.
template <class Call>
std::vector<double> SecondsPerCall(const Options& o, Call&& call) {
  std::vector<double> t;
  t.reserve(static_cast<size_t>(o.iters));
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    call();
    if (it >= o.warmup) t.push_back(MPI_Wtime() - t0);
  }
  return t;
}

// Each call's time is its slowest rank's (on rank 0); mean, median, min and
// max of those in microseconds. Collective: every rank calls it.
void CallTimes(const std::vector<double>& mine, Row& r) {
  std::vector<double> slowest(mine.size());
  MPI_Reduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, 0,
             MPI_COMM_WORLD);
  std::sort(slowest.begin(), slowest.end());
  double sum = 0;
  for (double s : slowest) sum += s;
  const size_t n = slowest.size();
  r.us = sum / static_cast<double>(n) * 1e6;
  r.us_median = (n % 2 ? slowest[n / 2] : (slowest[n / 2 - 1] + slowest[n / 2]) / 2) * 1e6;
  r.us_min = slowest.front() * 1e6;
  r.us_max = slowest.back() * 1e6;
}

// nccl-tests' bus bandwidth over algorithm bandwidth (the top of this file).
double BusFactor(const std::string& op, int n) {
  return (op == "allreduce" ? 2.0 : 1.0) * (n - 1) / n;
}

Row RunAllreduce(uint64_t bytes, const Options& o, int rank, int n) {
  const uint64_t count = std::max<uint64_t>(1, bytes / sizeof(double));
  std::vector<double> in(count), out(count);
  for (uint64_t i = 0; i < count; ++i) in[i] = AllreduceIn(rank, i);
  const auto t = SecondsPerCall(o, [&] {
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
  });
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i) wrong += out[i] != AllreduceOut(n, i);
  Row r{.op = "allreduce", .bytes = count * sizeof(double), .wrong = wrong};
  CallTimes(t, r);
  return r;
}

Row RunAlltoall(uint64_t bytes, const Options& o, int rank, int n) {
  // bytes is the whole send buffer: a block of bytes / n for each rank.
  const uint64_t per = std::max<uint64_t>(1, bytes / sizeof(int32_t) / n);
  std::vector<int32_t> in(per * n), out(per * n);
  for (int d = 0; d < n; ++d) {
    for (uint64_t j = 0; j < per; ++j) in[d * per + j] = AlltoallIn(rank, d, j);
  }
  const auto t = SecondsPerCall(o, [&] {
    MPI_Alltoall(in.data(), static_cast<int>(per), MPI_INT32_T, out.data(), static_cast<int>(per),
                 MPI_INT32_T, MPI_COMM_WORLD);
  });
  uint64_t wrong = 0;
  for (int s = 0; s < n; ++s) {
    for (uint64_t j = 0; j < per; ++j) wrong += out[s * per + j] != AlltoallIn(s, rank, j);
  }
  Row r{.op = "alltoall", .bytes = per * n * sizeof(int32_t), .wrong = wrong};
  CallTimes(t, r);
  return r;
}

// Every rank parses the same command line; rank 0 alone says what is wrong.
struct Plan {
  std::vector<std::string> ops;
  std::vector<uint64_t> sizes;
};

std::optional<std::string> MakePlan(const Options& o, Plan& p) {
  for (const auto& op : CLI::detail::split(o.ops, ',')) {
    if (op != "allreduce" && op != "alltoall") {
      return "--ops: '" + op + "' is not allreduce or alltoall";
    }
    p.ops.push_back(op);
  }
  for (const auto& s : CLI::detail::split(o.sizes, ',')) {
    auto v = ofan::ParseSize(s);
    if (!v.ok()) return "--sizes: " + v.error().message;
    if (*v == 0 || *v > (1ull << 30)) return "--sizes: '" + s + "' is not in 1 B .. 1 GiB";
    p.sizes.push_back(*v);
  }
  if (p.ops.empty() || p.sizes.empty()) return "--ops and --sizes: at least one each";
  return std::nullopt;
}

int Run(int argc, char** argv) {
  CLI::App app{"Open MPI's MPI_Allreduce and MPI_Alltoall, timed and checked", kProgram};
  Options o;
  app.add_option("--ops", o.ops, "operations, comma-separated: allreduce, alltoall")
      ->capture_default_str();
  app.add_option("--sizes", o.sizes, "buffer sizes per rank, comma-separated (64KiB, 4MiB)")
      ->capture_default_str();
  app.add_option("--iters", o.iters, "timed calls per row")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls first")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_flag("--json", o.json, "one JSON object on stdout (rank 0)");
  if (auto code = ofan::ParseCommandLine(app, argc, argv)) return *code;
  Plan plan;
  const auto bad = MakePlan(o, plan);

  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (bad) {
    if (rank == 0) ofan::UsageError(kProgram, *bad);
    MPI_Finalize();
    return ofan::kExitBadCommandLine;
  }
  std::vector<Row> rows;
  for (const auto& op : plan.ops) {
    for (uint64_t bytes : plan.sizes) {
      Row r = op == "allreduce" ? RunAllreduce(bytes, o, rank, n) : RunAlltoall(bytes, o, rank, n);
      uint64_t wrong_sum = 0;
      MPI_Reduce(&r.wrong, &wrong_sum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
      if (r.wrong && rank != 0) {
        std::fprintf(stderr, "%s: rank %d: %s of %llu B: %llu elements wrong\n", kProgram, rank,
                     op.c_str(), static_cast<unsigned long long>(r.bytes),
                     static_cast<unsigned long long>(r.wrong));
      }
      r.wrong = wrong_sum;
      r.algbw_gbps = r.us > 0 ? r.bytes * 8.0 / (r.us * 1e3) : 0;
      r.busbw_gbps = r.algbw_gbps * BusFactor(op, n);
      rows.push_back(r);
    }
  }
  uint64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong;
  if (rank == 0) {
    if (o.json) {
      nlohmann::json j = {{"ranks", n},
                          {"iters", o.iters},
                          {"warmup", o.warmup},
                          {"verified", wrong == 0},
                          {"rows", nlohmann::json::array()}};
      for (const auto& r : rows) {
        j["rows"].push_back({{"op", r.op},
                             {"bytes", r.bytes},
                             {"time_us", r.us},
                             {"time_us_median", r.us_median},
                             {"time_us_min", r.us_min},
                             {"time_us_max", r.us_max},
                             {"algbw_gbps", r.algbw_gbps},
                             {"busbw_gbps", r.busbw_gbps},
                             {"wrong_elements", r.wrong}});
      }
      std::cout << j.dump() << "\n";
    } else {
      std::printf("# %s: %d ranks, %d timed calls per row after %d untimed\n", kProgram, n, o.iters,
                  o.warmup);
      std::printf("%-10s %12s %12s %12s %12s %12s %12s %8s\n", "op", "bytes", "time_us",
                  "median_us", "max_us", "algbw_Gbps", "busbw_Gbps", "wrong");
      for (const auto& r : rows) {
        std::printf("%-10s %12llu %12.1f %12.1f %12.1f %12.4f %12.4f %8llu\n", r.op.c_str(),
                    static_cast<unsigned long long>(r.bytes), r.us, r.us_median, r.us_max,
                    r.algbw_gbps, r.busbw_gbps, static_cast<unsigned long long>(r.wrong));
      }
      std::printf("# %s\n", wrong == 0 ? "every result checked: right" : "results WRONG");
    }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return ofan::GuardMain(kProgram, 1, [&] { return Run(argc, argv); });
}
