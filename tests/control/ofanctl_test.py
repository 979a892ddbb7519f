#!/usr/bin/env python3
"""End-to-end checks of ofanctl against a fake ofan-dp control server.

The fake speaks the protocol of dataplane/control_socket.h on a temporary unix
socket (one JSON object per line each way) and answers with canned results in
the shapes of dataplane/switch.cc (StatusJson, CountersJson, PortsJson,
QueuesJson, PointersJson), with the real server's errors for bad input. It can
also misbehave: dribble replies in small pieces, close mid-reply, say nothing,
answer garbage. Usage: ofanctl_test.py [path/to/ofanctl]
"""
import copy
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

OFANCTL = os.environ.get("OFANCTL", "build/control/ofanctl/ofanctl")

COUNTER_NAMES = [
    "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "forwarded_up", "forwarded_down",
    "exception", "ecn_marked", "priority_queued", "pfc_rx", "pfc_tx", "pfc_watchdog",
    "pfc_rx_held",
    "neighbor_unknown", "forwarded_fragment", "icmp_error_sent", "icmp_rate_limited",
    "drop_runt", "drop_unknown_ethertype", "drop_vlan_truncated",
    "drop_ipv4_truncated", "drop_ipv4_version", "drop_ipv4_header_length",
    "drop_ipv4_total_length", "drop_ipv4_checksum", "drop_udp_truncated",
    "drop_bth_truncated", "drop_pfc_malformed", "drop_ttl_exceeded", "drop_no_route",
    "drop_no_uplink", "drop_port_down", "drop_buffer_full", "drop_exception_full",
    "drop_control_full", "drop_switch_down", "drop_link_loss",
]

STATUS = {
    "name": "e0",
    "fabric": {"k": 4, "levels": 3, "switch": 0, "role": "edge", "pod": 0, "index": 0},
    "policy": "ofan", "ofan_mode": "combined", "pipe_size": 2, "generation": 3, "uplinks": 2,
    "running": True, "uptime_s": 3723.4,
    "workers": [
        {"worker": 0, "lcore": 1, "ports": [0, 1], "busy_loops": 1200, "idle_loops": 98000,
         "sleeps": 4321, "sleep_us": 1000},
        {"worker": 1, "lcore": 2, "ports": [2, 3], "busy_loops": 800, "idle_loops": 99000},
    ],
    "buffer": {"capacity_bytes": 1048576, "bytes": 4220, "max_bytes": 943718, "alarm_pct": 80,
               "alarms": 2, "alarm_active": False, "alarm_us": 1234.5},
}


def make_counters():
    w0 = {"rx_packets": 600, "rx_bytes": 600000, "tx_packets": 590, "tx_bytes": 590000,
          "forwarded_up": 590, "ecn_marked": 7, "drop_buffer_full": 10}
    w1 = {"rx_packets": 400, "rx_bytes": 400000, "tx_packets": 398, "tx_bytes": 398000,
          "forwarded_down": 398, "drop_no_route": 2}
    total = {n: w0.get(n, 0) + w1.get(n, 0) for n in COUNTER_NAMES}
    drops = {n[5:]: total[n] for n in COUNTER_NAMES if n.startswith("drop_")}
    return {"total": total, "drops": drops, "drops_total": sum(drops.values()),
            "per_worker": [w0, w1]}


COUNTERS = make_counters()

PORTS = [
    {"port": p, "dev": f"net_ring_p{p}", "dpdk_port": p, "direction": "up" if p >= 2 else "down",
     "mac": f"02:00:00:00:00:1{p}", "neighbor": None if p == 1 else f"02:00:00:00:01:0{p}",
     "admin": "up", "link": "up", "wire": "ok", "rx_packets": 100 * (p + 1),
     "rx_bytes": 100000 * (p + 1),
     "tx_packets": 90 * (p + 1), "tx_bytes": 90000 * (p + 1)}
    for p in range(4)
]
# The two kinds of kernel interface (dataplane/control_views.cc): the shared
# engine's TAP, the per-switch engine's veth behind its XDP trap.
PORTS[2]["kernel"] = {"name": "p2", "via": "tap", "to_kernel": 40, "to_kernel_lost": 1,
                      "from_kernel": 38, "from_kernel_lost": 0}
PORTS[3]["kernel"] = {"name": "p3", "via": "xdp", "to_kernel": 15, "to_kernel_lost": 0,
                      "from_kernel": None, "from_kernel_lost": None,
                      "to_kernel_by_class": {"arp": 1, "bfd": 9, "bgp": 3, "lldp": 2, "nd": 0},
                      "to_dataplane": 5000, "no_socket": 2}
PORTS[1]["kernel"] = {"name": "p1", "via": "xdp", "to_kernel": 0, "to_kernel_lost": 0,
                      "from_kernel": None, "from_kernel_lost": None, "to_kernel_by_class": {},
                      "error": "p1 has no XDP program"}

