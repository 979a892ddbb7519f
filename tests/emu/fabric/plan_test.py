#!/usr/bin/python3
"""ofan-emu plan and export (emu/fabric/plan.py, containerlab.py): one plan
for a fabric across servers, and the Containerlab topologies made from it.

    plan_test.py            (unittest; no root; needs build/emu/ofan-topo)
    OFAN_UPDATE_GOLDEN=1 plan_test.py    rewrite the golden exports

Covered: a k=4 fat tree over 2 servers by pod (every node on one server,
each pod whole, cores spread, only aggregation-core links cross, each with
VNI = base + link id, unique, ofan-topo's ports and MACs, its stitch MACs
locally administered), the same plan every time (also through the command
line) and through JSON and back; a 2-level leaf-spine; auto placement
(balanced, hosts with their edge switch); 3 servers; one server (no
crossing link); IPv6 (70 bytes of overhead); bad arguments (empty,
duplicate, bad or mixed addresses, too many servers, VNI or port out of
range) and bad plan files (not JSON, not text, wrong version, unknown or
missing node, duplicate VNI, a link that does not cross) giving exit 2
and one line; the Containerlab exports of a k=4 fat tree (whole, and each
server's part of a 2-server plan) equal to golden files and valid under a
subset of Containerlab's schema (golden/clab-schema-subset.json); random
bytes and random JSON mutations of a plan never giving another exception
than PlanError, nor a traceback from ofan-emu.
"""
import contextlib
import copy
import io
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "emu"))
from fabric import cli, containerlab, facts, plan  # noqa: E402
from fabric.plan import PlanError  # noqa: E402
from fabric.topology import Topology  # noqa: E402

import jsonschema  # noqa: E402  (python3-jsonschema; scripts/setup.sh installs it)
import yaml  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

EMU = str(REPO / "emu" / "ofan-emu")
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("OFAN_UPDATE_GOLDEN") == "1"
TWO = "192.0.2.1,192.0.2.2"
TOPO: dict[tuple[int, int], Topology] = {}


def topo(k: int = 4, levels: int = 3) -> Topology:
    if (k, levels) not in TOPO:
        TOPO[(k, levels)] = Topology(k, levels)
    return TOPO[(k, levels)]


def make(servers: str = TWO, levels: int = 3, placement: str = "pod", **kw: Any) -> plan.Plan:
    return plan.compute(topo(4, levels), "ofan", plan.parse_servers(servers), facts.netdev_mtu(),
                        placement=placement, **kw)


def emu(*argv: str) -> subprocess.CompletedProcess[str]:
    """ofan-emu ARGV as a process (its start costs ~0.7 s: used sparingly)."""
    return subprocess.run([EMU, *argv], capture_output=True, text=True, timeout=60)


