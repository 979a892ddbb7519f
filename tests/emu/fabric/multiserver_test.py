#!/usr/bin/python3
"""ofan-emu across servers, on one machine: `up --plan FILE --server S` on each.

    multiserver_test.py [--coordinator]   (root; Debian's /usr/bin/python3)

Two "servers" are two network namespaces joined by a veth underlay (MTU
9000, 192.0.2.1 and .2), each with its own run directory (OFAN_EMU_RUN_DIR);
ofan-emu runs in each through nsenter --net (ip netns exec would give it a
mount namespace of its own, where the namespaces it makes vanish with it:
up refuses that, checked). A k=4 fat tree, planned over both (pods 0-1 and
cores c0, c2 on srv0; 8 links cross), with:

  - an underlay at MTU 3400: up refused, exit 3, naming 3400 and 3488, and
    nothing made;
  - per-switch engine, then the shared one: both parts come up; all-pairs
    ping from each server's hosts to every host (120 pairs each); the
    VXLAN devices' VNIs are the plan's, and their counters carried the
    pings (>= 128 frames each way on each server); a 3438-byte ping with DF
    crosses, 3439 bytes do not leave the host; fail on one part alone is
    refused; fail and restore of a crossing link (a0-0:3 -- c1:0) on both
    servers as the coordinator runs them (--part), pings across meanwhile:
    every pair reaches every other after each, the switches of both servers
    hold the brute-force masks, both ends' ports follow (per-switch: also
    --silent, the ports up and the frames dropped; and core c1, srv1's,
    failed and restored, srv0 routing around it); down --all on both
    leaves nothing (namespaces, the stitches' interfaces and qdiscs,
    processes, EAL files, run directories);
  - `up --server srv0` killed with SIGKILL once its switches start: down
    --all on that server alone removes it, and the other server's part,
    up meanwhile, is untouched until its own down --all.
  - the coordinator (up --plan FILE on srv0, without --server), srv1 over
    SSH to an sshd (Debian's openssh-server) in its namespace with a
    throwaway host key and client key: every part up (shared engine),
    all-pairs ping from each server and ping --plan (240 pairs), status
    --plan (each server's part); run --plan, a 256 KiB permutation of the
    16 hosts (--ooo), a uroce process on each server: it verifies, 8 ranks on
    each, and against the same run on the same fabric whole on srv0 (up
    and down first) the exact figures match (verified, workload, bytes,
    ranks' hosts, every switch's queues reported), the CCT ratio printed;
    run --plan --server srv1 on srv0 refused (exit 2), and with srv1
    unreachable (exit 1); fail and restore --plan of the crossing link as
    above, down --plan leaves nothing (nor
    an ssh connection, nor the plan's copy); srv1's part failing (a namespace of
    its name there already) rolls srv0's back, exit 1; kill -9 of the coordinator
    once srv0's switches start, then down --all on both servers: nothing
    left. Skipped, with a SKIP line, where sshd is not installed.
    --coordinator: only these.

Exit: 0 pass, 1 fail, 77 skip (not root, or not built).
"""
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import SKIP, Cleanup, check, log, run, verdict  # noqa: E402
from leftovers import leftovers  # noqa: E402

BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
EMU = str(REPO / "emu" / "ofan-emu")
PID = os.getpid()
NAME = f"ms{PID}"
SERVERS = [f"mst{PID}s0", f"mst{PID}s1"]          # the servers' namespaces
ADDRS = ["192.0.2.1", "192.0.2.2"]
RUN = Path(f"/run/ofan-emu-mst{PID}")
PLAN = RUN / "plan.json"


def run_dir(i):
    return RUN / f"srv{i}"


def emu_cmd(i, *args):
    """The command line of ofan-emu on server i (its namespace entered, its
    run directory)."""
    return ["nsenter", f"--net=/run/netns/{SERVERS[i]}", "env",
            f"OFAN_EMU_RUN_DIR={run_dir(i)}", EMU, *args]


