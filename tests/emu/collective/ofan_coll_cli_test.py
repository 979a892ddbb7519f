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
                     ["--ranks", "2", "--k", "4", "--hosts", "0,16"],
                     ["--channels", "2"], ["--cts", "--channels", "0"],
                     ["--cts", "--channel-bytes", "6"], ["--cts", "--cts-class", "gold"],
                     ["--cts", "--chunk", "4KiB"], ["--workload", "perm", "--victim"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertTrue(p.stderr.strip(), args)

    def test_cts_reports_its_delay(self):
        p = run("--workload", "incast", "--ranks", "8", "--msg", "64KiB", "--cts", "--channels",
                "1", "--channel-bytes", "8KiB", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertTrue(d["verified"])
        self.assertEqual(d["cts"]["channels"], 1)
        self.assertEqual(d["cts"]["channel_bytes"], 8192)
        self.assertTrue(d["cts"]["priority"])
        self.assertLessEqual(d["cts_delay_us"]["p50"], d["cts_delay_us"]["p90"])
        self.assertLessEqual(d["cts_wait_us"]["p50"], d["cts_wait_us"]["p90"])
        self.assertEqual(d["cts_delay_us"]["n"], len(d["cts"]["flights_us"]))
        self.assertNotIn("cts", json.loads(run("--workload", "incast", "--ranks", "4", "--msg",
                                               "4KiB", "--json").stdout))

    def test_merge_combines_outputs_and_refuses_what_is_not_one_run(self):
        p = run("--workload", "perm", "--ranks", "3", "--msg", "64KiB", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        whole = json.loads(p.stdout)
        # Cut the 3-rank result into one part per rank, as 3 processes print them.
        parts = []
        for r in range(3):
            d = dict(whole, local_ranks=[r], rank_us=[whole["rank_us"][r]], partial=True,
                     rxe_counters={"sent_pkts": 10 + r})
            parts.append(json.dumps(d))
        m = subprocess.run([COLL, "merge"], input="\n".join(parts) + "\n", capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(m.returncode, 0, m.stderr)
        d = json.loads(m.stdout)
        self.assertEqual(d["local_ranks"], [0, 1, 2])
        self.assertEqual(d["rank_us"], whole["rank_us"])
        self.assertEqual(d["cct_us"], whole["cct_us"])
        self.assertFalse(d["partial"])
        self.assertEqual(d["parts"], 3)
        self.assertEqual(d["rxe_counters"], {"sent_pkts": 33})
        m = subprocess.run([COLL, "merge", "-"], input=parts[0] + "\n" + parts[0] + "\n",
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(m.returncode, 1, m.stdout)
        self.assertIn("rank 0 is in two results", m.stderr)
        for text in ("not json\n", '{"workload": "perm"}\n', ""):
            m = subprocess.run([COLL, "merge"], input=text, capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(m.returncode, 2, f"{text!r}: {m.stdout}")
            self.assertTrue(m.stderr.strip())
        self.assertEqual(run("merge", "/nonexistent/file").returncode, 2)

    def test_verbs_command_line_errors_exit_2(self):
        for args in (["--transport", "verbs"],
                     ["--transport", "verbs", "--addrs", "10.0.0.1"],
                     ["--transport", "verbs", "--addrs", "10.0.0.1,10.0.0.x"],
                     ["--transport", "verbs", "--addrs", "10.0.0.1,10.0.0.2", "--rank", "2"],
                     ["--transport", "verbs", "--addrs", "10.0.0.1,10.0.0.1"],
                     ["--transport", "verbs", "--addrs", "10.0.0.1,10.0.0.2", "--ranks", "3"],
                     ["--rank", "1"], ["--addrs", "10.0.0.1,10.0.0.2"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertTrue(p.stderr.strip(), args)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        COLL = sys.argv.pop(1)
    unittest.main()