def main(*argv: str) -> subprocess.CompletedProcess[str]:
    """ofan-emu ARGV in this process (cli.main): its exit code and output.
    An exception other than those main() turns into exit codes escapes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(list(argv))
        except SystemExit as e:  # argparse
            rc = e.code if isinstance(e.code, int) else 2
    return subprocess.CompletedProcess(list(argv), rc, out.getvalue(), err.getvalue())


def roles(t: Topology) -> dict[str, str]:
    out = {s.name: s.role for s in t.switches}
    out.update({h.name: "host" for h in t.hosts})
    return out


class Checks(unittest.TestCase):
    def valid(self, p: plan.Plan, t: Topology) -> None:
        """What every plan holds, whatever its placement."""
        names = [n.name for n in p.nodes]
        self.assertEqual(sorted(names), sorted(roles(t)), "every node once")
        self.assertEqual(len(names), len(set(names)))
        servers = {s.name for s in p.servers}
        self.assertTrue(all(n.server in servers for n in p.nodes))
        self.assertEqual({n.server for n in p.nodes}, servers, "every server holds nodes")
        where = p.server_of()
        crossing = {li.id for li in t.links if where[li.a[0]] != where[li.b[0]]}
        self.assertEqual([c.id for c in p.crossing], sorted(crossing))
        vnis = [c.vni for c in p.crossing]
        self.assertEqual(len(vnis), len(set(vnis)), "VNIs unique")
        for c in p.crossing:
            self.assertEqual(c.vni, p.vni_base + c.id)
            li = t.links[c.id]
            self.assertEqual({(c.a.node, c.a.port), (c.b.node, c.b.port)}, {li.a, li.b})
            for e in (c.a, c.b):
                self.assertEqual(e.server, where[e.node])
                self.assertEqual(e.mac, plan.port_mac(t, e.node, e.port))
                first = int(e.stitch_mac[:2], 16)
                self.assertEqual(first & 3, 2, "locally administered, unicast")
            self.assertNotEqual(c.a.server, c.b.server)
        macs = [e.stitch_mac for c in p.crossing for e in (c.a, c.b)]
        self.assertEqual(len(macs), len(set(macs)))
        self.assertFalse(set(macs) & {plan.port_mac(t, n, p_) for li in t.links
                                      for n, p_ in (li.a, li.b)})
        for h in t.hosts:
            self.assertEqual(where[h.name], where[h.edge_name], "a host with its edge")
        self.assertEqual(plan.from_json(p.to_json(), "round trip"), p)
        plan.check_against(p, t, "check")


class PodPlacement(Checks):
    def test_k4_over_two_servers(self) -> None:
        t = topo()
        p = make()
        self.valid(p, t)
        r = roles(t)
        self.assertTrue(p.crossing)
        self.assertTrue(all({r[c.a.node], r[c.b.node]} == {"agg", "core"} for c in p.crossing),
                        "only aggregation-core links cross")
        for pod in range(4):
            members = {n.server for n in p.nodes if n.pod == pod}
            self.assertEqual(len(members), 1, f"pod {pod} on one server")
        cores = [n.server for n in p.nodes if n.role == "core"]
        self.assertEqual(sorted(cores), ["srv0", "srv0", "srv1", "srv1"], "cores spread")
        self.assertEqual(len(p.crossing), 8)
        self.assertEqual(p.underlay_mtu, facts.netdev_mtu() + 50)
        self.assertEqual((p.vni_base, p.udp_port), (10000, 4789))
        self.assertEqual([s.name for s in p.servers], ["srv0", "srv1"])

    def test_deterministic(self) -> None:
        a, b = make().to_json(), make().to_json()
        self.assertEqual(a, b)
        r1 = emu("plan", "--k", "4", "--servers", TWO, "--json")
        r2 = emu("plan", "--k", "4", "--levels", "3", "--servers", TWO, "--json")
        self.assertEqual(r1.returncode, 0, r1.stderr)
        self.assertEqual(r1.stdout, r2.stdout)
        self.assertEqual(r1.stdout, a)

    def test_file_round_trip(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "k4.plan.json"
            r = emu("plan", "--k", "4", "--servers", TWO, "-o", str(f))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("srv0    192.0.2.1", r.stdout)
            self.assertIn("a0-0:3 (srv0) -- c1:0 (srv1)", r.stdout)
            p, t = plan.load(f)
            self.assertEqual(p, make())
            self.assertEqual(p.to_json(), f.read_text())
            self.assertEqual(len(t.links), 48)
            part = p.part("192.0.2.2")
            self.assertEqual(part.server.name, "srv1")
            self.assertEqual(len(part.nodes), 18)
            self.assertEqual(len(part.crossing), 8)

    def test_leafspine(self) -> None:
        t = topo(4, 2)
        p = make(levels=2)
        self.valid(p, t)
        r = roles(t)
        self.assertTrue(all({r[c.a.node], r[c.b.node]} == {"edge", "agg"} for c in p.crossing))
        spines = [n.server for n in p.nodes if n.role == "agg"]
        self.assertEqual(sorted(spines), ["srv0", "srv1"], "spines spread")
        leaves = [n.server for n in p.nodes if n.role == "edge"]
        self.assertEqual(leaves, ["srv0", "srv0", "srv1", "srv1"])

    def test_three_servers(self) -> None:
        p = make("192.0.2.1,192.0.2.2,192.0.2.3")
        self.valid(p, topo())
        load = [sum(1 for n in p.nodes if n.server == s.name) for s in p.servers]
        self.assertEqual(sorted(load), [10, 10, 16])

    def test_one_server(self) -> None:
        p = make("192.0.2.1")
        self.valid(p, topo())
        self.assertEqual(p.crossing, ())

    def test_ipv6_and_names(self) -> None:
        p = make("2001:DB8::1,[2001:db8::2]")
        self.assertEqual([s.address for s in p.servers], ["2001:db8::1", "2001:db8::2"])
        self.assertEqual(p.underlay_mtu, facts.netdev_mtu() + 70)
        q = make("Srv-A.example.,srv-b.example")
        self.assertEqual([s.address for s in q.servers], ["srv-a.example", "srv-b.example"])
        self.valid(q, topo())

    def test_vxlan_options(self) -> None:
        p = make(vni_base=1, udp_port=8472)
        self.assertEqual([c.vni for c in p.crossing], [1 + c.id for c in p.crossing])
        self.assertEqual(p.udp_port, 8472)
        for base in (0, plan.MAX_VNI - 10):
            with self.assertRaises(PlanError):
                make(vni_base=base)
        with self.assertRaises(PlanError):
            make(udp_port=70000)


class AutoPlacement(Checks):
    def test_balanced(self) -> None:
        for levels, servers in ((3, TWO), (3, "192.0.2.1,192.0.2.2,192.0.2.3"), (2, TWO)):
            t = topo(4, levels)
            p = make(servers, levels=levels, placement="auto")
            self.valid(p, t)
            load = [sum(1 for n in p.nodes if n.server == s.name) for s in p.servers]
            heaviest = 1 + max(len([h for h in t.hosts if h.edge_name == s.name])
                               for s in t.switches)
            self.assertLessEqual(max(load) - min(load), heaviest, f"{levels} {servers}: {load}")
            self.assertFalse(any(t.links[c.id].host for c in p.crossing), "no host link crosses")
            self.assertEqual(p.to_json(), make(servers, levels=levels, placement="auto").to_json())

    def test_every_switch_alone(self) -> None:
        # As many servers as switches: one switch (and its hosts) each.
        servers = ",".join(f"192.0.2.{i + 1}" for i in range(6))
        p = make(servers, levels=2, placement="auto")
        self.valid(p, topo(4, 2))
        self.assertEqual(len(p.crossing), 8)


class BadArguments(unittest.TestCase):
    def refused(self, argv: list[str], words: str) -> None:
        r = main(*argv)
        self.assertEqual(r.returncode, 2, f"{argv}: {r.stdout}{r.stderr}")
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(words, r.stderr)

    def test_servers(self) -> None:
        for servers, words in (("", "none empty"), ("192.0.2.1,,192.0.2.2", "none empty"),
                               ("192.0.2.1,192.0.2.1", "192.0.2.1 is named twice"),
                               ("2001:db8::1,2001:DB8::1", "named twice (as 2001:db8::1)"),
                               ("300.1.1.1,192.0.2.1", "'300.1.1.1' is neither"),
                               ("a_b,192.0.2.1", "'a_b' is neither"),
                               ("0.0.0.0,192.0.2.1", "not a server's unicast address"),
                               ("224.0.0.1,192.0.2.1", "not a server's unicast address"),
                               ("192.0.2.1,2001:db8::1", "IPv4 and IPv6 addresses mixed"),
                               (",".join(f"192.0.2.{i}" for i in range(1, 6)),
                                "has 4, fewer than 5 servers")):
            self.refused(["plan", "--k", "4", "--servers", servers], words)
        many = ",".join(f"192.0.2.{i}" for i in range(1, 22))
        self.refused(["plan", "--k", "4", "--servers", many, "--placement", "auto"],
                     "21 servers for the 20 switches")
        self.refused(["plan", "--k", "4", "--servers", TWO, "--vxlan-port", "0"], "UDP port 0")
        self.refused(["plan", "--k", "4", "--servers", TWO, "--vni-base", "16777200"],
                     "must be 1..16777215")
        self.refused(["plan", "--k", "5", "--servers", TWO], "--k 5")
        self.refused(["plan", "--topology", "x.yaml", "--k", "4", "--servers", TWO],
                     "no --k or --levels")
        r = main("plan", "--k", "4")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--servers", r.stderr)

    def test_processes(self) -> None:
        """As a process too: exit 2, one line, no traceback."""
        for argv, words in ((["plan", "--k", "4", "--servers", "192.0.2.1,192.0.2.1"],
                             "named twice"),
                            (["export", "--format", "containerlab", "--servers", TWO, "-o", "-"],
                             "give --server S")):
            r = emu(*argv)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn(words, r.stderr)

    def test_export(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "p.json"
            self.assertEqual(main("plan", "--k", "4", "--servers", TWO, "-o", str(f)).returncode,
                             0)
            self.refused(["export", "--format", "containerlab", "--plan", str(f), "-o", "-"],
                         "give --server S")
            self.refused(["export", "--format", "containerlab", "--plan", str(f), "--server",
                          "srv7", "-o", "-"], "the plan's servers are srv0 (192.0.2.1)")
            self.refused(["export", "--format", "containerlab", "--plan", str(f), "--k", "4",
                          "-o", "-"], "not --k")
            self.refused(["export", "--format", "containerlab", "--servers", "a.example,b.example",
                          "--server", "srv0", "-o", "-"], "needs IP addresses")
            self.refused(["export", "--format", "containerlab", "--server", "srv0", "-o", "-"],
                         "needs --plan FILE or --servers")
            self.refused(["export", "--format", "containerlab", "-o", str(Path(d) / "no" / "x")],
                         "No such file or directory")


class BadPlanFiles(unittest.TestCase):
    doc: dict[str, Any] = {}

    @classmethod
    def setUpClass(cls) -> None:
        cls.doc = make().to_doc()

    def refused(self, data: bytes, words: str) -> None:
        with self.assertRaises(PlanError) as cm:
            with tempfile.TemporaryDirectory() as d:
                f = Path(d) / "bad.json"
                f.write_bytes(data)
                plan.load(f)
        self.assertIn(words, str(cm.exception))
        self.assertNotIn("\n", str(cm.exception))
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "bad.json"
            f.write_bytes(data)
            r = main("export", "--format", "containerlab", "--plan", str(f), "--server", "srv0",
                     "-o", "-")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertIn(words, r.stderr)

    def mutated(self, change: Any) -> bytes:
        d = copy.deepcopy(self.doc)
        change(d)
        return json.dumps(d).encode()

    def test_files(self) -> None:
        self.refused(b"{not json", "not JSON")
        self.refused(b"\xff\xfe{}", "not UTF-8 text (byte 0xff at offset 0)")
        self.refused(b"[]", "is not a map")
        self.refused(self.mutated(lambda d: d.update(version=2)), "plan version 2; this ofan-emu "
                     "reads version 1")
        self.refused(self.mutated(lambda d: d.pop("nodes")), "no 'nodes'")

        def unknown_node(d: dict[str, Any]) -> None:
            d["nodes"][0]["name"] = "e9-9"
        self.refused(self.mutated(unknown_node), "unknown node 'e9-9'")

        def unknown_end(d: dict[str, Any]) -> None:
            d["crossing_links"][0]["a"]["node"] = "zz"
        self.refused(self.mutated(unknown_end), "unknown node 'zz'")

        def missing(d: dict[str, Any]) -> None:
            d["nodes"].pop()
        self.refused(self.mutated(missing), "node 'h15' is on no server")

        def dup_vni(d: dict[str, Any]) -> None:
            d["crossing_links"][1]["vni"] = d["crossing_links"][0]["vni"]
        self.refused(self.mutated(dup_vni), "duplicate VNI 10033")

        def wrong_vni(d: dict[str, Any]) -> None:
            d["crossing_links"][1]["vni"] += 100
        self.refused(self.mutated(wrong_vni), "is not vni_base 10000 + link id 35")

        def dropped(d: dict[str, Any]) -> None:
            d["crossing_links"].pop(0)
        self.refused(self.mutated(dropped), "link 33 (a0-0:3--c1:0) is not listed")

        def moved(d: dict[str, Any]) -> None:
            for n in d["nodes"]:
                if n["name"] == "c1":
                    n["server"] = "srv0"
        self.refused(self.mutated(moved), "c1 is on srv0, not 'srv1'")

        def bad_server(d: dict[str, Any]) -> None:
            d["servers"][1]["address"] = "192.0.2.1"
        self.refused(self.mutated(bad_server), "an address named twice")

        def bad_mtu(d: dict[str, Any]) -> None:
            d["underlay_mtu"] = 1500
        self.refused(self.mutated(bad_mtu), "underlay_mtu 1500, but fabric_mtu")
        self.refused(self.mutated(lambda d: d["topology"].update(k=6)), "is on no server")


class Export(unittest.TestCase):
    schema: Any = None

    @classmethod
    def setUpClass(cls) -> None:
        s = json.loads((GOLDEN / "clab-schema-subset.json").read_text())
        jsonschema.Draft7Validator.check_schema(s)
        cls.schema = jsonschema.Draft7Validator(s)

    def golden(self, name: str, argv: list[str]) -> dict[str, Any]:
        r = main("export", "--format", "containerlab", *argv, "-o", "-")
        self.assertEqual(r.returncode, 0, r.stderr)
        path = GOLDEN / name
        if UPDATE:
            path.write_text(r.stdout)
        self.assertEqual(r.stdout, path.read_text(),
                         f"export differs from {path} (OFAN_UPDATE_GOLDEN=1 rewrites it)")
        doc = yaml.safe_load(r.stdout)
        errors = [f"{list(e.absolute_path)}: {e.message[:200]}"
                  for e in self.schema.iter_errors(doc)]
        self.assertEqual(errors, [], f"{name} against Containerlab's schema")
        self.assertIsInstance(doc, dict)
        return dict(doc)

    def test_whole_fabric(self) -> None:
        doc = self.golden("clab-k4.clab.yml", ["--k", "4"])
        t = topo()
        self.assertEqual(len(doc["topology"]["nodes"]), 36)
        links = doc["topology"]["links"]
        self.assertEqual(len(links), len(t.links))
        self.assertTrue(all(li["type"] == "veth" and li["mtu"] == facts.netdev_mtu()
                            for li in links))
        images = {n["image"] for n in doc["topology"]["nodes"].values()}
        self.assertEqual(images, {containerlab.SWITCH_IMAGE, containerlab.HOST_IMAGE})
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "k4.clab.yml")
            r = emu("export", "--format", "containerlab", "--k", "4", "-o", out, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout), {"file": out, "format": "containerlab",
                                                    "nodes": 36, "links": len(t.links)})
        r = emu("topology", "--k", "4", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), t.to_yaml_dict("fattree4"))

    def test_two_servers(self) -> None:
        t = topo()
        p = make()
        parts = [self.golden(f"clab-k4-{s}.clab.yml", ["--servers", TWO, "--server", s])
                 for s in ("srv0", "srv1")]
        nodes = [set(d["topology"]["nodes"]) for d in parts]
        self.assertEqual(nodes[0] | nodes[1], set(roles(t)))
        self.assertFalse(nodes[0] & nodes[1])
        stitched: dict[int, list[dict[str, Any]]] = {}
        for i, d in enumerate(parts):
            for li in d["topology"]["links"]:
                if li["type"] == "vxlan-stitch":
                    self.assertIn(li["endpoint"]["node"], nodes[i])
                    self.assertEqual(li["remote"], p.servers[1 - i].address)
                    self.assertEqual(li["dst-port"], 4789)
                    stitched.setdefault(li["vni"], []).append(li)
                else:
                    self.assertTrue(all(e["node"] in nodes[i] for e in li["endpoints"]))
        self.assertEqual(sorted(stitched), [c.vni for c in p.crossing])
        for c in p.crossing:
            ends = {(x["endpoint"]["node"], x["endpoint"]["interface"], x["endpoint"]["mac"])
                    for x in stitched[c.vni]}
            self.assertEqual(ends, {(e.node, f"eth{e.port + 1}", e.mac) for e in (c.a, c.b)})
        veths = sum(1 for x in parts for li in x["topology"]["links"] if li["type"] == "veth")
        self.assertEqual(veths + len(p.crossing), len(t.links))
        # From a plan file: the same part.
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "p.json"
            self.assertEqual(emu("plan", "--k", "4", "--servers", TWO, "-o", str(f)).returncode,
                             0)
            r = emu("export", "--format", "containerlab", "--plan", str(f), "--server",
                    "192.0.2.2", "-o", str(Path(tmp) / "s1.yml"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual((Path(tmp) / "s1.yml").read_text(),
                             (GOLDEN / "clab-k4-srv1.clab.yml").read_text())

    def test_schema_catches(self) -> None:
        """The subset rejects what Containerlab's schema rejects (so the
        checks above can fail): udp-port for dst-port, a host name as
        remote, a VNI of 0."""
        doc = self.golden("clab-k4-srv0.clab.yml", ["--servers", TWO, "--server", "srv0"])
        changes: list[dict[str, Any]] = [{"udp-port": 4789}, {"remote": "srv1.example"},
                                         {"vni": 0}]
        for change in changes:
            d = copy.deepcopy(doc)
            li = next(x for x in d["topology"]["links"] if x["type"] == "vxlan-stitch")
            if "udp-port" in change:
                del li["dst-port"]
            li.update(change)
            self.assertTrue(list(self.schema.iter_errors(d)), str(change))


# -- property tests ----------------------------------------------------------------
def bounded(n: int) -> Any:
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=False)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
    | st.text(max_size=8) | st.sampled_from(["srv0", "srv1", "e0-0", "c1", "02:0f:00:27:31:00",
                                             "192.0.2.1", "::", "fattree", "leafspine", "auto"])
    | st.integers(0, 12),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6)


@st.composite
def mutations(draw: Any, doc: dict[str, Any]) -> bytes:
    """doc with one to three edits at random places: a value replaced, a
    member removed, a list item doubled; then, sometimes, bytes cut."""
    d = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        parent: Any = None
        key: Any = None
        cur: Any = d
        for _ in range(draw(st.integers(1, 4))):
            if not isinstance(cur, (dict, list)) or not cur:
                break
            keys = list(cur) if isinstance(cur, dict) else list(range(len(cur)))
            parent, key = cur, draw(st.sampled_from(keys))
            cur = cur[key]
        if parent is None:
            continue
        action = draw(st.sampled_from(["set", "delete", "double"]))
        if action == "set":
            parent[key] = draw(json_values)
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    data = json.dumps(d).encode()
    if draw(st.integers(0, 9)) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    return data


def load_bytes(data: bytes) -> None:
    """A plan file's bytes through everything that reads one."""
    p = plan.from_json(data, "fuzz")
    t = p.topology.build("fuzz: topology")
    plan.check_against(p, t, "fuzz")
    for s in p.servers:
        containerlab.topology_doc(p.name, t, p.fabric_mtu, p, s)


