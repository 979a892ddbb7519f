#!/usr/bin/env python3
"""The ofan-dp binary end to end on loopback ring ports: --help, configuration
errors and exit codes, --check, startup, the control socket, idle workers that
sleep (their loop counters say so; the CPU share itself is a benchmark figure,
bench/run-idle), forwarding under --bench-inject, clean shutdown on SIGTERM
(socket removed, exit 0, no hugepage files left).

Every ofan-dp a test starts is killed by a cleanup registered when it starts,
so that a failed assertion never leaves one running (it would keep meson's
pipe open and hang the suite until meson's timeout)."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

DP = os.environ.get("OFAN_DP", "build/dataplane/ofan-dp")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def request(path, cmd, **kw):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    s.sendall((json.dumps({"v": 1, "cmd": cmd, **kw}) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)


class OfanDp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (hugepages)")
        subprocess.run(["bash", os.path.join(ROOT, "scripts/hugepages.sh")], check=True,
                       capture_output=True)
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def config(self, name, extra=""):
        path = os.path.join(self.tmp.name, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"""name: {name}
fabric: {{k: 4, levels: 3, switch: 0}}
ports:
  - {{port: 0, dev: net_ring_{name}0}}
  - {{port: 1, dev: net_ring_{name}1}}
  - {{port: 2, dev: net_ring_{name}2}}
  - {{port: 3, dev: net_ring_{name}3}}
