"""Replays tofino_p4/vectors/ on a target running pofan.p4: Intel's Tofino
model (tofino-model) or a Tofino switch, through BF Runtime and PTF.

For each vector set NAME (NAME.golden with NAME.tables.json beside it) the test
clears the program's tables, loads NAME.tables.json (every table entry, the
switch_config default, and the pointer register per pipe: asymmetric, since
each pipe has its own pointers), then sends the frames in file order and checks
each one: the expected bytes on the expected device port, or nothing at all
for a drop. The order matters: every up-bound frame advances its pipe's
pointer, as in the model that made the vectors. The vectors' ce lines (the
frame as ECN marks it above the queue threshold) are not checked here: a test
cannot set a queue's depth; the C++ tests check them against ofan-dp.

Needs the SDE (bfrt_grpc, ptf, bfruntime_client_base_tests); nothing here runs
in this repository's CI, which checks the same vectors against the C++ model.

    # build and start pofan.p4 (see tofino_p4/README.md), then:
    $SDE/run_p4_tests.sh -p pofan -t $OFAN/tofino_p4/ptf \
        --test-params="vectors_dir='$OFAN/tofino_p4/vectors'"

Test parameters (--test-params, Python literals separated by ';'):
  vectors_dir    the folder of the vectors (default: ../vectors from this file)
  only           a comma-separated list of vector names (default: all)
  cpu_port       the PTF port number that sees the CPU port's frames; without
                 it, frames for the CPU are only checked not to leave on a
                 fabric port
  port_offset    added to a vector's device port to get the PTF port number
                 (default 0: the SDE's usual port map, PTF port = device port)
  bring_up       1 to add the fabric ports at 100G with RS FEC through the
                 $PORT table (a switch; the model needs none)
"""

import json
import logging
import os

import bfrt_grpc.bfruntime_pb2 as bfruntime_pb2
import bfrt_grpc.client as gc
import ptf.testutils as testutils
from bfruntime_client_base_tests import BfRuntimeTest

P4_NAME = "pofan"
CLIENT_ID = 0
TABLES_FORMAT = "ofan-p4-tables-1"
# Tables in the order they are loaded: lists before the keys that read them.
LOAD_ORDER = ["pipe.Ingress." + n for n in
              ("route", "f2_xorw", "f2_add", "uplink_list", "pofan_key", "port_mac")] + \
    ["pipe.Egress.ecn_threshold"]

logger = logging.getLogger("pofan_vectors")


def read_vectors(path):
    """A vector file (tests/golden/golden.h's format): its switch line, its
    ports (device port -> attributes) and its frames in order."""
    switch, ports, frames = None, {}, []
    frame = None
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            kind = words[0]
            if kind == "switch":
                switch = dict(w.split("=", 1) for w in words[2:])
                switch["name"] = words[1]
            elif kind == "port":
                ports[int(words[2])] = dict(w.split("=", 1) for w in words[3:])
            elif kind == "frame":
                frame = {"name": words[1], "attrs": dict(w.split("=", 1) for w in words[2:]),
                         "in": None, "out": []}
                frames.append(frame)
            elif kind == "in" and frame is not None:
                frame["in"] = bytes.fromhex(words[1])
            elif kind == "out" and frame is not None:
                frame["out"].append((int(words[1]), bytes.fromhex(words[2])))
            else:
                raise ValueError("%s:%d: unexpected line %r" % (path, lineno, kind))
    if switch is None:
        raise ValueError("%s: no switch line" % path)
    return switch, ports, frames


