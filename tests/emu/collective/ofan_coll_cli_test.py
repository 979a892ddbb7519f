#!/usr/bin/env python3
"""End-to-end checks of the ofan-coll command line over the loopback
transport: every workload completes and verifies, the JSON's fields, errors
and exit codes."""
import json
import os
import subprocess
import sys
import unittest

COLL = os.environ.get("OFAN_COLL", "build/emu/collective/ofan-coll")


def run(*args):
    return subprocess.run([COLL, *args], capture_output=True, text=True, timeout=120)


class Cli(unittest.TestCase):
    def test_every_workload_verifies(self):
        for w in ["permutation", "alltoall", "allgather", "reducescatter"]:
            p = run("--workload", w, "--ranks", "5", "--msg", "100003", "--qps", "3",
                    "--reorder", "4", "--json")
            self.assertEqual(p.returncode, 0, p.stderr)
            d = json.loads(p.stdout)
            self.assertEqual(d["workload"], w)
            self.assertEqual(d["ranks"], 5)
            self.assertEqual(d["msg_bytes"], 100003)
            self.assertEqual(d["qps_per_peer"], 3)
            self.assertTrue(d["verified"])
            self.assertIsNone(d["error"])
            self.assertEqual(len(d["rank_us"]), 5)
            self.assertEqual(d["cct_us"], max(d["rank_us"]))
            factor = 1.0 if w == "permutation" else 4 / 5
            self.assertAlmostEqual(d["busbw_gbps"], d["algbw_gbps"] * factor)
            self.assertIsNone(d["cct_lower_bound_us"])
            self.assertFalse(d["partial"])
            self.assertEqual(d["local_ranks"], list(range(5)))

    def test_bound_when_a_link_rate_is_given(self):
        p = run("--workload", "permutation", "--ranks", "4", "--msg", "1MiB", "--link-gbps",
                "100", "--rho", "0.8", "--latency-us", "1", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        # 1 MiB at 80 Gb/s is 104.9 us before headers and propagation.
        self.assertGreater(d["cct_lower_bound_us"], 104.9)

    def test_bound_uses_the_fat_trees_paths(self):
        def bound(*extra):
            p = run("--workload", "permutation", "--ranks", "2", "--msg", "4096", "--link-gbps",
                    "100", "--latency-us", "1", "--json", *extra)
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)
        near = bound("--k", "4", "--hosts", "0,1")  # one edge switch: 2 links
        far = bound("--k", "4", "--hosts", "0,15")  # across pods: 6 links
        self.assertEqual(far["hosts"], [0, 15])
        # 4 more links each way at 1 us, and the last frame and ACK on each.
        self.assertAlmostEqual(far["cct_lower_bound_us"] - near["cct_lower_bound_us"],
                               8 + 4 * 8 * 2134 / 1e5 + 4 * 8 * 86 / 1e5, places=9)
        self.assertAlmostEqual(bound()["cct_lower_bound_us"], near["cct_lower_bound_us"],
                               places=9)

    def test_table_line(self):
        p = run("--workload", "allgather", "--ranks", "3", "--msg", "64KiB")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("allgather 3 ranks 64KiB", p.stdout)
        self.assertIn("verified", p.stdout)

    def test_failed_run_exits_1_with_its_error(self):
        p = run("--ranks", "4", "--deadline-ms", "0", "--json")
        self.assertEqual(p.returncode, 1)
        self.assertIn("deadline", p.stderr)
        d = json.loads(p.stdout)
        self.assertFalse(d["verified"])
        self.assertIn("deadline", d["error"])

    def test_bad_arguments_exit_2(self):
        for args in (["--workload", "allreduce"], ["--ranks", "1"], ["--msg", "0"],
                     ["--msg", "12XB"], ["--qps", "0"], ["--chunk", "6"],
                     ["--transport", "uroce"], ["--max-outstanding", "0"], ["--bogus"],
                     ["--ranks", "2", "--hosts", "0"], ["--ranks", "2", "--hosts", "1,1"],
                     ["--ranks", "2", "--hosts", "0,x"], ["--k", "5"],
                     ["--ranks", "2", "--k", "4", "--hosts", "0,16"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertTrue(p.stderr.strip(), args)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        COLL = sys.argv.pop(1)
    unittest.main()