# What ofan-dp keeps of ofan-agent's last cycle (control/agent/agent_cycle.cc).
AGENT = {"age_ms": 412, "report": {
    "switch": "e0-0", "cycle": 17, "converged": True,
    "identity": {"switch": "e0-0", "inferred": True},
    "masks": {"action": "held", "reason": "converging: routes unchanged for 1 of 2 cycles",
              "computed": [0, 1, 3, 0]},
    "ports": [{"port": 0, "ifname": "p0", "status": "no-neighbor", "expected": "h0",
               "faces": "host", "neighbors": []},
              {"port": 2, "ifname": "p2", "status": "ok", "expected": "a0-0 p0",
               "faces": "switch", "neighbors": [{"chassis": "a0-0", "port": "p0"}]},
              {"port": 3, "ifname": "p3", "status": "miswired", "expected": "a0-1 p0",
               "faces": "switch",
               "neighbors": [{"chassis": "a1-1", "port": "p0"}]}],
    "bgp": [{"interface": "p2", "state": "Established", "prefixes_received": 7}],
    "bfd": [{"interface": "p2", "status": "up"}],
    "routes": [{"key": 1, "prefix": "10.0.1.0/24", "protocol": "bgp", "unicast": True,
                "nexthops": ["p2"]},
               {"key": 2, "prefix": "10.1.0.0/24", "protocol": "bgp", "unicast": True,
                "nexthops": ["p2", "p3"]},
               {"key": 3, "prefix": "10.1.0.0/16", "protocol": "static", "unicast": False,
                "nexthops": []}],
    "miswires": [{"port": 3, "detail": "expects a0-1 p0, LLDP shows 'a1-1' port 'p0'"}],
    "errors": ["bfd: vtysh timed out"]}}

QUEUES = [
    {"port": p, "bytes": 4158 * p, "packets": p, "priority_packets": 1 if p == 3 else 0,
     "max_bytes": 41580 * (p + 1), "max_packets": 10 * (p + 1), "avg_bytes": 1234.5678 * p,
     "avg_packets": 0.296875 * p, "drops_buffer": 10 if p == 2 else 0,
     "ecn_marked": 7 if p == 2 else 0, "paused": p == 3, "limit_bytes": 1048576,
     "ecn_bytes": 102400}
    for p in range(4)
]


def make_pointers(dests):
    keys = []
    for key in range(2 * dests):
        keys.append({"key": key, "dest": key % dests, "class": "data" if key < dests else "ack",
                     "order": [] if key % dests == 0 else [(key + i) % 2 for i in range(2)],
                     "counter": 5 * key})  # destination 0 is local: no uplinks
    return {"policy": "ofan", "ofan_mode": "combined", "uplinks": 2, "keys": keys}


POINTERS = make_pointers(4)
BIG_POINTERS = make_pointers(5000)  # a reply of several hundred KiB
# The fake switch accepts what ofan-dp accepts: the one list, as ofanctl
# prints it (filled in before the tests run, once OFANCTL is known).
POLICIES: list[str] = []
NUM_DESTS = 8


def mask_of(m):
    if isinstance(m, bool):
        return None
    if isinstance(m, int):
        return m if m >= 0 else None
    if isinstance(m, str):
        try:
            return int(m, 0)
        except ValueError:
            return None
    return None