class PofanVectors(BfRuntimeTest):
    """Every vector set of tofino_p4/vectors/, frame by frame."""

    def setUp(self):
        BfRuntimeTest.setUp(self, CLIENT_ID, P4_NAME)
        self.bfrt_info = self.interface.bfrt_info_get(P4_NAME)
        self.target = gc.Target(device_id=0, pipe_id=0xFFFF)
        params = testutils.test_params_get()
        here = os.path.dirname(os.path.abspath(__file__))
        self.vectors_dir = params.get("vectors_dir", os.path.join(here, "..", "vectors"))
        only = params.get("only")
        self.only = set(only.split(",")) if only else None
        self.cpu_ptf_port = params.get("cpu_port")
        self.port_offset = int(params.get("port_offset", 0))
        self.bring_up = int(params.get("bring_up", 0)) == 1

    def table(self, name):
        return self.bfrt_info.table_get(name)

    def clear(self):
        for name in LOAD_ORDER:
            self.table(name).entry_del(self.target, [])
        self.table("pipe.Ingress.switch_config").default_entry_reset(self.target)

    def load(self, spec):
        if spec.get("format") != TABLES_FORMAT:
            raise ValueError("tables are %r, not %s" % (spec.get("format"), TABLES_FORMAT))
        by_name = {t["name"]: t for t in spec["tables"]}
        cfg = by_name["pipe.Ingress.switch_config"]["default_action"]
        sc = self.table("pipe.Ingress.switch_config")
        sc.default_entry_set(self.target, sc.make_data(
            [gc.DataTuple(k, v) for k, v in cfg["data"].items()], cfg["action"]))
        for name in LOAD_ORDER:
            t = self.table(name)
            entries = by_name[name]["entries"]
            keys = [t.make_key([gc.KeyTuple(k, v) for k, v in e["key"].items()]) for e in entries]
            data = [t.make_data([gc.DataTuple(k, v) for k, v in e["data"].items()], e["action"])
                    for e in entries]
            if keys:
                t.entry_add(self.target, keys, data)
            logger.info("%s: %d entries", name, len(keys))
        for reg in spec.get("registers", []):
            r = self.table(reg["name"])
            # Each pipe its own values (POfan's per-pipe pointers, App. H).
            r.attribute_entry_scope_set(self.target, predefined_pipe_scope=True,
                                        predefined_pipe_scope_val=bfruntime_pb2.Mode.SINGLE)
            for pipe, values in enumerate(reg["pipes"]):
                tgt = gc.Target(device_id=0, pipe_id=pipe)
                keys = [r.make_key([gc.KeyTuple("$REGISTER_INDEX", i)]) for i in range(len(values))]
                data = [r.make_data([gc.DataTuple(reg["data_field"], v)]) for v in values]
                if keys:
                    r.entry_mod(tgt, keys, data)
            logger.info("%s: %d pipes", reg["name"], len(reg["pipes"]))

    def add_ports(self, ports):
        port_table = self.table("$PORT")
        for dev, attrs in ports.items():
            if attrs.get("cpu") == "1":
                continue
            key = port_table.make_key([gc.KeyTuple("$DEV_PORT", dev)])
            data = port_table.make_data([gc.DataTuple("$SPEED", str_val="BF_SPEED_100G"),
                                         gc.DataTuple("$FEC", str_val="BF_FEC_TYP_RS"),
                                         gc.DataTuple("$PORT_ENABLE", bool_val=True)])
            port_table.entry_add(self.target, [key], [data])

    def replay(self, name):
        golden = os.path.join(self.vectors_dir, name + ".golden")
        with open(os.path.join(self.vectors_dir, name + ".tables.json")) as f:
            spec = json.load(f)
        switch, ports, frames = read_vectors(golden)
        cpu_dev = int(switch["cpu_port"])
        self.clear()
        if self.bring_up:
            self.add_ports(ports)
        self.load(spec)
        fabric = [p + self.port_offset for p, a in ports.items() if a.get("cpu") != "1"]
        checked = 0
        for fr in frames:
            in_port = int(fr["attrs"]["in_port"]) + self.port_offset
            testutils.send_packet(self, in_port, fr["in"])
            if not fr["out"]:
                testutils.verify_no_other_packets(self)
            else:
                out_dev, out_bytes = fr["out"][0]
                if out_dev == cpu_dev:
                    if self.cpu_ptf_port is not None:
                        testutils.verify_packet(self, out_bytes, int(self.cpu_ptf_port))
                    testutils.verify_no_packet_any(self, out_bytes, fabric)
                else:
                    testutils.verify_packet(self, out_bytes, out_dev + self.port_offset)
                testutils.verify_no_other_packets(self)
            checked += 1
        logger.info("%s: %d frames as the model says", name, checked)

    def runTest(self):
        names = sorted(f[:-len(".golden")] for f in os.listdir(self.vectors_dir)
                       if f.endswith(".golden"))
        if self.only:
            names = [n for n in names if n in self.only]
        self.assertTrue(names, "no vectors in %s" % self.vectors_dir)
        for name in names:
            self.replay(name)

    def tearDown(self):
        self.clear()
        BfRuntimeTest.tearDown(self)