def kill_once_switches_start(i, *args):
    """Starts ofan-emu ARGS on server i and SIGKILLs it as soon as its first
    switch log appears (at most 60 s on)."""
    p = subprocess.Popen(emu_cmd(i, *args), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    logs = run_dir(i) / NAME / "logs"
    end = time.monotonic() + 60
    while time.monotonic() < end and p.poll() is None:
        if logs.is_dir() and any(logs.iterdir()):
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()


def emu_on(i, *args, timeout=180, ok_codes=(0,)):
    """ofan-emu on server i (its namespace entered, its run directory)."""
    p = subprocess.run(emu_cmd(i, *args), capture_output=True, text=True, timeout=timeout)
    if p.returncode not in ok_codes:
        log(f"  srv{i}: ofan-emu {' '.join(args)} -> {p.returncode}\n"
            f"  stdout: {p.stdout[-1500:]}\n  stderr: {p.stderr[-1500:]}")
    return p


def json_of(p):
    try:
        return json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        return None


def make_servers(mtu):
    a, b = SERVERS
    run(["ip", "-n", a, "link", "add", "u0", "mtu", str(mtu), "type", "veth", "peer", "name",
         "u1", "mtu", str(mtu), "netns", b])
    for ns, dev, addr in ((a, "u0", ADDRS[0]), (b, "u1", ADDRS[1])):
        run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
        run(["ip", "-n", ns, "link", "set", dev, "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])


def set_underlay_mtu(mtu):
    run(["ip", "-n", SERVERS[0], "link", "set", "u0", "mtu", str(mtu)])
    run(["ip", "-n", SERVERS[1], "link", "set", "u1", "mtu", str(mtu)])


def links_of(i):
    """Server i's interfaces with details and counters (ip -d -s -j)."""
    out = run(["ip", "-n", SERVERS[i], "-d", "-s", "-j", "link", "show"]).stdout
    return {x["ifname"]: x for x in json.loads(out)}


def left_on(i):
    """What a part may leave on server i: the fabric's namespaces, processes,
    files (leftovers.py), and interfaces or qdiscs in the server's namespace
    beyond lo and the underlay."""
    left = leftovers(NAME, str(run_dir(i)), f"ofe-{NAME}-srv{i}-")
    left["interfaces"] = sorted(set(links_of(i)) - {"lo", f"u{i}"})
    qd = json.loads(run(["tc", "-n", SERVERS[i], "-j", "qdisc", "show"]).stdout or "[]")
    left["ingress_qdiscs"] = [q.get("dev") for q in qd if q.get("kind") == "ingress"]
    return left


def refused_underlay():
    what = "underlay at MTU 3400"
    set_underlay_mtu(3400)
    p = emu_on(0, "up", "--plan", str(PLAN), "--server", "srv0", ok_codes=(3,))
    msg = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    check(f"{what}: up refused, exit 3, naming 3400 and 3488", p.returncode == 3 and
          "3400" in msg and "3488" in msg and "Traceback" not in p.stderr, msg)
    left = left_on(0)
    check(f"{what}: nothing made", not any(left.values()), str(left))
    set_underlay_mtu(9000)
    # ip netns exec gives ofan-emu a mount namespace of its own: refused.
    p = subprocess.run(["ip", "netns", "exec", SERVERS[0], "env", f"OFAN_EMU_RUN_DIR={run_dir(0)}",
                        EMU, "up", "--plan", str(PLAN), "--server", "srv0"],
                       capture_output=True, text=True, timeout=60)
    check("up under ip netns exec: refused, exit 2, naming nsenter",
          p.returncode == 2 and "nsenter" in p.stderr and "Traceback" not in p.stderr,
          p.stderr.strip()[-300:])


def part_checks(engine, plan):
    what = f"{engine} engine"
    opts = ["--engine", engine]
    sts = []
    for i in (0, 1):
        p = emu_on(i, "up", "--plan", str(PLAN), "--server", f"srv{i}", "--json", *opts)
        st = json_of(p)
        if not check(f"{what}: srv{i}'s part up", p.returncode == 0 and st is not None
                     and st["server"] == f"srv{i}" and len(st["switches"]) == 10
                     and len(st["hosts"]) == 8 and st["engine"] == engine,
                     p.stderr[-300:] if p.returncode else ""):
            return
        sts.append(st)
    before = [counters(i) for i in (0, 1)]
    for i in (0, 1):
        r = json_of(emu_on(i, "ping", "--name", NAME, "--json", ok_codes=(0, 1)))
        check(f"{what}: from srv{i}'s 8 hosts, all 120 pairs reach each other (across "
              "servers too)", r is not None and r["pairs"] == 120 and r["ok"] == 120,
              str(r and r["failed"][:8]))
    for i in (0, 1):
        mine = {c["vni"] for c in plan["crossing_links"]
                if f"srv{i}" in (c["a"]["server"], c["b"]["server"])}
        links = links_of(i)
        vx = {n: x for n, x in links.items()
              if x.get("linkinfo", {}).get("info_kind") == "vxlan"}
        vnis = {x["linkinfo"]["info_data"]["id"] for x in vx.values()}
        check(f"{what}: srv{i}'s VXLAN devices are the plan's (8, VNIs {sorted(mine)[:2]}..., "
              "UDP 4789, nolearning, MTU 3438)",
              vnis == mine and len(vx) == 8 and set(vx) <= set(sts[i]["stitches"]) and
              all(x["linkinfo"]["info_data"]["port"] == 4789 and
                  not x["linkinfo"]["info_data"]["learning"] and x["mtu"] == 3438
                  for x in vx.values()), f"{sorted(vnis)} vs {sorted(mine)}")
        after = counters(i)
        tx, rx = after[0] - before[i][0], after[1] - before[i][1]
        check(f"{what}: srv{i}'s VXLAN devices carried the pings (>= 128 frames each way)",
              tx >= 128 and rx >= 128, f"tx {tx}, rx {rx}")
    far = sts[1]["hosts"][0]["addr"]
    src = f"ofe-{NAME}-srv0-{sts[0]['hosts'][0]['name']}"
    r = subprocess.run(["ip", "netns", "exec", src, "ping", "-n", "-M", "do", "-s", "3410",
                        "-c", "3", "-i", "0.2", "-W", "2", far], capture_output=True, text=True,
                       timeout=30)
    check(f"{what}: a 3438-byte ping with DF crosses servers", r.returncode == 0,
          r.stdout.strip().splitlines()[-2:].__str__())
    r = subprocess.run(["ip", "netns", "exec", src, "ping", "-n", "-M", "do", "-s", "3411",
                        "-c", "1", "-W", "2", far], capture_output=True, text=True, timeout=30)
    check(f"{what}: 3439 bytes with DF do not leave the host (MTU 3438)", r.returncode != 0)
    p = emu_on(0, "fail", "--name", NAME, "--link", "a0-0:3", ok_codes=(2,))
    check(f"{what}: fail on one part alone is refused (exit 2, one line naming --plan)",
          p.returncode == 2 and "--plan" in p.stderr and "Traceback" not in p.stderr,
          p.stderr.strip())

    def on_each(*verb):
        """What the coordinator runs on every server (here, without SSH)."""
        ps = [emu_on(i, *verb, "--name", NAME, "--part", "--json") for i in (0, 1)]
        return all(p.returncode == 0 for p in ps)

    fail_restore_checks(what, on_each, sts)
    if engine == "per-switch":
        fail_restore_checks(f"{what}, silently", on_each, sts, silent=True)
        switch_checks(what, on_each)
    for i in (1, 0):
        p = emu_on(i, "down", "--all")
        left = left_on(i)
        check(f"{what}: down --all on srv{i} leaves nothing of its part", p.returncode == 0 and
              not any(left.values()), str(left))


CROSSING = ("a0-0", 3, "c1", 0)   # link 33: a0-0:3 on srv0 -- c1:0 on srv1


def port_up(i, sw, port):
    r = run(["ip", "-n", f"ofe-{NAME}-srv{i}-{sw}", "-j", "link", "show", f"p{port}"],
            check_rc=False)
    try:
        return "UP" in json.loads(r.stdout)[0]["flags"]
    except (ValueError, IndexError, KeyError):
        return None


def fail_restore_checks(what, on_each, sts, silent=False):
    """Fail and restore the crossing link a0-0:3 -- c1:0 on both servers
    (on_each(verb...) runs the verb on each), with pings across meanwhile:
    all pairs reach each other over the other paths, every switch's masks
    are the brute-force valid sets, both ends' ports follow (silent: stay
    up, the frames dropped)."""
    a, ap, b, bp = CROSSING
    src = f"ofe-{NAME}-srv0-{sts[0]['hosts'][0]['name']}"
    far = sts[1]["hosts"][0]["addr"]
    traffic = subprocess.Popen(["ip", "netns", "exec", src, "ping", "-n", "-q", "-i", "0.02",
                                "-c", "400", "-W", "1", far], stdout=subprocess.PIPE, text=True)
    for verb, up in (("fail", False), ("restore", True)):
        time.sleep(1)
        ok = on_each(verb, "--link", f"{a}:{ap}", *(["--silent"] if silent and not up else []))
        check(f"{what}: {verb} of the crossing link {a}:{ap} -- {b}:{bp} on both servers "
              f"(its port on each {'stays up' if silent else 'follows'})", ok and
              port_up(0, a, ap) is (up or silent) and port_up(1, b, bp) is (up or silent),
              f"{port_up(0, a, ap)} {port_up(1, b, bp)}")
        pings = [json_of(emu_on(i, "ping", "--name", NAME, "--json", ok_codes=(0, 1)))
                 for i in (0, 1)]
        check(f"{what}: after {verb}, all pairs reach each other (from both servers)",
              all(r is not None and r["ok"] == 120 for r in pings),
              str([r and r["failed"][:6] for r in pings]))
        masks = [json_of(emu_on(i, "verify-masks", "--name", NAME, "--json", ok_codes=(0, 1)))
                 for i in (0, 1)]
        check(f"{what}: after {verb}, both servers' switches hold the brute-force masks "
              f"({'without' if not up else 'with'} the link)",
              all(m is not None and m["ok"] and len(m["failed_links"]) == (0 if up else 1)
                  for m in masks),
              str([m and (m["ok"], m["failed_links"]) for m in masks]))
    out, _ = traffic.communicate(timeout=30)
    line = next((x for x in out.splitlines() if "transmitted" in x), out.strip()[-200:])
    check(f"{what}: pings across servers went on meanwhile", traffic.returncode in (0, 1)
          and " 0 received" not in line, line)


def switch_checks(what, on_each):
    """Core c1 (on srv1) failed and restored on both servers: srv1 stops
    it, srv0 routes around it; every pair reaches every other, both
    servers' switches hold the brute-force masks."""
    for verb in ("fail", "restore"):
        ok = on_each(verb, "--switch", "c1")
        st = json_of(emu_on(1, "status", "--name", NAME, "--json"))
        c1 = st and next((w for w in st["switches"] if w["name"] == "c1"), None)
        check(f"{what}: {verb} of core c1 (srv1's) on both servers", ok and c1 is not None
              and c1["failed"] == (verb == "fail"), str(c1))
        pings = [json_of(emu_on(i, "ping", "--name", NAME, "--json", ok_codes=(0, 1)))
                 for i in (0, 1)]
        masks = [json_of(emu_on(i, "verify-masks", "--name", NAME, "--json", ok_codes=(0, 1)))
                 for i in (0, 1)]
        check(f"{what}: after {verb} of c1, all pairs reach each other and both servers' "
              "switches hold the brute-force masks",
              all(r is not None and r["ok"] == 120 for r in pings) and
              all(m is not None and m["ok"] for m in masks),
              str([r and r["failed"][:6] for r in pings]) + " " +
              str([m and (m["ok"], m["failed_switches"]) for m in masks]))


def counters(i):
    """(tx, rx) packets summed over server i's VXLAN devices."""
    tx = rx = 0
    for x in links_of(i).values():
        if x.get("linkinfo", {}).get("info_kind") == "vxlan":
            tx += x["stats64"]["tx"]["packets"]
            rx += x["stats64"]["rx"]["packets"]
    return tx, rx


def crash_part():
    what = "SIGKILL of up --server srv0 once its switches start"
    up1 = emu_on(1, "up", "--plan", str(PLAN), "--server", "srv1")
    if not check("crash: srv1's part up", up1.returncode == 0):
        return
    kill_once_switches_start(0, "up", "--plan", str(PLAN), "--server", "srv0",
                             "--engine", "per-switch")
    before = left_on(0)
    check(f"{what}: it left namespaces and stitches", before["namespaces"] and
          before["interfaces"], str({k: len(v) for k, v in before.items()}))
    p = emu_on(0, "down", "--all")
    left = left_on(0)
    check(f"{what}: down --all on srv0 leaves nothing of it", p.returncode == 0 and
          not any(left.values()), str(left))
    r = json_of(emu_on(1, "ping", "--name", NAME, "--json", ok_codes=(0, 1)))
    # srv1's hosts still reach those of their pod (pods 2 and 3: h8-h11,
    # h12-h15; between pods, half the paths went through srv0's cores).
    local = r and [f for f in r["failed"] if len({int(h[1:]) // 4 for h in f.split("->")}) == 1]
    check("crash: srv1's part untouched by srv0's down --all (its hosts reach those of their "
          "pod)", r is not None and local == [] and r["ok"] >= 24, str(local))
    p = emu_on(1, "down", "--all")
    left = left_on(1)
    check("crash: down --all on srv1 leaves nothing", p.returncode == 0 and
          not any(left.values()), str(left))


SSHD = "/usr/sbin/sshd"


def start_sshd(cleanup):
    """sshd in server 1's namespace with a throwaway host key and client key;
    returns the client's ssh_config, or None (no sshd here)."""
    if not os.path.exists(SSHD) or not shutil.which("ssh"):
        log("SKIP: the coordinator's checks: no sshd (openssh-server) or ssh here")
        return None
    d = RUN / "ssh"
    d.mkdir(parents=True, exist_ok=True)
    for key in ("key", "hostkey"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)])
    shutil.copy(d / "key.pub", d / "authorized_keys")
    host = (d / "hostkey.pub").read_text().split()
    (d / "known_hosts").write_text(f"{ADDRS[1]} {host[0]} {host[1]}\n")
    (d / "sshd_config").write_text(
        f"ListenAddress {ADDRS[1]}\nHostKey {d}/hostkey\n"
        f"AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        f"StrictModes no\nPidFile {d}/sshd.pid\nMaxStartups 50\nMaxSessions 50\n")
    (d / "ssh_config").write_text(
        f"Host {ADDRS[1]}\n  User root\n  IdentityFile {d}/key\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking yes\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    p = subprocess.Popen(["nsenter", f"--net=/run/netns/{SERVERS[1]}", SSHD, "-D", "-e", "-f",
                          str(d / "sshd_config")], stdout=subprocess.DEVNULL,
                         stderr=open(d / "sshd.log", "w"))
    cleanup.procs.append(p)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        r = subprocess.run(["nsenter", f"--net=/run/netns/{SERVERS[0]}", "ssh", "-F",
                            str(d / "ssh_config"), "-o", "BatchMode=yes", ADDRS[1], "true"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0:
            return str(d / "ssh_config")
        time.sleep(0.2)
    check("sshd in srv1 answers ssh from srv0", False, r.stderr.strip()[-300:])
    return None


def coordinator_args(ssh_config):
    return ["--ssh-config", ssh_config, "--remote-emu",
            f"env OFAN_EMU_RUN_DIR={run_dir(1)} OFAN_BUILD_DIR={BUILD} {EMU}"]


def coordinator_checks(ssh_config, single):
    what = "coordinator (up --plan on srv0, srv1 over SSH)"
    t0 = time.monotonic()
    p = emu_on(0, "up", "--plan", str(PLAN), "--engine", "shared", "--json",
               *coordinator_args(ssh_config))
    r = json_of(p)
    check(f"{what}: every part up ({time.monotonic() - t0:.1f} s)", p.returncode == 0 and
          r is not None and sorted(r) == ["srv0", "srv1"] and
          all(len(r[x]["switches"]) == 10 for x in r), p.stderr[-400:] if p.returncode else "")
    hosts = []
    for i in (0, 1):
        r = json_of(emu_on(i, "ping", "--name", NAME, "--json", ok_codes=(0, 1)))
        check(f"{what}: from srv{i}'s hosts, 120/120 pairs", r is not None and
              r["ok"] == 120, str(r and r["failed"][:8]))
        hosts.append(json_of(emu_on(i, "status", "--name", NAME, "--json")))

    def over_ssh(*verb):
        return emu_on(0, *verb, "--plan", str(PLAN), *coordinator_args(ssh_config)
                      ).returncode == 0

    r = json_of(emu_on(0, "ping", "--plan", str(PLAN), "--json", *coordinator_args(ssh_config),
                       ok_codes=(0, 1)))
    check(f"{what}: ping --plan: 240/240 pairs from both servers' hosts", r is not None and
          r["pairs"] == 240 and r["ok"] == 240, str(r and r["failed"][:8]))
    r = json_of(emu_on(0, "status", "--plan", str(PLAN), "--json", *coordinator_args(ssh_config)))
    check(f"{what}: status --plan: each server's part, its 10 switches and 8 hosts",
          r is not None and sorted(r) == ["srv0", "srv1"] and
          all(r[n]["server"] == n and len(r[n]["switches"]) == 10 and len(r[n]["hosts"]) == 8
              for n in r), str(r)[:300])
    run_checks(what, ssh_config, single)
    if check(f"{what}: status on each server", all(hosts)):
        fail_restore_checks(what, over_ssh, hosts)
    p = emu_on(0, "down", "--plan", str(PLAN), *coordinator_args(ssh_config))
    left = [left_on(i) for i in (0, 1)]
    copy = Path(f"/tmp/ofan-emu-{NAME}.plan.json")
    check(f"{what}: down --plan leaves nothing on either server, nor an ssh control "
          "connection, nor the plan's copy", p.returncode == 0 and
          not any(any(x.values()) for x in left) and not ssh_running() and not copy.exists(),
          f"{left} ssh {ssh_running()} copy {copy.exists()}")
    # srv1's part cannot come up (a namespace of its name is there already):
    # srv0's, up meanwhile, is taken down again.
    squatter = f"ofe-{NAME}-srv1-c1"
    run(["ip", "netns", "add", squatter])
    p = emu_on(0, "up", "--plan", str(PLAN), "--engine", "per-switch",
               *coordinator_args(ssh_config), ok_codes=(1,))
    msg = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    run(["ip", "netns", "del", squatter])
    left = [left_on(i) for i in (0, 1)]
    check(f"{what}: srv1 failing its part rolls srv0's back (exit 1, one line naming srv1; "
          "nothing left)", p.returncode == 1 and "srv1" in msg and "exists already" in msg and
          "Traceback" not in p.stderr and not any(any(x.values()) for x in left),
          f"{msg} {left}")
    # kill -9 of the coordinator once srv0's switches start; down --all on
    # each server then leaves nothing.
    kill_once_switches_start(0, "up", "--plan", str(PLAN), "--engine", "per-switch",
                             *coordinator_args(ssh_config))
    # Its parts notice (the one here is sent SIGTERM, the other loses its
    # connection): wait until no up of this plan runs, at most 60 s.
    end = time.monotonic() + 60
    while time.monotonic() < end and ups_running():
        time.sleep(0.2)
    for i in (1, 0):
        emu_on(i, "down", "--all")
    left = [left_on(i) for i in (0, 1)]
    check("kill -9 of the coordinator mid-up: down --all on both servers leaves nothing "
          "(nor an ssh control connection)", not any(any(x.values()) for x in left) and
          not ups_running() and not ssh_running(), f"{left} ssh {ssh_running()}")


# The permutation both runs make: the single-server fabric's and the split one's.
# Out-of-order placement (--ooo): Ofan sprays a flow's packets over paths
# that, split, differ by the kernel's VXLAN hop; without it the receivers
# NAK the reordering and go back N, and the split run's CCT is 2-3x the
# single one's (bench/RESULTS.md, "One fabric over two servers").
RUN_ARGS = ("run", "--workload", "perm", "--msg", "256KiB", "--lbs", "ofan", "--ooo", "--json")


def single_server_run():
    """The same k=4 fabric (shared engine) whole on srv0, the permutation run
    on it; its result (run --json), or None. Up and down before the plan's
    parts come up: one fabric's hugepages at a time."""
    name = f"ss{PID}"
    p = emu_on(0, "up", "--k", "4", "--name", name, "--engine", "shared")
    res = None
    if check("single server: the k=4 fabric up on srv0", p.returncode == 0, p.stderr[-300:]):
        res = json_of(emu_on(0, *RUN_ARGS, "--name", name, timeout=240, ok_codes=(0, 3)))
    emu_on(0, "down", "--name", name)
    return res


def run_checks(what, ssh_config, single):
    """run --plan: one permutation over both servers' hosts (a uroce process
    on each, ofan-rc-1 between them), compared with the single server's:
    what is exact must match (every buffer verified, the same ranks, the
    same bytes), the CCT only printed (CPU time decides it here)."""
    p = emu_on(0, *RUN_ARGS, "--plan", str(PLAN), *coordinator_args(ssh_config), timeout=300,
               ok_codes=(0, 3))
    r = json_of(p)
    one = r and r["runs"][0]
    base = single and single["runs"][0]
    check(f"{what}: run --plan: a permutation of 16 ranks over both servers verifies, "
          "8 ranks on each, every server's switches in the report", p.returncode in (0, 3) and
          one is not None and one["verified"] and r["servers"] == ["srv0", "srv1"] and
          r["hosts"] == 16 and
          {n: v["ranks"] for n, v in one["servers"].items()} == {"srv0": 8, "srv1": 8} and
          one["cpu_bound"] == any(v["cpu_bound"] for v in one["servers"].values()),
          p.stderr[-600:])
    p = emu_on(0, *RUN_ARGS, "--plan", str(PLAN), "--server", "srv1", ok_codes=(2,))
    check(f"{what}: run --plan --server srv1 on srv0 refused (exit 2, naming srv0's part)",
          p.returncode == 2 and "srv0's part" in p.stderr and "Traceback" not in p.stderr,
          p.stderr.strip()[-300:])
    p = emu_on(0, *RUN_ARGS, "--plan", str(PLAN), "--ssh-config", "/dev/null", ok_codes=(1,))
    check(f"{what}: run --plan with srv1 unreachable (no key): exit 1, one line naming srv1",
          p.returncode == 1 and "srv1" in p.stderr and "Traceback" not in p.stderr,
          p.stderr.strip()[-300:])
    if one is None or base is None:
        check(f"{what}: run --plan against the single-server run", False,
              "a run gave no result")
        return
    same = {k: (r[k], single[k]) for k in ("workload", "msg_bytes", "hosts", "host_names")}
    same["queues"] = tuple(sum(st["queues"] for st in x["stages"].values()) for x in (one, base))
    check(f"{what}: run --plan against the single-server run: both verify, the same "
          "permutation (workload, bytes, the 16 ranks' hosts), every switch's queues "
          "pulled (as many as on one server)", one["verified"] and base["verified"] and
          all(a == b for a, b in same.values()), str(same)[:300])
    log(f"  CCT split over two servers / one server: {one['cct_us']:.0f} / "
        f"{base['cct_us']:.0f} us = {one['cct_us'] / base['cct_us']:.2f} (CPU-bound: split "
        f"{one['cpu_bound']}, single {base['cpu_bound']}; retransmissions {one['retransmissions']}"
        f" / {base['retransmissions']})")


def ssh_running():
    """The coordinator's ssh processes (its control connections)."""
    mark = f"ControlPath={run_dir(0)}/ssh-"
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if mark in cmd and state != "Z":
                out.append(int(d.name))
    return out


def ups_running():
    """ofan-emu up processes of this test's plan (here or over SSH)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "ofan-emu up --plan" in cmd and (str(PLAN) in cmd or f"{NAME}.plan" in cmd):
                out.append(int(d.name))
    return out


def main():
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, veths, VXLAN, AF_XDP, hugepages)")
        return SKIP
    for b in ("dataplane/ofan-dp", "emu/ofan-topo", "control/ofanctl/ofanctl",
              "emu/uroce/uroce", "emu/collective/ofan-coll"):
        if not (BUILD / b).exists():
            log(f"SKIP: {b} is not built")
            return SKIP
    if not shutil.which("nsenter"):
        log("SKIP: no nsenter (util-linux)")
        return SKIP
    cleanup = Cleanup(SERVERS)

    def down_all():
        for i in (1, 0):
            if run_dir(i).exists():
                emu_on(i, "down", "--all", ok_codes=(0, 1, 2, 3))
        shutil.rmtree(RUN, ignore_errors=True)
        Path(f"/tmp/ofan-emu-{NAME}.plan.json").unlink(missing_ok=True)  # the coordinator's copy

    atexit.register(down_all)  # runs before Cleanup's (registered later, runs first)
    for ns in SERVERS:
        run(["ip", "netns", "add", ns])
    for i in (0, 1):
        run_dir(i).mkdir(parents=True, exist_ok=True)
    make_servers(9000)
    p = subprocess.run([EMU, "plan", "--k", "4", "--servers", ",".join(ADDRS), "--name", NAME,
                        "-o", str(PLAN)], capture_output=True, text=True, timeout=60)
    if not check("plan: k=4 over two servers", p.returncode == 0, p.stderr[-300:]):
        return verdict("multiserver")
    plan = json.loads(PLAN.read_text())
    t0 = time.monotonic()
    if "--coordinator" not in sys.argv:
        refused_underlay()
        part_checks("per-switch", plan)
        part_checks("shared", plan)
        crash_part()
    ssh_config = start_sshd(cleanup)
    if ssh_config:
        coordinator_checks(ssh_config, single_server_run())
    log(f"took {time.monotonic() - t0:.0f} s")
    return verdict("multiserver")


if __name__ == "__main__":
    sys.exit(main())
