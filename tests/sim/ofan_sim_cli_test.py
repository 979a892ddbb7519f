#!/usr/bin/env python3
"""End-to-end checks of the ofan-sim command line: --help, errors and exit
codes, --json shape, seeds, sweeps and plots, matrix files."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SIM = os.environ.get("OFAN_SIM", "build/sim/ofan-sim")


def run(*args, check_rc=None):
    p = subprocess.run([SIM, "--no-progress", *args], capture_output=True, text=True, timeout=300)
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(f"{args}: rc {p.returncode} != {check_rc}\n{p.stdout}\n{p.stderr}")
    return p


class Cli(unittest.TestCase):
    def test_help_documents_every_option(self):
        p = subprocess.run([SIM, "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        for opt in ["--k", "--levels", "--lb", "--pipe-size", "--workload", "--msg", "--seeds",
                    "--seed", "--json", "--link-gbps", "--latency-us", "--payload", "--header",
                    "--ack-bytes", "--gap-bytes", "--load", "--buffer", "--ecn", "--fail-prob",
                    "--sweep", "--msgs", "--lbs", "--plot", "--matrix", "--host", "--moe-matrix",
                    "--eplb", "--moe-scale", "--model", "--fsdp-layers", "--fsdp-phases", "--cca",
                    "--init-window", "--lb-tiers", "--lb-placement", "--lb-rest", "--pfc",
                    "--pfc-quanta", "--pfcwd-detect-ms", "--pfcwd-restore-ms", "--pfcwd-action",
                    "--incast-senders", "--reorder", "--reorder-kb", "--reorder-timeout-us",
                    "--receiver"]:
            self.assertIn(opt, p.stdout, opt)

    def test_version_is_the_projects(self):
        p = subprocess.run([SIM, "--version"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stdout, f"ofan-sim {os.environ['OFAN_VERSION']}\n")

    def test_bad_arguments_exit_2_with_a_message(self):
        for args in (["--k", "5"], ["--k", "66"], ["--levels", "4"], ["--lb", "nope"],
                     ["--msg", "12XB"], ["--load", "0"], ["--workload", "x"], ["--bogus"],
                     ["--workload", "matrix"], ["--sweep", "--lbs", "nope"], ["--seeds", "0"],
                     ["--cca", "dctcp", "--init-window", "0"], ["--init-window", "17"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
            self.assertTrue(p.stderr.strip(), args)

    def test_json_has_the_stable_fields(self):
        p = run("--k", "4", "--lb", "ofan", "--msg", "64KiB", "--json", check_rc=0)
        d = json.loads(p.stdout)
        for key in ["cct_us", "cct_lower_bound_us", "cct_inflation", "queue_max_pkts",
                    "queue_avg_pkts", "stages", "events", "wall_s"]:
            self.assertIn(key, d)
        self.assertEqual(set(d["stages"]), {"E->A", "A->C", "C->A", "A->E", "E->H"})
        self.assertGreaterEqual(d["cct_us"], d["cct_lower_bound_us"])

    def test_every_policy_runs(self):
        listed = json.loads(run("--list-policies", "--json", check_rc=0).stdout)
        names = [p["name"] for p in listed]
        self.assertIn("ofan", names)
        text = run("--list-policies", check_rc=0).stdout
        self.assertEqual([ln.split()[0] for ln in text.splitlines()], names)
        extra = ["drb", "ethereal", "reps", "spray", "4ofan"]  # host schemes, NxOfan
        for lb in names + [a for p in listed for a in p["aliases"]] + extra:
            d = json.loads(run("--k", "4", "--lb", lb, "--msg", "16KiB", "--json",
                               check_rc=0).stdout)
            self.assertEqual(d["flows_incomplete"], 0, lb)
            # CONGA's feedback and SGLB's dissemination are heard; nobody else listens.
            self.assertEqual(d["remote_updates"] > 0, lb in ("conga", "sglb"), lb)

    def test_a_mixed_run_completes_and_is_deterministic(self):
        def mixed(*extra):
            p = run("--k", "4", "--lb", "4ofan", "--msg", "32KiB", "--json", *extra, check_rc=0)
            d = json.loads(p.stdout)
            d.pop("wall_s")
            return d
        for mix in (["--lb-placement", "random-pods"], ["--lb-placement", "random-switches"],
                    ["--lb-placement", "edge", "--lb-rest", "ecmp"],
                    ["--lb-tiers", "edge=ar,agg=4ofan,core=ar"]):
            a, b = mixed(*mix), mixed(*mix)
            self.assertEqual(a, b, mix)
            self.assertEqual(a["flows_incomplete"], 0, mix)
            self.assertEqual(a["misdelivered"], 0, mix)
        d = mixed("--lb-placement", "agg")
        self.assertEqual((d["config"]["lb_placement"], d["config"]["lb_rest"]), ("agg", "ar"))
        self.assertNotIn("lb_placement", json.loads(run("--k", "4", "--msg", "16KiB", "--json",
                                                        check_rc=0).stdout)["config"])
        # A mix whose every switch runs --lb is the single-policy run.
        same = mixed("--lb-tiers", "edge=4ofan")
        single = mixed()
        self.assertEqual(same["cct_us"], single["cct_us"])
        self.assertEqual(same["events"], single["events"])

    def test_bad_mixes_exit_2_with_one_line(self):
        for args in (["--lb-tiers", "spine=ar"], ["--lb-tiers", "edge=nope"],
                     ["--lb-tiers", "edge=ar,edge=4ofan"], ["--lb-tiers", "edge"],
                     ["--lb-tiers", "edge=drb"], ["--lb-placement", "nowhere"],
                     ["--lb-placement", "edge", "--lb-rest", "conga"],
                     ["--lb", "sglb", "--lb-tiers", "agg=ar"], ["--lb-rest", "ecmp"],
                     ["--levels", "2", "--lb-tiers", "edge=ar"],
                     ["--lb-tiers", "edge=ar", "--lb-placement", "edge"],
                     # A sweep checks every point before it runs any.
                     ["--sweep", "--lbs", "ofan,conga", "--msgs", "16KiB",
                      "--lb-placement", "edge"],
                     ["--sweep", "--lbs", "sglb", "--msgs", "16KiB", "--lb-tiers", "agg=ar"]):
            p = run("--k", "4", *args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
            self.assertNotIn("sweep 1/", p.stderr, args)
            self.assertEqual(len([ln for ln in p.stderr.splitlines()
                                  if ln.startswith("ofan-sim:")]), 1, f"{args}: {p.stderr}")

    def test_pair_reproduces_appendix_a_bound(self):
        d = json.loads(run("--k", "4", "--workload", "pair", "--msg", "1MiB", "--json",
                           check_rc=0).stdout)
        self.assertAlmostEqual(d["cct_lower_bound_us"], 17.05694, places=5)

    def test_seeds_give_mean_and_sem(self):
        d = json.loads(run("--k", "4", "--lb", "rps", "--msg", "64KiB", "--seeds", "3", "--json",
                           check_rc=0).stdout)
        self.assertEqual(d["seeds"], [1, 2, 3])
        self.assertEqual(len(d["runs"]), 3)
        self.assertIn("cct_us_sem", d)
        mean = sum(r["cct_us"] for r in d["runs"]) / 3
        self.assertAlmostEqual(d["cct_us"], mean, places=9)

    def test_table_output(self):
        p = run("--k", "4", "--msg", "64KiB", check_rc=0)
        self.assertIn("CCT inflation", p.stdout)
        self.assertIn("E->A", p.stdout)

    def test_sweep_json_and_plot(self):
        with tempfile.TemporaryDirectory() as tmp:
            # A quote and a space in the path: the plot is not run through a shell.
            png = os.path.join(tmp, "it's a sweep.png")
            p = run("--sweep", "--k", "4", "--msgs", "16KiB,64KiB", "--lbs", "ecmp,ofan", "--json",
                    "--plot", png, check_rc=0)
            d = json.loads(p.stdout)
            self.assertEqual(len(d["sweep"]), 4)
            self.assertIn("ofan", d["growth_exponent"])
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertTrue(os.path.exists(os.path.join(tmp, "it's a sweep.json")))

    def test_plot_script_is_found_without_the_source_tree(self):
        sweep = ["--no-progress", "--sweep", "--k", "4", "--msgs", "16KiB,64KiB", "--lbs", "ecmp",
                 "--json"]
        script = os.path.join(os.path.dirname(os.path.abspath(SIM)), "plot_sweep.py")
        with tempfile.TemporaryDirectory() as tmp:
            # An installed tree: bin/ofan-sim and the script in OFAN_PLOT_DIR.
            bindir = os.path.join(tmp, "bin")
            os.makedirs(bindir)
            sim = shutil.copy(SIM, bindir)
            png = os.path.join(tmp, "p.png")
            env = {k: v for k, v in os.environ.items() if k != "OFAN_PLOT_SCRIPT"}
            p = subprocess.run([sim, *sweep, "--plot", png], capture_output=True, text=True,
                               env=env, cwd=tmp)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("cannot find plot_sweep.py", p.stderr)
            self.assertIn("OFAN_PLOT_SCRIPT", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "p.json")), "ran the sweep anyway")
            plot_dir = os.environ.get("OFAN_PLOT_DIR", "../share/ofan")
            if not os.path.isabs(plot_dir):
                os.makedirs(os.path.join(bindir, plot_dir))
                shutil.copy(script, os.path.join(bindir, plot_dir))
                p = subprocess.run([sim, *sweep, "--plot", png], capture_output=True, text=True,
                                   env=env, cwd=tmp)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(png, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            # $OFAN_PLOT_SCRIPT wins, and a wrong one is an error that names it.
            env["OFAN_PLOT_SCRIPT"] = os.path.join(tmp, "nonexistent.py")
            p = subprocess.run([sim, *sweep, "--plot", png], capture_output=True, text=True,
                               env=env, cwd=tmp)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("OFAN_PLOT_SCRIPT=" + env["OFAN_PLOT_SCRIPT"], p.stderr)

    def test_matrix_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("0 15 64KiB\n10.3.1.3 10.0.0.2 64KiB\n")
        try:
            d = json.loads(run("--k", "4", "--workload", "matrix", "--matrix", f.name, "--json",
                               check_rc=0).stdout)
            self.assertEqual(d["flows"], 2)
        finally:
            os.unlink(f.name)
        p = run("--k", "4", "--workload", "matrix", "--matrix", "/nonexistent")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read", p.stderr)

    def test_moe_and_fsdp_workloads(self):
        d = json.loads(run("--k", "4", "--workload", "moe", "--moe-scale", "0.001", "--json",
                           check_rc=0).stdout)
        self.assertIn("GENERATED", d["workload_info"]["note"])
        self.assertEqual(d["config"]["payload"], 65536)
        self.assertEqual(d["flows_incomplete"], 0)
        d = json.loads(run("--k", "4", "--workload", "fsdp", "--model", "70b", "--fsdp-phases",
                           "1", "--json", check_rc=0).stdout)
        self.assertEqual(d["data_packets"], 16 * 418)
        # A bad token matrix: exit 2 with the file, the line and the defect.
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("1 2 three\n")
        try:
            p = run("--k", "4", "--workload", "moe", "--moe-matrix", f.name)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"{f.name}: MoE matrix line 1: 'three' is not", p.stderr)
        finally:
            os.unlink(f.name)
        p = run("--k", "4", "--workload", "fsdp", "--model", "7b")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("unknown model '7b'", p.stderr)

    def test_finite_buffer_drops_are_sent_again_or_exit_3(self):
        # The hosts send what a buffer dropped again after their timeout.
        p = run("--k", "8", "--lb", "ecmp", "--msg", "1MiB", "--buffer", "40KiB", "--json",
                check_rc=0)
        d = json.loads(p.stdout)
        self.assertGreater(d["drops"]["buffer"], 0)
        self.assertGreater(d["retransmits"], 0)
        self.assertGreater(d["timeouts"], 0)
        self.assertEqual(d["flows_incomplete"], 0)
        # A buffer smaller than a frame passes nothing: every flow is given
        # up after its retries, and the run exits 3.
        p = run("--k", "4", "--link-gbps", "0.025", "--payload", "2048", "--header", "62",
                "--buffer", "1000", "--msg", "16KiB", "--rto-us", "20000", "--json")
        self.assertEqual(p.returncode, 3, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(d["flows_incomplete"], d["flows"])
        for bad in ("-1", "60000001", "x"):
            p = run("--rto-us", bad)
            self.assertEqual(p.returncode, 2, bad)
        p = run("--rto-us", "1000", "--cca", "dctcp")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--rto-us is the fixed-rate hosts' timeout", p.stderr)

    def test_cca_recovers_the_drops(self):
        help_text = run("--help", check_rc=0).stdout
        self.assertIn("800000", help_text)  # the buffers a CCA gets by default
        p = run("--cca", "reno")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("unknown congestion control 'reno'", p.stderr)
        # The drops of test_finite_buffer_drops_are_sent_again_or_exit_3, under a CCA.
        p = run("--k", "8", "--lb", "ecmp", "--msg", "1MiB", "--buffer", "40KiB", "--cca",
                "dctcp", "--json", check_rc=0)
        d = json.loads(p.stdout)
        self.assertEqual(d["config"]["cca"], "dctcp")
        self.assertGreater(d["drops"]["buffer"], 0)
        self.assertGreater(d["retransmits"], 0)
        self.assertIn("timeouts", d)
        self.assertEqual(d["flows_incomplete"], 0)
        # Without --buffer a CCA runs over the paper's 800 KB.
        p = run("--k", "4", "--msg", "64KiB", "--cca", "dctcp", "--json", check_rc=0)
        self.assertEqual(json.loads(p.stdout)["config"]["buffer_bytes"], 800000)
        p = run("--k", "4", "--msg", "64KiB", "--json", check_rc=0)
        self.assertEqual(json.loads(p.stdout)["config"]["buffer_bytes"], 0)
        self.assertEqual(json.loads(p.stdout)["config"]["cca"], "none")

    def test_pfc_incast_is_lossless_and_reports_pause_per_stage(self):
        emu_scale = ["--k", "4", "--link-gbps", "0.025", "--latency-us", "1", "--payload", "2048",
                     "--header", "62", "--buffer", "256KiB", "--workload", "incast", "--msg",
                     "1MiB", "--lb", "ecmp"]
        # Lossy: the incast drops, and its hosts send the drops again.
        lossy = json.loads(run(*emu_scale, "--json", check_rc=0).stdout)
        self.assertGreater(lossy["drops"]["buffer"], 0)
        self.assertGreater(lossy["retransmits"], 0)
        p = run(*emu_scale, "--pfc", "--pfcwd-detect-ms", "5000", "--json", check_rc=0)
        d = json.loads(p.stdout)
        self.assertEqual(d["config"]["pfc"]["watchdog"],
                         {"detect_ms": 5000, "restore_ms": 200, "action": "drop"})
        self.assertEqual(d["config"]["incast_senders"], 0)
        self.assertEqual(d["flows"], 15)
        self.assertEqual(d["lossless_drops"], 0)
        self.assertEqual(d["drops"]["buffer"], 0)
        self.assertGreater(d["pfc_pause_frames"], 0)
        self.assertGreater(d["pfc_paused_us"], 0)
        self.assertAlmostEqual(sum(s["paused_us"] for s in d["stages"].values()),
                               d["pfc_paused_us"], delta=1e-6 * d["pfc_paused_us"])
        self.assertEqual(d["stages"]["E->H"]["pause_frames"], 0)
        self.assertEqual(d["pfc"]["watchdog"]["fired"], 0)
        table = run(*emu_scale, "--pfc", "--pfcwd-detect-ms", "5000", check_rc=0).stdout
        self.assertIn("pause frames rx", table)
        self.assertIn("0 lossless drops", table)
        # Without --pfc the report has none of PFC's keys.
        d = json.loads(run("--k", "4", "--msg", "64KiB", "--json", check_rc=0).stdout)
        self.assertNotIn("pfc_pause_frames", d)
        self.assertNotIn("pause_frames", d["stages"]["E->A"])

    def test_bad_pfc_arguments_exit_2_naming_the_option(self):
        for args, says in ((["--pfc"], "--pfc needs --buffer"),
                           (["--pfc", "--buffer", "8KB"], "headroom"),
                           (["--pfc-quanta", "100"], "--pfc-quanta is --pfc's"),
                           (["--pfc", "--buffer", "1MiB", "--pfcwd-detect-ms", "50"],
                            "--pfcwd-detect-ms must be in [100, 5000]"),
                           (["--pfc", "--buffer", "1MiB", "--pfcwd-restore-ms", "70000"],
                            "--pfcwd-restore-ms must be in [100, 60000]"),
                           (["--pfc", "--buffer", "1MiB", "--pfcwd-action", "panic"],
                            "'panic': drop, forward or alert"),
                           (["--workload", "incast", "--incast-senders", "16"],
                            "--incast-senders 16: 1 to 15"),
                           (["--incast-senders", "3"], "with --workload incast")):
            p = run("--k", "4", *args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
            self.assertIn(says, p.stderr, args)
            self.assertTrue(p.stderr.startswith("ofan-sim: "), p.stderr)

    def test_reorder_and_a_go_back_n_receiver(self):
        emu_scale = ["--k", "4", "--link-gbps", "0.025", "--latency-us", "1", "--payload", "2048",
                     "--header", "62", "--msg", "256KiB", "--lb", "rps"]
        gbn = json.loads(run(*emu_scale, "--receiver", "gbn", "--json", check_rc=0).stdout)
        self.assertEqual(gbn["config"]["receiver"], "gbn")
        self.assertGreater(gbn["out_of_seq"], 0)
        self.assertGreater(gbn["naks"], 0)
        self.assertNotIn("reorder", gbn)
        d = json.loads(run(*emu_scale, "--receiver", "gbn", "--reorder", "--json",
                           check_rc=0).stdout)
        self.assertEqual(d["config"]["reorder"], {"buffer_bytes": 262144, "timeout_us": 83887})
        self.assertEqual((d["out_of_seq"], d["naks"], d["retransmits"]), (0, 0, 0))
        ro = d["reorder"]
        self.assertEqual(set(ro), {"held", "in_order", "timeouts", "overflow", "table_full", "old",
                                   "max_bytes", "max_frames", "max_hold_us", "mean_max_bytes",
                                   "ports"})
        self.assertGreater(ro["held"], 0)
        self.assertEqual(ro["in_order"], d["data_packets"])
        # ofan-emu's run-row names beside the object.
        self.assertEqual((d["reorder_max_bytes"], d["reorder_timeouts"], d["reorder_held"]),
                         (ro["max_bytes"], ro["timeouts"], ro["held"]))
        self.assertEqual(d["reorder_max_hold_us"], ro["max_hold_us"])
        self.assertLess(d["cct_us"], gbn["cct_us"])
        table = run(*emu_scale, "--receiver", "gbn", "--reorder", check_rc=0).stdout
        self.assertIn("reorder (edges' host ports)", table)
        self.assertIn("go-back-N receivers: 0 out-of-sequence", table)
        # The default receiver places early packets: no gbn keys.
        self.assertNotIn("out_of_seq", json.loads(run("--k", "4", "--json", check_rc=0).stdout))

    def test_bad_reorder_arguments_exit_2_naming_the_option(self):
        for args, says in ((["--reorder-kb", "64"], "--reorder-kb is --reorder's"),
                           (["--reorder-timeout-us", "100"], "--reorder-timeout-us is --reorder's"),
                           (["--reorder", "--reorder-kb", "0"], "--reorder-kb must be in"),
                           (["--reorder", "--reorder-kb", "2"], "must hold a data frame"),
                           (["--reorder", "--reorder-timeout-us", "0"],
                            "--reorder-timeout-us must be in [1, 10000000], got 0"),
                           (["--reorder", "--reorder-timeout-us", "10000001"],
                            "--reorder-timeout-us must be in [1, 10000000]"),
                           (["--receiver", "rxe"], "unknown receiver 'rxe'"),
                           (["--receiver", "gbn", "--cca", "dctcp"], "--receiver gbn models")):
            p = run("--k", "4", *args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
            self.assertIn(says, p.stderr, args)
            self.assertTrue(p.stderr.startswith("ofan-sim: "), p.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        SIM = sys.argv.pop(1)
    unittest.main(verbosity=1)