control: {{socket: {self.tmp.name}/{name}.sock}}
{extra}""")
        return path

    def start(self, name, *args, extra=""):
        cfg = self.config(name, extra)
        sock = os.path.join(self.tmp.name, name + ".sock")
        p = subprocess.Popen([DP, "--", "--config", cfg, *args], stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.kill, p)
        deadline = time.time() + 20
        while time.time() < deadline:
            if p.poll() is not None:
                self.fail(f"ofan-dp exited {p.returncode}: {p.stderr.read()}")
            if os.path.exists(sock):
                try:
                    if request(sock, "status")["ok"]:
                        return p, sock
                except OSError:
                    pass
            time.sleep(0.1)
        self.fail("ofan-dp did not answer on its control socket in 20 s")

    @staticmethod
    def kill(p):
        """The cleanup of every started ofan-dp: nothing if stop() ended it."""
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
        p.stderr.close()

    def stop(self, p, sock):
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.fail("ofan-dp ignored SIGTERM")  # the cleanup kills it
        self.assertEqual(rc, 0, p.stderr.read())
        self.assertFalse(os.path.exists(sock), "control socket left behind")

    def test_help(self):
        for args in (["--", "--help"], ["--help"]):
            p = subprocess.run([DP, *args], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 0, args)
            for opt in ("--config", "--policy", "--ofan-mode", "--port", "--socket",
                        "--rate-gbps", "--buffer", "--ecn"):
                self.assertIn(opt, p.stdout)

    def test_bad_configuration_exits_2_with_a_message(self):
        bad = {
            "k5": "fabric: {k: 5}\nports: [{port: 0, dev: net_ring_x0}]\n",
            "switch": "fabric: {k: 4, switch: 99}\nports: [{port: 0, dev: net_ring_x0}]\n",
            "port": "ports: [{port: 9, dev: net_ring_x0}]\n",
            "twice": "ports: [{port: 0, dev: net_ring_x0}, {port: 0, dev: net_ring_x1}]\n",
            "key": "ports: [{port: 0, dev: net_ring_x0}]\nlb: {polcy: ofan}\n",
            "policy": "ports: [{port: 0, dev: net_ring_x0}]\nlb: {policy: nope}\n",
            "yaml": "ports: [\n",
            "size": "ports: [{port: 0, dev: net_ring_x0}]\negress: {buffer: 12XB}\n",
            "noports": "name: x\n",
        }
        for what, text in bad.items():
            path = os.path.join(self.tmp.name, f"bad-{what}.yaml")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([DP, "--", "--config", path], capture_output=True, text=True,
                               timeout=10)
            self.assertEqual(p.returncode, 2, f"{what}: {p.stderr}")
            self.assertIn("ofan-dp:", p.stderr, what)
        p = subprocess.run([DP, "--", "--config", "/nonexistent.yaml"], capture_output=True,
                           text=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read", p.stderr)
        p = subprocess.run([DP, "--", "--policy", "ofan", "--ofan-mode", "sideways",
                            "--port", "0=net_null0"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2)

    def test_fabric_refuses_the_flags_it_would_ignore(self):
        path = os.path.join(self.tmp.name, "fabric.yaml")
        with open(path, "w") as f:
            f.write("switches: []\n")
        for args, names in ((["--rate-gbps", "1"], "--rate-gbps"),
                            (["--policy", "ecmp", "--workers", "2"], "--policy, --workers"),
                            (["--buffer", "1MiB", "--ecn", "1KiB", "--max-sleep-us", "5"],
                             "--buffer, --ecn, --max-sleep-us"),
                            (["--name", "x", "--k", "4", "--socket", "/tmp/x.sock"],
                             "--name, --k, --socket"),
                            (["--config", self.config("fab"), "--port", "0=net_null0"],
                             "--config, --port")):
            p = subprocess.run([DP, "--", "--fabric", path, *args], capture_output=True,
                               text=True, timeout=10)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
            self.assertIn(f"{names} would be ignored", p.stderr, args)
            self.assertTrue(p.stderr.startswith("ofan-dp: --fabric takes"), p.stderr)

    def test_check_prints_the_config(self):
        p = subprocess.run([DP, "--", "--config", self.config("chk"), "--policy", "pofan",
                            "--check"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(d["policy"], "pofan")
        self.assertEqual(d["ports"], 4)

    def test_idle_workers_sleep_and_shutdown_is_clean(self):
        before = set(os.listdir("/dev/hugepages"))
        p, sock = self.start("idle", extra="idle: {max_sleep_us: 500}\n")
        st = request(sock, "status")["result"]
        self.assertEqual(st["fabric"]["role"], "edge")
        self.assertEqual(len(request(sock, "ports")["result"]), 4)
        # With nothing to receive, every worker backs off to the longest
        # sleep and stays there: no busy loop, sleeps counted, each at the cap.
        deadline = time.time() + 20
        while time.time() < deadline:
            ws = request(sock, "status")["result"]["workers"]
            if all(w["sleep_us"] == 500 for w in ws):
                break
            time.sleep(0.2)
        a = request(sock, "status")["result"]["workers"]
        self.assertTrue(all(w["sleep_us"] == 500 for w in a), a)
        time.sleep(0.5)
        b = request(sock, "status")["result"]["workers"]
        for wa, wb in zip(a, b):
            self.assertEqual(wb["busy_loops"], wa["busy_loops"], "an idle worker found work")
            self.assertGreater(wb["sleeps"], wa["sleeps"], "an idle worker did not sleep")
            self.assertEqual(wb["sleep_us"], 500)
        self.stop(p, sock)
        self.assertEqual(set(os.listdir("/dev/hugepages")), before, "hugepage files left behind")

    def test_forwards_under_bench_traffic_and_switches_policy_live(self):
        p, sock = self.start("fwd", "--bench-inject", "256")
        try:
            a = request(sock, "counters")["result"]["total"]
            time.sleep(0.5)
            r = request(sock, "set_policy", policy="ecmp")
            self.assertTrue(r["ok"], r)
            time.sleep(0.5)
            r = request(sock, "set_policy", policy="ofan", ofan_mode="atomic")
            self.assertTrue(r["ok"], r)
            time.sleep(0.5)
            b = request(sock, "counters")["result"]["total"]
            self.assertGreater(b["tx_packets"] - a["tx_packets"], 10000)
            self.assertGreater(b["forwarded_up"], 0)
            drops = {k: v for k, v in b.items()
                     if k.startswith("drop_") and v and k != "drop_ttl_exceeded"}
            self.assertEqual(drops, {}, "only TTL expiry is expected on the loop")
            q = request(sock, "queues")["result"]
            self.assertEqual(len(q), 4)
            ptr = request(sock, "pointers")["result"]
            self.assertEqual(ptr["ofan_mode"], "atomic")
            self.assertTrue(any("counter" in k for k in ptr["keys"]))
        finally:
            self.stop(p, sock)

    def test_second_instance_on_the_same_socket_is_refused(self):
        p, sock = self.start("dup")
        try:
            cfg = self.config("dup2", "")
            q = subprocess.run([DP, "--", "--config", cfg, "--socket", sock],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(q.returncode, 3, q.stderr)
            self.assertIn("in use", q.stderr)
            self.assertTrue(request(sock, "status")["ok"])  # the first one is unharmed
        finally:
            self.stop(p, sock)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        DP = sys.argv.pop(1)
    unittest.main(verbosity=2)