class FakeSwitch:
    """A control server in a thread. `mode` picks its behaviour for new replies."""

    def __init__(self, path):
        self.path = path
        self.mode = "normal"
        self.requests = []
        self.status = copy.deepcopy(STATUS)
        self.ports = copy.deepcopy(PORTS)
        self.pointers = POINTERS
        self.conns = []
        self.stop = False
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.sock.settimeout(0.05)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        os.unlink(self.path)

    def _accept(self):
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        if self.mode == "close_now":
            c.close()
            return
        buf = b""
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self.requests.append(line.decode("utf-8", "replace"))
                    if not self._answer(c, line):
                        return
        except OSError:
            pass
        c.close()

    def _answer(self, c, line):
        mode = self.mode
        if mode == "silent":
            return True
        if mode == "garbage":
            c.sendall(b"this is not json\n")
            return True
        reply = self.handle(line)
        if mode == "refuse":
            reply = {"v": 1, "ok": False, "error": "refused for the test",
                     "code": "invalid_argument"}
        if mode == "v2":
            reply["v"] = 2
        if mode == "bad_shape" and reply.get("ok"):
            reply["result"] = {"surprise": True}
        if not reply.get("ok"):  # a switch older than the codes, a newer one, a broken one
            if mode == "no_code":
                del reply["code"]
            elif mode == "new_code":
                reply["code"] = "out_of_coffee"
            elif mode == "bad_code":
                reply["code"] = 7
        data = (json.dumps(reply) + "\n").encode()
        if mode == "close_mid":
            c.sendall(data[: len(data) // 2])
            c.close()
            return False
        if mode == "dribble":  # replies split across many reads
            i, step = 0, 1
            while i < len(data):
                c.sendall(data[i:i + step])
                i += step
                step = step % 97 + 1 if len(data) < 10000 else 4096 + step % 3000
                time.sleep(0.0005)
            return True
        c.sendall(data)
        return True

    def handle(self, line):
        def ok(result):
            return {"v": 1, "ok": True, "result": result}

        def fail(e, code="bad_argument"):
            return {"v": 1, "ok": False, "error": e, "code": code}

        try:
            req = json.loads(line)
        except ValueError as e:
            return fail(f"request is not JSON: {e}", "bad_request")
        if not isinstance(req, dict):
            return fail("request must be a JSON object", "bad_request")
        if req.get("v") != 1:
            return fail("unsupported protocol version (this switch speaks v1)",
                        "unsupported_version")
        cmd = req.get("cmd")
        if not isinstance(cmd, str):
            return fail("missing 'cmd'", "bad_request")
        if cmd == "version":
            return ok({"protocol": 1, "ofan_dp": "0.1.0"})
        if cmd == "status":
            return ok(self.status)
        if cmd == "counters":
            return ok(COUNTERS)
        if cmd == "ports":
            return ok(self.ports)
        if cmd == "queues":
            return ok(QUEUES)
        if cmd == "pointers":
            return ok(self.pointers)
        if cmd == "agent":
            return ok(AGENT)
        if cmd == "reset_queues":
            return ok({})
        if cmd in ("capture_start", "capture_status", "capture_stop"):
            one = {"id": 7, "active": cmd != "capture_stop", "file": req.get("file", "/tmp/c"),
                   "ports": req.get("ports", [2]), "snaplen": 4096, "count": 5, "frames": 3,
                   "dropped": 0, "error": ""}
            return ok(one if cmd == "capture_start" or "id" in req else {"captures": [one]})
        if cmd == "set_policy":
            if not isinstance(req.get("policy"), str):
                return fail("set_policy needs 'policy'")
            if req["policy"] not in POLICIES:
                return fail(f"unknown LB policy '{req['policy']}' (expected one of "
                            + "|".join(POLICIES) + ")")
            if "ofan_mode" in req and req["ofan_mode"] not in ("pofan", "atomic", "combined"):
                return fail(f"unknown ofan mode '{req['ofan_mode']}'")
            self.status["policy"] = req["policy"]
            self.status["ofan_mode"] = req.get("ofan_mode", self.status["ofan_mode"])
            self.status["generation"] += 1
            return ok(self.status)
        if cmd == "set_port":
            port = req.get("port")
            if not isinstance(port, int) or port < 0:
                return fail("set_port needs 'port' (a number)")
            if "admin" not in req and "wire" not in req:
                return fail("set_port needs 'admin': up|down, or 'wire': ok|cut")
            if req.get("admin", "up") not in ("up", "down"):
                return fail("'admin' must be up or down")
            if req.get("wire", "ok") not in ("ok", "cut"):
                return fail("'wire' must be ok or cut")
            for p in self.ports:
                if p["port"] == port:
                    p["admin"] = req.get("admin", p["admin"])
                    p["wire"] = req.get("wire", p["wire"])
                    return ok(self.ports)
            return fail(f"port {port} is not present on this switch")
        if cmd == "load_tables":
            masks = req.get("masks")
            if not isinstance(masks, list):
                return fail("load_tables needs 'masks': [...]")
            vals = []
            for m in masks:
                v = mask_of(m)
                if v is None:
                    return fail(f"'{json.dumps(m)}' is not a port mask")
                vals.append(v)
            if len(vals) != NUM_DESTS:
                return fail(f"expected {NUM_DESTS} masks (one per destination), got {len(vals)}")
            for d, v in enumerate(vals):
                if v >> 2:
                    return fail(f"mask {v} of destination {d} names uplinks beyond w=2")
            self.status["generation"] += 1
            return ok(self.status)
        return fail(f"unknown command '{cmd}' (version, status, counters, ports, queues, "
                    "pointers, set_policy, set_port, load_tables, reset_queues)",
                    "unknown_command")


class OfanctlTest(unittest.TestCase):
    def test_list_policies_needs_no_switch(self):
        p = subprocess.run([OFANCTL, "--list-policies", "--json"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = json.loads(p.stdout)
        self.assertIn("ofan", [r["name"] for r in rows])
        for r in rows:
            self.assertEqual(set(r), {"name", "aliases", "queue_aware", "host_chooses", "modes",
                                      "help"})
            self.assertEqual(r["modes"], ["atomic", "combined"] if r["name"] == "ofan" else [])
        text = subprocess.run([OFANCTL, "--list-policies"], capture_output=True, text=True,
                              timeout=30)
        self.assertEqual(text.returncode, 0)
        self.assertEqual([ln.split()[0] for ln in text.stdout.splitlines()],
                         [r["name"] for r in rows])
        self.assertIn("--list-policies", subprocess.run([OFANCTL, "--help"], capture_output=True,
                                                        text=True, timeout=30).stdout)
        none = subprocess.run([OFANCTL], capture_output=True, text=True, timeout=30)
        self.assertEqual(none.returncode, 2)
        self.assertIn("missing COMMAND", none.stderr)

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.sock = os.path.join(cls.tmp.name, "e0.sock")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.srv = FakeSwitch(self.sock)

    def tearDown(self):
        self.srv.close()

    def run_ctl(self, *args, rc=None, sock=True, stdin=None, timeout=30):
        argv = [OFANCTL] + (["--socket", self.sock] if sock else []) + list(args)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=stdin)
        if rc is not None and p.returncode != rc:
            raise AssertionError(f"{args}: rc {p.returncode} != {rc}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def last_request(self):
        return json.loads(self.srv.requests[-1])

    def write_file(self, text):
        path = os.path.join(self.tmp.name, f"masks{len(os.listdir(self.tmp.name))}.json")
        with open(path, "w") as f:
            f.write(text)
        return path

    # -- help ---------------------------------------------------------------

    def test_help_documents_every_command_and_option(self):
        p = self.run_ctl("--help", rc=0, sock=False)
        for word in ["--socket", "--name", "--json", "--timeout-ms", "status", "counters", "ports",
                     "queues", "pointers", "set-policy", "port", "load-tables", "reset-queues",
                     "raw", "version", "Exit codes", "/run/ofan/"]:
            self.assertIn(word, p.stdout, word)
        for cmd, words in [("status", ["uptime_s"]), ("counters", ["--all", "drops_total"]),
                           ("ports", ["neighbor"]), ("queues", ["avg_bytes", "paused"]),
                           ("pointers", ["--key", "order"]),
                           ("set-policy", ["POLICY", "--ofan-mode", "pofan", "ecmp"]),
                           ("port", ["N", "STATE", "up", "down"]),
                           ("load-tables", ["FILE", "masks", "0x3"]),
                           ("reset-queues", []), ("raw", ["JSON"]), ("version", [])]:
            p = self.run_ctl(cmd, "--help", rc=0, sock=False)
            for w in words + ["--timeout-ms", "--socket"]:
                self.assertIn(w, p.stdout, f"{cmd} --help: {w}")
        self.assertEqual(self.srv.requests, [])

    def test_version_is_the_projects(self):
        p = self.run_ctl("--version", rc=0, sock=False)
        self.assertEqual(p.stdout, f"ofanctl {os.environ['OFAN_VERSION']}\n")

    # -- every command, tables and --json -----------------------------------

    def test_version(self):
        p = self.run_ctl("version", rc=0)
        self.assertEqual(p.stdout, "ofan-dp 0.1.0, control protocol v1\n")
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "version"})
        p = self.run_ctl("--json", "version", rc=0)
        self.assertEqual(json.loads(p.stdout), {"protocol": 1, "ofan_dp": "0.1.0"})

    def test_status(self):
        p = self.run_ctl("status", rc=0)
        for s in ["e0", "k=4, 3 levels", "0: edge, pod 0, index 0", "ofan", "combined",
                  "1h 02m 03.4s", "busy_loops", "0,1", "2,3", "98000", "sleeps", "4321",
                  "4220 of 1048576 B held (0 %), at most 943718 (90 %)",
                  "off above 80 %: raised 2 times, up 1.2 ms in all"]:
            self.assertIn(s, p.stdout, s)
        self.assertEqual(json.loads(self.run_ctl("status", "--json", rc=0).stdout), STATUS)

    def test_counters(self):
        p = self.run_ctl("counters", rc=0)
        out = p.stdout
        # Non-zero counters with per-worker columns; zero ones hidden.
        self.assertRegex(out, r"rx_packets\s+1000\s+600\s+400")
        self.assertRegex(out, r"ecn_marked\s+7\s+7\s+0")
        self.assertNotIn("pfc_rx", out)
        self.assertIn("zero counters not shown", out)
        # Drops grouped, by reason, after the others.
        self.assertIn("drops: 12 in total", out)
        self.assertRegex(out, r"buffer_full\s+10\s+10\s+0")
        self.assertRegex(out, r"no_route\s+2\s+0\s+2")
        self.assertLess(out.index("rx_packets"), out.index("drops:"))
        self.assertLess(out.index("drops:"), out.index("buffer_full"))
        self.assertNotIn("drop_", out)
        # Switch order, not alphabetical.
        self.assertLess(out.index("rx_packets"), out.index("ecn_marked"))
        p = self.run_ctl("counters", "--all", rc=0)
        for n in COUNTER_NAMES:
            self.assertIn(n[5:] if n.startswith("drop_") else n, p.stdout, n)
        self.assertRegex(p.stdout, r"pfc_rx\s+0\s+0\s+0")
        self.assertEqual(json.loads(self.run_ctl("counters", "--json", rc=0).stdout), COUNTERS)
        self.assertEqual(json.loads(self.run_ctl("counters", "--all", "--json", rc=0).stdout),
                         COUNTERS)

    def test_counters_all_zero_single_worker(self):
        zero = {"total": {n: 0 for n in COUNTER_NAMES},
                "drops": {n[5:]: 0 for n in COUNTER_NAMES if n.startswith("drop_")},
                "drops_total": 0, "per_worker": [{}]}
        global COUNTERS
        saved, COUNTERS = COUNTERS, zero
        try:
            p = self.run_ctl("counters", rc=0)
            self.assertIn("counters: all zero", p.stdout)
            self.assertIn("drops: 0 in total", p.stdout)
            p = self.run_ctl("counters", "--all", rc=0)
            self.assertRegex(p.stdout, r"counter\s+total\n")  # no per-worker columns
        finally:
            COUNTERS = saved

    def test_ports(self):
        p = self.run_ctl("ports", rc=0)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], r"port\s+dir\s+admin\s+link\s+wire\s+mac\s+neighbor\s+rx_pkts")
        self.assertEqual(len(lines), 2 + len(PORTS) + 3)  # header, rule, a row per port, kernels
        self.assertRegex(lines[3], r"^\s*1\s+down\s+up\s+up\s+ok\s+02:00:00:00:00:11\s+-\s+200")
        self.assertIn("net_ring_p3", lines[5])
        self.assertEqual(lines[6:], [
            "port 1 kernel p1 (xdp): counters unreadable: p1 has no XDP program",
            "port 2 kernel p2 (tap): to kernel 40 (lost 1), from kernel 38 (lost 0)",
            "port 3 kernel p3 (xdp): to kernel 15 (arp 1, bfd 9, bgp 3, lldp 2, nd 0), "
            "to ofan-dp 5000, no socket 2"])
        self.assertEqual(json.loads(self.run_ctl("ports", "--json", rc=0).stdout), PORTS)

    def test_queues(self):
        p = self.run_ctl("queues", rc=0)
        for s in ["port", "bytes", "pkts", "max_bytes", "avg_bytes", "avg_pkts", "drops",
                  "ecn_marked", "paused", "buffer 1048576 B (1MiB) per port",
                  "ECN above 102400 B (100KiB)"]:
            self.assertIn(s, p.stdout, s)
        rows = p.stdout.splitlines()[2:6]
        self.assertRegex(rows[2], r"^\s*2\s+8316\s+2\s+0\s+124740\s+30\s+2469\.1\s+0\.59\s+10\s+7"
                                  r"\s+no$")
        self.assertRegex(rows[3], r"yes$")
        self.assertEqual(json.loads(self.run_ctl("queues", "--json", rc=0).stdout), QUEUES)

    def test_queues_with_different_limits_get_columns(self):
        global QUEUES
        saved = QUEUES
        QUEUES = copy.deepcopy(saved)
        QUEUES[1]["limit_bytes"] = 2048
        try:
            p = self.run_ctl("queues", rc=0)
            self.assertIn("limit", p.stdout.splitlines()[0])
            self.assertIn("ecn_at", p.stdout.splitlines()[0])
            self.assertNotIn("per port", p.stdout)
        finally:
            QUEUES = saved

    def test_pointers(self):
        p = self.run_ctl("pointers", rc=0)
        self.assertIn("policy ofan, ofan_mode combined, 2 uplinks, 8 keys (4 data, 4 ack)",
                      p.stdout)
        self.assertRegex(p.stdout, r"\n\s*5\s+1\s+ack\s+1 0\s+25\n")
        self.assertRegex(p.stdout, r"\n\s*4\s+0\s+ack\s+-\s+20\n")
        self.assertEqual(json.loads(self.run_ctl("pointers", "--json", rc=0).stdout), POINTERS)
        p = self.run_ctl("pointers", "--key", "5", rc=0)
        self.assertEqual(len(p.stdout.splitlines()), 5)  # summary, blank, header, rule, key 5
        d = json.loads(self.run_ctl("pointers", "--key", "5", "--json", rc=0).stdout)
        self.assertEqual(d["keys"], [POINTERS["keys"][5]])
        self.assertEqual(d["policy"], "ofan")
        p = self.run_ctl("pointers", "--key", "99", rc=1)
        self.assertIn("no key 99", p.stderr)
        self.run_ctl("pointers", "--key", "-1", rc=2)
        self.run_ctl("pointers", "--key", "x", rc=2)

    def test_set_policy(self):
        p = self.run_ctl("set-policy", "ecmp", rc=0)
        self.assertEqual(p.stdout, "policy ecmp, ofan_mode combined, generation 4\n")
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "set_policy", "policy": "ecmp"})
        p = self.run_ctl("set-policy", "ofan", "--ofan-mode", "atomic", "--json", rc=0)
        self.assertEqual(json.loads(p.stdout)["ofan_mode"], "atomic")
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "set_policy", "policy": "ofan",
                                               "ofan_mode": "atomic"})
        p = self.run_ctl("set-policy", "nope", rc=1)
        self.assertIn("set_policy: unknown LB policy 'nope'", p.stderr)
        self.assertEqual(p.stdout, "")
        n = len(self.srv.requests)
        self.run_ctl("set-policy", "ofan", "--ofan-mode", "sideways", rc=2)
        self.run_ctl("set-policy", rc=2)
        self.assertEqual(len(self.srv.requests), n)  # nothing sent

    def test_agent(self):
        lines = self.run_ctl("agent", rc=0).stdout.splitlines()
        self.assertEqual(lines[0], "agent of e0-0 (cycle 17, reported 412 ms ago): converged "
                                   "yes; the neighbours place it as e0-0")
        self.assertEqual(lines[1], "masks: held (converging: routes unchanged for 1 of 2 "
                                   "cycles)")
        self.assertRegex(lines[2], r"port\s+lldp\s+expected\s+neighbour\s+bgp\s+pfx\s+bfd")
        self.assertRegex(lines[5], r"^p2\s+ok\s+a0-0 p0\s+a0-0 p0\s+Established\s+7\s+up$")
        self.assertRegex(lines[6], r"^p3\s+miswired\s+a0-1 p0\s+a1-1 p0\s+-\s+-\s+-$")
        self.assertRegex(lines[7], r"^key\s+route\s+from\s+next hops\s+mask$")
        self.assertRegex(lines[9], r"^\s+1\s+10\.0\.1\.0/24\s+bgp\s+p2\s+0x1$")
        self.assertRegex(lines[10], r"^\s+2\s+10\.1\.0\.0/24\s+bgp\s+p2 p3\s+0x3$")
        self.assertRegex(lines[11], r"^\s+3\s+10\.1\.0\.0/16\s+unreachable\s+-\s+0x0$")
        self.assertEqual(lines[12], "miswire: port 3: expects a0-1 p0, LLDP shows 'a1-1' port "
                                    "'p0'")
        self.assertEqual(lines[13], "error: bfd: vtysh timed out")
        self.assertEqual(json.loads(self.run_ctl("agent", "--json", rc=0).stdout), AGENT)
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "agent"})

    def test_fabric(self):
        """--fabric DIR: the command on every NAME.sock there, worst exit code, one JSON."""
        d = tempfile.mkdtemp(dir=self.tmp.name)
        a, b = FakeSwitch(os.path.join(d, "e0-0.sock")), FakeSwitch(os.path.join(d, "a0-0.sock"))
        b.status["name"] = "a0-0"
        try:
            out = self.run_ctl("--fabric", d, "agent", sock=False, rc=0).stdout.splitlines()
            self.assertRegex(out[0], r"^switch\s+age_ms\s+converged\s+lldp ok\s+miswired\s+"
                                     r"bgp established\s+bfd up\s+masks\s+errors$")
            # sorted by name; the host port is no LLDP port; 1 of 1 session, 7 prefixes
            self.assertRegex(out[2], r"^a0-0\s+412\s+yes\s+1/2\s+1\s+1/1 \(7 pfx\)\s+1/1\s+"
                                     r"held\s+1$")
            self.assertTrue(out[3].startswith("e0-0 "))
            j = json.loads(self.run_ctl("--fabric", d, "status", "--json", sock=False,
                                        rc=0).stdout)
            self.assertEqual(j["fabric"], d)
            self.assertEqual([(s["name"], s["ok"]) for s in j["switches"]],
                             [("a0-0", True), ("e0-0", True)])
            self.assertEqual(j["switches"][0]["result"]["name"], "a0-0")
            st = self.run_ctl("--fabric", d, "status", sock=False, rc=0).stdout.splitlines()
            self.assertRegex(st[2], r"^a0-0\s+edge\s+0\s+ofan\s+3\s+yes\s+1h 02m 03.4s$")
            sections = self.run_ctl("--fabric", d, "counters", sock=False, rc=0).stdout
            self.assertEqual([ln for ln in sections.splitlines() if ln.startswith("==")],
                             ["== a0-0 ==", "== e0-0 =="])
            self.run_ctl("--fabric", d, "set-policy", "ecmp", sock=False, rc=0)
            self.assertEqual(json.loads(a.requests[-1])["cmd"], "set_policy")
            self.assertEqual(json.loads(b.requests[-1])["cmd"], "set_policy")
            # one switch refuses: exit 1, the other's answer kept
            b.mode = "refuse"
            p = self.run_ctl("--fabric", d, "status", "--json", sock=False, rc=1)
            j = json.loads(p.stdout)
            self.assertEqual([s["ok"] for s in j["switches"]], [False, True])
            self.assertIn("error", j["switches"][0])
            b.mode = "normal"
            # a socket nobody listens on: exit 3, and it is named
            dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            dead.bind(os.path.join(d, "c0.sock"))
            dead.close()
            p = self.run_ctl("--fabric", d, "agent", sock=False, rc=3)
            self.assertIn("c0: error: cannot connect to", p.stdout)
            os.unlink(os.path.join(d, "c0.sock"))
        finally:
            a.close()
            b.close()
        # what needs one switch, or no switch at all
        for args in (["port", "3", "down"], ["load-tables", "-"], ["raw", "{}"],
                     ["capture-stop"]):
            p = self.run_ctl("--fabric", d, *args, sock=False, rc=2, stdin="[1]")
            self.assertIn("--fabric", p.stderr)
        p = self.run_ctl("--fabric", d, "status", sock=False, rc=2)
        self.assertIn("no control socket", p.stderr)
        p = self.run_ctl("--fabric", os.path.join(d, "nope"), "status", sock=False, rc=2)
        self.assertIn("nope", p.stderr)

    def test_port(self):
        p = self.run_ctl("port", "3", "down", rc=0)
        self.assertEqual(p.stdout, "port 3: admin down, link up, wire ok\n")
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "set_port", "port": 3,
                                               "admin": "down"})
        # A silent failure: the wire alone, the admin state untouched.
        p = self.run_ctl("port", "3", "--wire", "cut", rc=0)
        self.assertEqual(p.stdout, "port 3: admin down, link up, wire cut\n")
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "set_port", "port": 3,
                                               "wire": "cut"})
        self.run_ctl("port", "3", "up", "--wire", "ok", rc=0)
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "set_port", "port": 3,
                                               "admin": "up", "wire": "ok"})
        d = json.loads(self.run_ctl("port", "3", "up", "--json", rc=0).stdout)
        self.assertEqual([x["admin"] for x in d], ["up"] * 4)
        p = self.run_ctl("port", "99", "down", rc=1)
        self.assertIn("port 99 is not present", p.stderr)
        n = len(self.srv.requests)
        for bad in (["port"], ["port", "3"], ["port", "3", "sideways"], ["port", "x", "up"],
                    ["port", "3", "--wire", "frayed"], ["port", "3", "--wire"],
                    ["port", "-1", "up"], ["port", "3", "up", "extra"]):
            p = self.run_ctl(*bad, rc=2)
            self.assertTrue(p.stderr.strip(), bad)
        self.assertEqual(len(self.srv.requests), n)

    def test_load_tables(self):
        f = self.write_file('["0x3", 1, 2, 3, 3, 3, 3, "0x1"]\n')
        p = self.run_ctl("load-tables", f, rc=0)
        self.assertEqual(p.stdout,
                         "loaded 8 masks: policy ofan, ofan_mode combined, generation 4\n")
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "load_tables",
                                               "masks": ["0x3", 1, 2, 3, 3, 3, 3, "0x1"]})
        f = self.write_file('// from the agent\n{"masks": [3, 3, 3, 3, 3, 3, 3, 3]}')
        d = json.loads(self.run_ctl("load-tables", f, "--json", rc=0).stdout)
        self.assertEqual(d["generation"], 5)
        self.run_ctl("load-tables", "-", rc=0, stdin="[1,1,1,1,1,1,1,1]")
        self.assertEqual(self.last_request()["masks"], [1] * 8)
        # The switch refuses: exit 1 with its message.
        p = self.run_ctl("load-tables", self.write_file("[1, 2]"), rc=1)
        self.assertIn("load_tables: expected 8 masks", p.stderr)
        p = self.run_ctl("load-tables", self.write_file("[16, 1, 1, 1, 1, 1, 1, 1]"), rc=1)
        self.assertIn("beyond w=2", p.stderr)
        # Bad files: exit 2, nothing sent.
        n = len(self.srv.requests)
        for text, msg in [("not json", "is not JSON"), ("{}", '"masks"'), ('"x"', "list of masks"),
                          ("[]", "no masks"), ('["zz", 1]', "mask 0"), ("[1, -1]", "mask 1"),
                          ("[1.5]", "mask 0"), ('["-1"]', "mask 0"), ("[true]", "mask 0"),
                          ('{"masks": 3}', "list of masks")]:
            p = self.run_ctl("load-tables", self.write_file(text), rc=2)
            self.assertIn(msg, p.stderr, text)
        p = self.run_ctl("load-tables", os.path.join(self.tmp.name, "missing.json"), rc=2)
        self.assertIn("cannot read", p.stderr)
        self.run_ctl("load-tables", rc=2)
        self.assertEqual(len(self.srv.requests), n)

    def test_reset_queues(self):
        p = self.run_ctl("reset-queues", rc=0)
        self.assertEqual(p.stdout, "queue statistics reset\n")
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "reset_queues"})
        self.assertEqual(json.loads(self.run_ctl("reset-queues", "--json", rc=0).stdout), {})

    def test_capture(self):
        p = self.run_ctl("capture-start", "--port", "2", "--port", "3", "--count", "5",
                         "--snaplen", "128", "cap.pcapng", rc=0)
        self.assertEqual(self.last_request(), {
            "v": 1, "cmd": "capture_start", "ports": [2, 3], "snaplen": 128, "count": 5,
            "file": os.path.join(os.getcwd(), "cap.pcapng")})
        self.assertIn("capture 7 running: ports 2,3", p.stdout)
        p = self.run_ctl("capture-stop", "--id", "7", rc=0)
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "capture_stop", "id": 7})
        self.assertIn("capture 7 ended", p.stdout)
        p = self.run_ctl("capture-stop", rc=0)
        self.assertEqual(self.last_request(), {"v": 1, "cmd": "capture_stop"})
        st = json.loads(self.run_ctl("capture-status", "--json", rc=0).stdout)
        self.assertEqual(st["captures"][0]["frames"], 3)
        n = len(self.srv.requests)
        self.run_ctl("capture-start", "--port", "64", "/tmp/x.pcapng", rc=2)
        self.run_ctl("capture-start", "/tmp/x.pcapng", rc=2)  # no --port
        self.run_ctl("capture-start", "--port", "1", rc=2)  # no FILE
        self.run_ctl("capture-start", "--port", "1", "--snaplen", "10", "/tmp/x", rc=2)
        self.assertEqual(len(self.srv.requests), n)

    def test_raw(self):
        p = self.run_ctl("raw", '{"v":1,"cmd":"version"}', rc=0)
        self.assertEqual(json.loads(p.stdout), {"v": 1, "ok": True,
                                                "result": {"protocol": 1, "ofan_dp": "0.1.0"}})
        self.assertIn("\n  ", p.stdout)  # indented
        self.assertEqual(self.srv.requests[-1], '{"v":1,"cmd":"version"}')  # sent as given
        p = self.run_ctl("--json", "raw", '{"v":1,"cmd":"ports"}', rc=0)
        self.assertEqual(p.stdout.count("\n"), 1)  # the reply line as received
        self.assertEqual(json.loads(p.stdout)["result"], PORTS)
        p = self.run_ctl("raw", '{"v":1,"cmd":"frobnicate"}', rc=1)
        self.assertIn("unknown command 'frobnicate'", json.loads(p.stdout)["error"])
        self.assertEqual(json.loads(p.stdout)["code"], "unknown_command")
        p = self.run_ctl("raw", "not json", rc=1)
        self.assertFalse(json.loads(p.stdout)["ok"])
        self.run_ctl("raw", '{"v":2,"cmd":"status"}', rc=1)
        self.run_ctl("raw", '{"v":1,\n"cmd":"status"}', rc=2)
        self.run_ctl("raw", rc=2)

    def test_global_options_after_the_command(self):
        d = json.loads(subprocess.run([OFANCTL, "status", "--socket", self.sock, "--json",
                                       "--timeout-ms", "2000"],
                                      capture_output=True, text=True, check=True).stdout)
        self.assertEqual(d, STATUS)

    def test_dribbled_and_large_replies(self):
        self.srv.mode = "dribble"
        for cmd, want in [("status", STATUS), ("counters", COUNTERS), ("ports", PORTS),
                          ("queues", QUEUES)]:
            self.assertEqual(json.loads(self.run_ctl(cmd, "--json", rc=0).stdout), want, cmd)
        self.run_ctl("counters", rc=0)
        self.srv.pointers = BIG_POINTERS
        d = json.loads(self.run_ctl("pointers", "--json", rc=0).stdout)
        self.assertEqual(d, BIG_POINTERS)
        p = self.run_ctl("pointers", rc=0)
        self.assertEqual(len(p.stdout.splitlines()), 4 + 10000)
        self.srv.mode = "normal"
        self.assertEqual(json.loads(self.run_ctl("pointers", "--json", rc=0).stdout), BIG_POINTERS)

    # -- errors ---------------------------------------------------------------

    def test_error_reply_exits_1(self):
        p = self.run_ctl("set-policy", "bogus", rc=1)
        self.assertTrue(p.stderr.startswith("ofanctl: set_policy: unknown LB policy 'bogus'"))
        # Without a "code" (an older switch) or with one ofanctl does not know
        # (a newer switch): the same error.
        for mode in ("no_code", "new_code"):
            self.srv.mode = mode
            q = self.run_ctl("set-policy", "bogus", rc=1)
            self.assertEqual(q.stderr, p.stderr, mode)

    def test_no_server_exits_3(self):
        missing = os.path.join(self.tmp.name, "nobody.sock")
        p = self.run_ctl("--socket", missing, "status", sock=False, rc=3)
        self.assertIn(missing, p.stderr)
        self.assertIn("is ofan-dp running?", p.stderr)
        # A stale socket file (a crashed switch): connection refused.
        stale = os.path.join(self.tmp.name, "stale.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(stale)
        s.close()
        try:
            p = self.run_ctl("--socket", stale, "status", sock=False, rc=3)
            self.assertIn("refused", p.stderr)
            self.assertIn(stale, p.stderr)
        finally:
            os.unlink(stale)
        # --name picks /run/ofan/<name>.sock; --socket wins over it.
        name = f"ofanctl-test-{os.getpid()}-nonexistent"
        p = self.run_ctl("--name", name, "status", sock=False, rc=3)
        self.assertIn(f"/run/ofan/{name}.sock", p.stderr)
        self.run_ctl("--name", name, "status", rc=0)

    def test_server_closes_mid_reply_exits_3(self):
        self.srv.mode = "close_mid"
        p = self.run_ctl("status", rc=3)
        self.assertIn("closed the connection in the middle of a reply", p.stderr)
        self.assertIn(self.sock, p.stderr)
        self.assertEqual(p.stdout, "")

    def test_server_closes_without_reply_exits_3(self):
        self.srv.mode = "close_now"
        p = self.run_ctl("counters", rc=3)
        self.assertIn(self.sock, p.stderr)
        self.assertIn("closed the connection", p.stderr)

    def test_silent_server_times_out_exits_3(self):
        self.srv.mode = "silent"
        t = time.monotonic()
        p = self.run_ctl("--timeout-ms", "300", "status", rc=3)
        elapsed = time.monotonic() - t
        self.assertIn("within 300 ms", p.stderr)
        self.assertIn(self.sock, p.stderr)
        self.assertGreaterEqual(elapsed, 0.29)
        self.assertLess(elapsed, 5)

    def test_malformed_replies_exit_3(self):
        for mode, msg in [("garbage", "not JSON"), ("v2", "protocol v2")]:
            self.srv.mode = mode
            p = self.run_ctl("status", rc=3)
            self.assertIn("malformed reply", p.stderr, mode)
            self.assertIn(msg, p.stderr, mode)
        self.srv.mode = "bad_code"
        p = self.run_ctl("set-policy", "bogus", rc=3)
        self.assertIn("malformed reply", p.stderr)
        self.assertIn("'code' is not a string", p.stderr)
        self.srv.mode = "bad_shape"
        p = self.run_ctl("status", rc=3)
        self.assertIn("unexpected status reply", p.stderr)
        p = self.run_ctl("status", "--json", rc=0)  # --json shows it as is
        self.assertEqual(json.loads(p.stdout), {"surprise": True})

    def test_bad_command_lines_exit_2(self):
        for args in ([], ["frobnicate"], ["--bogus", "status"], ["status", "--bogus"],
                     ["--timeout-ms", "0", "status"], ["--timeout-ms", "x", "status"],
                     ["status", "extra"], ["counters", "--key", "1"], ["status", "ports"]):
            p = self.run_ctl(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertTrue(p.stderr.strip(), args)
        for args in (["--name", "a/b", "status"], ["--name", "", "status"]):
            p = self.run_ctl(*args, sock=False, rc=2)
            self.assertIn("--name", p.stderr)
        p = self.run_ctl("--socket", "/tmp/" + "x" * 200, "status", sock=False, rc=2)
        self.assertIn("longer than", p.stderr)
        self.assertEqual(self.srv.requests, [])


def list_policies():
    p = subprocess.run([OFANCTL, "--list-policies", "--json"], capture_output=True, text=True,
                       timeout=30)
    if p.returncode != 0:
        raise SystemExit(f"{OFANCTL} --list-policies --json: rc {p.returncode}: {p.stderr}")
    return [x["name"] for x in json.loads(p.stdout)]


if __name__ == "__main__":
    if len(sys.argv) > 1:
        OFANCTL = sys.argv.pop(1)
    POLICIES[:] = list_policies()
    unittest.main(verbosity=2)