class Properties(unittest.TestCase):
    doc: dict[str, Any] = {}

    @classmethod
    def setUpClass(cls) -> None:
        cls.doc = make(placement="auto").to_doc()

    def only_plan_errors(self, data: bytes) -> None:
        try:
            load_bytes(data)
        except PlanError as e:
            self.assertTrue(str(e).strip() and "\n" not in str(e), repr(str(e)))

    @bounded(150)
    @given(st.binary(max_size=200))
    def test_random_bytes(self, data: bytes) -> None:
        self.only_plan_errors(data)

    def test_random_mutations(self) -> None:
        @bounded(250)
        @given(mutations(self.doc))
        def run(data: bytes) -> None:
            self.only_plan_errors(data)
        run()

    def test_command_line(self) -> None:
        """A few through ofan-emu itself: exit 0 or 2, never a traceback."""
        seen: list[int] = []

        @bounded(8)
        @given(mutations(self.doc))
        def run(data: bytes) -> None:
            with tempfile.TemporaryDirectory() as d:
                f = Path(d) / "p.json"
                f.write_bytes(data)
                r = emu("export", "--format", "containerlab", "--plan", str(f), "--server",
                        "srv1", "-o", "-")
            self.assertIn(r.returncode, (0, 2), r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            seen.append(r.returncode)
        run()
        self.assertIn(2, seen)


class Facts(unittest.TestCase):
    def test_one_place(self) -> None:
        """The numbers other places ask for: the MTU is ofan-dp's, the VXLAN
        overheads are an outer Ethernet, IP, UDP and VXLAN header."""
        self.assertEqual(plan.VXLAN_OVERHEAD, {4: 14 + 20 + 8 + 8, 6: 14 + 40 + 8 + 8})
        self.assertEqual(make().fabric_mtu, facts.netdev_mtu())
        mac = plan.stitch_mac(0x123456, 1)
        self.assertEqual(mac, "02:0f:12:34:56:01")
        self.assertTrue(ipaddress.ip_address("192.0.2.1"))


if __name__ == "__main__":
    unittest.main(verbosity=1)
