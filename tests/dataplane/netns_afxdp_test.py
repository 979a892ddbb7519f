#!/usr/bin/python3
"""ofan-dp end to end over AF_XDP: two host namespaces behind one edge switch.

    netns_afxdp_test.py PATH/TO/ofan-dp [PATH/TO/trap.bpf.o]
                                               (root; /usr/bin/python3 for scapy)

Topology (k=4 fat tree, edge switch 0 = pod 0 edge 0, gateway 10.0.0.1):

    [ofh0-PID: h0 10.0.0.2/32] --veth-- ofs0-PID  (root ns) = port 0 (net_af_xdp0)
    [ofh1-PID: h1 10.0.0.3/32] --veth-- ofs1-PID  (root ns) = port 1 (net_af_xdp1)

The hosts have /32 addresses and reach each other only through the gateway
(10.0.0.0/8 via 10.0.0.1), so every frame between them crosses ofan-dp.

Checks: the gateway answers ARP and ping; the switch learns the hosts' MACs;
hosts ping each other through the switch, also with frames of the full MTU
ofan-dp sets on its veths; a RoCEv2 RDMA WRITE ONLY packet (TTL 64, ECT(0),
ICRC by scapy) arrives at h1 with TTL 63, a good IP checksum, the same ICRC
(still valid), ECN untouched and the MACs rewritten; the switch's counters
moved and its drop counters did not; ofan-dp stops cleanly on SIGTERM and
leaves no hugepage files. With the XDP program (dataplane/xdp/trap.bpf.c)
loaded on port 0 by the PMD (xdp_prog=), as ofan-emu loads it on fabric
ports: ARP, LLDP, IPv6 neighbour discovery, BGP (TCP 179, IPv6 and IPv4) and
BFD (UDP 3784) from h0 reach the switch-side veth's kernel and not ofan-dp,
while ping and RoCE still go through ofan-dp (h0 and the switch know each
other's MACs from their configs, as fabric neighbours do); the switch counts
what the trap sent where (`ports`: kernel.via "xdp", per class).

Exit: 0 pass, 1 fail, 77 skip (not root, or no AF_XDP / tools).
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import SKIP, check, failures, log  # noqa: E402
PID = os.getpid()
NS = [f"ofh0-{PID}", f"ofh1-{PID}"]
SW_IF = [f"ofs0-{PID}", f"ofs1-{PID}"]  # switch side, root namespace (<= 15 chars)
HOST_IF = ["h0", "h1"]                   # inside each host namespace
HOST_IP = ["10.0.0.2", "10.0.0.3"]
GW_IP = "10.0.0.1"
NAME = f"nxt{PID}"
PREFIX = f"ofan-nxt{PID}"  # EAL --file-prefix (only names /var/run/dpdk/<prefix>)

state: dict[str, Any] = {
    "proc": None, "tshark": None, "tmp": None, "created_ns": [], "created_if": [],
    "cleaning": False, "log": None, "defer": False, "pending": None, "interrupted": None}


def run(cmd, timeout=20, check_rc=True, **kw):
    """Runs a command (list) with a bound; returns CompletedProcess."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, **kw)
    if check_rc and r.returncode != 0:
        raise RuntimeError(
            f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def nsexec(ns, *cmd):
    return ["ip", "netns", "exec", ns, *cmd]


class Interrupted(BaseException):
    """SIGINT/SIGTERM. A BaseException, so that no `except Exception` (scapy
    has many, e.g. around its imports) can swallow it."""


def on_signal(signum, _frame):
    name = signal.Signals(signum).name
    if state["cleaning"]:
        return  # finish the cleanup first
    state["interrupted"] = name  # recorded even if something swallows the exception
    if state["defer"]:
        state["pending"] = name  # raised right after the critical section
        return
    raise Interrupted(f"signal {name}")


def spawn(key, cmd, **kw):
    """Popen + remember the child, with no signal in between (so cleanup sees it)."""
    state["defer"] = True
    try:
        state[key] = subprocess.Popen(cmd, **kw)
    finally:
        state["defer"] = False
    if state["pending"]:
        raise Interrupted(f"signal {state['pending']}")
    return state[key]


# ---------------------------------------------------------------- control socket

def control(sock_path, cmd, timeout=5.0, **extra):
    req = {"v": 1, "cmd": cmd, **extra}
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in buf:
            if time.monotonic() > deadline:
                raise TimeoutError(f"control {cmd}: no answer")
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"control {cmd}: connection closed")
            buf += chunk
    finally:
        s.close()
    rep = json.loads(buf.split(b"\n", 1)[0])
    if not rep.get("ok"):
        raise RuntimeError(f"control {cmd}: {rep}")
    return rep["result"]


def dp_output():
    try:
        return Path(state["log"]).read_text(errors="replace")
    except (OSError, TypeError):
        return ""


# ---------------------------------------------------------------- setup / cleanup

def hugepage_files():
    try:
        return set(os.listdir("/dev/hugepages"))
    except OSError:
        return set()


def setup_network():
    for i in range(2):
        run(["ip", "netns", "add", NS[i]])
        state["created_ns"].append(NS[i])
        run(["ip", "link", "add", SW_IF[i], "type", "veth", "peer", "name", HOST_IF[i],
             "netns", NS[i]])
        state["created_if"].append(SW_IF[i])
        # No IPv6 chatter (RS, DAD, MLD): it would be counted as unknown-ethertype drops.
        Path(f"/proc/sys/net/ipv6/conf/{SW_IF[i]}/disable_ipv6").write_text("1\n")
        run(nsexec(NS[i], "sysctl", "-qw", f"net.ipv6.conf.{HOST_IF[i]}.disable_ipv6=1"))
        run(["ip", "link", "set", SW_IF[i], "up"])
        run(["ip", "-n", NS[i], "link", "set", "lo", "up"])
        run(["ip", "-n", NS[i], "addr", "add", f"{HOST_IP[i]}/32", "dev", HOST_IF[i]])
        run(["ip", "-n", NS[i], "link", "set", HOST_IF[i], "up"])
        run(["ip", "-n", NS[i], "route", "add", f"{GW_IP}/32", "dev", HOST_IF[i]])
        run(["ip", "-n", NS[i], "route", "add", "10.0.0.0/8", "via", GW_IP, "dev", HOST_IF[i]])


def host_mac(i):
    out = run(["ip", "-n", NS[i], "-j", "link", "show", HOST_IF[i]]).stdout
    return json.loads(out)[0]["address"]


def stop_process(p, name, sig=signal.SIGTERM, grace=10.0):
    """SIGTERM, then SIGKILL after `grace` seconds; returns the exit code."""
    if p is None:
        return None
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            log(f"note: {name} ignored {sig.name} for {grace:.0f}s, sending SIGKILL")
            p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log(f"note: {name} (pid {p.pid}) survives SIGKILL")
    return p.returncode


def cleanup(hp_before):
    state["cleaning"] = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    t = state.pop("tshark", None)
    if t is not None:
        stop_process(t, "tshark", signal.SIGTERM, 5)
    p = state.pop("proc", None)
    if p is not None:
        was_running = p.poll() is None
        rc = stop_process(p, "ofan-dp", signal.SIGTERM, 10)
        if was_running:
            check("ofan-dp stops cleanly on SIGTERM (exit 0)", rc == 0, f"exit code {rc}")
            if rc != 0:
                log(dp_output()[-3000:])
    for ifname in state["created_if"]:
        subprocess.run(["ip", "link", "del", ifname], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=20)
    for ns in state["created_ns"]:
        r = subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=20)
        if r.returncode != 0:
            log(f"note: ip netns del {ns}: {r.stdout.strip()}")
    state["created_if"].clear()
    state["created_ns"].clear()
    if state["tmp"] is not None:
        state["tmp"].cleanup()
        state["tmp"] = None
    run_dir = Path("/var/run/dpdk") / PREFIX
    if run_dir.is_dir():
        for f in run_dir.iterdir():
            try:
                f.unlink()
            except OSError:
                pass
        try:
            run_dir.rmdir()
        except OSError:
            pass
    if hp_before is not None:
        new = hugepage_files() - hp_before
        ours = sorted(f for f in new if f.startswith(PREFIX))
        check("no hugepage files left in /dev/hugepages by this run", not ours,
              ", ".join(ours) or "none")
        others = sorted(new - set(ours))
        if others:
            log(f"note: other new files in /dev/hugepages (not from this run): {others[:5]}")
    leftovers = [ns for ns in NS if Path(f"/run/netns/{ns}").exists()]
    leftovers += [i for i in SW_IF if Path(f"/sys/class/net/{i}").exists()]
    check("namespaces and veths removed", not leftovers, ", ".join(leftovers) or "none")


# ---------------------------------------------------------------- checks

def ping(ns, dst, count):
    r = run(nsexec(ns, "ping", "-n", "-c", str(count), "-i", "0.2", "-W", "2", dst),
            timeout=count * 3 + 10, check_rc=False)
    summary = [line for line in r.stdout.splitlines() if "transmitted" in line]
    return r.returncode == 0, (summary[0] if summary else (r.stdout + r.stderr).strip()[-300:])


def mtu_check():
    """ofan-dp sets the switch-side netdev MTU; a frame of exactly that MTU must
    cross the switch (a larger MTU than the mbufs hold gets frames dropped
    silently inside AF_XDP, counted nowhere)."""
    mtu = min(int(Path(f"/sys/class/net/{i}/mtu").read_text()) for i in SW_IF)
    for i in range(2):
        run(["ip", "-n", NS[i], "link", "set", HOST_IF[i], "mtu", str(mtu)])
    try:
        r = run(nsexec(NS[0], "ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", "-M", "do",
                       "-s", str(mtu - 28), HOST_IP[1]), timeout=30, check_rc=False)
        summary = [line for line in r.stdout.splitlines() if "transmitted" in line]
        check(f"full-size frames forwarded at the MTU ofan-dp set on its veths "
              f"({mtu}, frame {mtu + 14} B)",
              r.returncode == 0, summary[0] if summary else (r.stdout + r.stderr).strip()[-300:])
    finally:
        for i in range(2):
            run(["ip", "-n", NS[i], "link", "set", HOST_IF[i], "mtu", "1500"])


def build_roce(src_mac, dst_mac):
    from scapy.all import Ether, IP, UDP, Raw, raw
    from scapy.contrib.roce import BTH, opcode
    payload = bytes(range(64))
    reth = struct.pack("!QII", 0x7F0000001000, 0x1234, len(payload))  # RETH: VA, R_Key, DMA length
    bth = BTH(opcode=opcode("RC", "RDMA_WRITE_ONLY")[0], dqpn=0x000123, psn=7, ackreq=1)
    p = (Ether(src=src_mac, dst=dst_mac) /
         IP(src=HOST_IP[0], dst=HOST_IP[1], ttl=64, tos=0x02, flags="DF") /  # ECT(0)
         UDP(sport=49152, dport=4791, chksum=0) / bth / Raw(reth + payload))
    return raw(p)  # frozen: IP checksum and ICRC computed by scapy


def icrc_valid(frame):
    from scapy.all import Ether, raw
    from scapy.contrib.roce import BTH
    q = Ether(frame)
    if BTH not in q:
        return False, "no BTH"
    wire = frame[-4:]
    q[BTH].icrc = None  # BTH.post_build recomputes it (TTL/TOS/checksums masked)
    calc = raw(q)[-4:]
    return wire == calc, f"wire {wire.hex()} recomputed {calc.hex()}"


def tshark_fields(pcap, fields):
    cmd = ["tshark", "-n", "-r", pcap, "-o", "ip.check_checksum:TRUE", "-T", "fields"]
    for f in fields:
        cmd += ["-e", f]
    out = run(cmd, timeout=30).stdout
    return [dict(zip(fields, line.split("\t"))) for line in out.splitlines() if line.strip()]


def roce_check(tmp, sock):
    from scapy.all import wrpcap, rdpcap, raw, Ether
    ports = {p["port"]: p for p in control(sock, "ports")}
    sw_mac0, sw_mac1 = ports[0]["mac"], ports[1]["mac"]
    h0, h1 = host_mac(0), host_mac(1)
    frame = build_roce(h0, sw_mac0)
    sent_pcap = os.path.join(tmp, "sent.pcap")
    wrpcap(sent_pcap, [Ether(frame)])
    fields = ["eth.src", "eth.dst", "ip.ttl", "ip.checksum.status", "ip.dsfield.ecn",
              "infiniband.bth.opcode", "infiniband.invariant.crc"]
    sent = tshark_fields(sent_pcap, fields)
    if not check("tshark dissects the sent packet as RoCEv2",
                 len(sent) == 1 and sent[0].get("infiniband.invariant.crc"), str(sent)):
        return
    sent = sent[0]
    log(f"sent: {len(frame)} B, ttl {sent['ip.ttl']}, ecn {sent['ip.dsfield.ecn']}, "
        f"opcode {sent['infiniband.bth.opcode']}, icrc {sent['infiniband.invariant.crc']} "
        f"(bytes {frame[-4:].hex()})")

    c0 = control(sock, "counters")
    p0 = {p["port"]: p for p in control(sock, "ports")}

    pcap = os.path.join(tmp, "rx.pcap")
    errf = os.path.join(tmp, "tshark.err")
    with open(errf, "w") as ef:
        spawn("tshark", nsexec(NS[1], "tshark", "-n", "-i", HOST_IF[1], "-f", "udp port 4791",
                               "-c", "1", "-a", "duration:10", "-w", pcap),
              stdout=subprocess.DEVNULL, stderr=ef)
    deadline = time.monotonic() + 15
    ready = False
    while time.monotonic() < deadline and state["tshark"].poll() is None:
        if "Capturing on" in Path(errf).read_text(errors="replace"):
            ready = True
            break
        time.sleep(0.05)
    if not check("tshark capture started on h1", ready,
                 "" if ready else Path(errf).read_text(errors="replace").strip()[-300:]):
        return
    time.sleep(0.3)  # the "Capturing on" line comes just before the socket is live
    send = ("import sys\nfrom scapy.all import Ether, sendp\n"
            "sendp(Ether(bytes.fromhex(sys.argv[1])), iface=sys.argv[2], verbose=False)\n")
    run(nsexec(NS[0], "/usr/bin/python3", "-c", send, frame.hex(), HOST_IF[0]), timeout=30)
    try:
        rc = state["tshark"].wait(timeout=20)
    except subprocess.TimeoutExpired:
        rc = stop_process(state["tshark"], "tshark", signal.SIGTERM, 5)
    state["tshark"] = None
    got = tshark_fields(pcap, fields) if os.path.exists(pcap) else []
    if not check("RoCEv2 packet captured on h1", len(got) == 1,
                 f"tshark rc {rc}, {len(got)} frame(s)"
                 + ("" if got
                    else "; " + Path(errf).read_text(errors="replace").strip()[-300:])):
        return
    g = got[0]
    log(f"received: ttl {g['ip.ttl']}, checksum status {g['ip.checksum.status']}, "
        f"ecn {g['ip.dsfield.ecn']}, "
        f"icrc {g['infiniband.invariant.crc']}, {g['eth.src']} -> {g['eth.dst']}")
    check("TTL decremented 64 -> 63", g["ip.ttl"] == "63", g["ip.ttl"])
    check("IP checksum good after rewrite (ip.checksum.status 1)", g["ip.checksum.status"] == "1",
          g["ip.checksum.status"])
    check("ICRC field unchanged", g["infiniband.invariant.crc"] == sent["infiniband.invariant.crc"],
          f"sent {sent['infiniband.invariant.crc']} received {g['infiniband.invariant.crc']}")
    check("ECN still ECT(0) (no congestion)", g["ip.dsfield.ecn"] == "2", g["ip.dsfield.ecn"])
    check("MACs rewritten (src = switch port 1, dst = h1)",
          g["eth.src"].lower() == sw_mac1.lower() and g["eth.dst"].lower() == h1.lower(),
          f"{g['eth.src']} -> {g['eth.dst']} (want {sw_mac1} -> {h1})")
    rx = raw(rdpcap(pcap)[0])
    ok, detail = icrc_valid(rx)
    check("ICRC still valid (recomputed with scapy)", ok, detail)
    # Nothing but TTL, IP checksum and MACs changed.
    # Offsets: Ethernet 0..13, IP header from 14 (TTL at 22, protocol 23, checksum 24..25).
    same = (len(rx) == len(frame) and rx[14:22] == frame[14:22] and rx[23] == frame[23]
            and rx[26:] == frame[26:])
    check("payload from the IP header on unchanged except TTL/checksum", same,
          f"{len(frame)} B sent, {len(rx)} B received")

    # Counters. Let the ICMP port-unreachable that h1 sends back settle first.
    time.sleep(0.3)
    c1 = control(sock, "counters")
    p1 = {p["port"]: p for p in control(sock, "ports")}
    d = {k: c1["total"][k] - c0["total"][k] for k in c0["total"]}
    log("counter deltas: " + ", ".join(f"{k}={v}" for k, v in d.items() if v))
    check("counters: forwarded_down moved", d["forwarded_down"] >= 1, str(d["forwarded_down"]))
    check("counters: tx_packets moved", d["tx_packets"] >= 1, str(d["tx_packets"]))
    check("counters: port 0 rx and port 1 tx moved",
          p1[0]["rx_packets"] > p0[0]["rx_packets"] and p1[1]["tx_packets"] > p0[1]["tx_packets"],
          f"port0 rx +{p1[0]['rx_packets'] - p0[0]['rx_packets']}, "
          f"port1 tx +{p1[1]['tx_packets'] - p0[1]['tx_packets']}")
    drops = {k: c1["drops"][k] - c0["drops"][k] for k in c0["drops"]
             if c1["drops"][k] != c0["drops"][k]}
    check("counters: no drop counter moved",
          not drops and c1["drops_total"] == c0["drops_total"], str(drops or "none"))
    check("counters: no forward to an unknown neighbour", d["neighbor_unknown"] == 0,
          str(d["neighbor_unknown"]))


def trap_check(trap: str, sock: str) -> None:
    """Control-plane frames from h0 go to ofs0's kernel, not to ofan-dp."""
    from scapy.all import (ARP, IP, TCP, UDP, Ether, ICMPv6ND_NS, IPv6, Raw,  # noqa: F401
                           AsyncSniffer, raw)
    h0 = host_mac(0)
    sw = {p["port"]: p for p in control(sock, "ports")}[0]["mac"]
    frames = {
        "ARP": raw(Ether(src=h0, dst="ff:ff:ff:ff:ff:ff") /
                   ARP(hwsrc=h0, psrc=HOST_IP[0], pdst="10.255.0.77")),
        "LLDP": raw(Ether(src=h0, dst="01:80:c2:00:00:0e", type=0x88CC) /
                    Raw(b"\x02\x07" + bytes(50))),
        "IPv6 NS": raw(Ether(src=h0, dst="33:33:ff:00:00:01") /
                       IPv6(src="fe80::2", dst="ff02::1:ff00:1") / ICMPv6ND_NS(tgt="fe80::1")),
        "BGP over IPv6": raw(Ether(src=h0, dst=sw) / IPv6(src="fe80::2", dst="fe80::1") /
                             TCP(sport=40000, dport=179, flags="S")),
        "BGP over IPv4": raw(Ether(src=h0, dst=sw) / IP(src=HOST_IP[0], dst="10.255.0.1") /
                             TCP(sport=40001, dport=179, flags="S")),
        "BFD": raw(Ether(src=h0, dst=sw) / IPv6(src="fe80::2", dst="fe80::1") /
                   UDP(sport=49152, dport=3784) / Raw(bytes(24))),
    }
    sniffer = AsyncSniffer(iface=SW_IF[0], store=True)
    sniffer.start()
    time.sleep(0.5)
    k0 = {p["port"]: p for p in control(sock, "ports")}[0]["kernel"]
    before = {p["port"]: p for p in control(sock, "ports")}[0]["rx_packets"]
    send = ("import sys\nfrom scapy.all import Ether, sendp\n"
            "for h in sys.argv[2:]:\n"
            "    sendp(Ether(bytes.fromhex(h)), iface=sys.argv[1], verbose=False)\n")
    run(nsexec(NS[0], sys.executable, "-c", send, HOST_IF[0], *[f.hex() for f in frames.values()]),
        timeout=60)
    time.sleep(1.0)
    got = [raw(p) for p in sniffer.stop()]
    after = {p["port"]: p for p in control(sock, "ports")}[0]["rx_packets"]
    for name, f in frames.items():
        check(f"trap.bpf.o: {name} from h0 reaches the switch veth's kernel",
              any(g[:len(f)] == f for g in got), f"{len(got)} frames seen on {SW_IF[0]}")
    check("trap.bpf.o: none of them reached ofan-dp (port 0 rx_packets)", after == before,
          f"{before} -> {after} ({os.path.basename(trap)})")
    # ofan-dp reads the trap's per-class counters (dataplane/xdp/trap_stats.h);
    # h0's own kernel may add ND frames meanwhile: at least what was sent.
    k1 = {p["port"]: p for p in control(sock, "ports")}[0]["kernel"]
    want = {"arp": 1, "lldp": 1, "nd": 1, "bgp": 2, "bfd": 1}
    moved = {c: k1["to_kernel_by_class"][c] - k0["to_kernel_by_class"][c] for c in want}
    check("ports: port 0's kernel interface is its veth, split by the XDP trap",
          k1["via"] == "xdp" and k1["name"] == SW_IF[0] and "error" not in k1, json.dumps(k1))
    check("ports: the trap counted each frame in its class",
          all(moved[c] >= n for c, n in want.items())
          and k1["to_kernel"] - k0["to_kernel"] >= sum(want.values()), str(moved))
    check("ports: the data before went to ofan-dp through the trap",
          k1["to_dataplane"] > 0 and k1["no_socket"] >= 0, json.dumps(k1))


def main():
    if len(sys.argv) not in (2, 3):
        log(f"usage: {sys.argv[0]} PATH/TO/ofan-dp [PATH/TO/trap.bpf.o]")
        return 2
    ofan_dp = os.path.abspath(sys.argv[1])
    trap = os.path.abspath(sys.argv[2]) if len(sys.argv) == 3 else ""
    xdp = f",xdp_prog={trap}" if trap else ""
    if os.geteuid() != 0:
        log("SKIP: needs root (network namespaces, veth, AF_XDP, hugepages)")
        return SKIP
    for tool in ("ip", "ping", "tshark"):
        if run(["sh", "-c", f"command -v {tool}"], check_rc=False).returncode != 0:
            log(f"SKIP: '{tool}' is not installed (scripts/setup.sh installs it)")
            return SKIP
    try:
        import scapy.all  # noqa: F401  (slow: import it before any namespace exists)
        import scapy.contrib.roce  # noqa: F401
    except ImportError:
        log(f"SKIP: scapy with scapy.contrib.roce is missing from {sys.executable}")
        return SKIP
    if not os.access(ofan_dp, os.X_OK):
        log(f"FAIL: {ofan_dp} is not executable")
        return 1

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    t_start = time.monotonic()
    hp_before = None
    try:
        r = run(["bash", str(REPO / "scripts" / "hugepages.sh")], timeout=60, check_rc=False)
        log((r.stdout + r.stderr).strip())
        if r.returncode != 0:
            check("hugepages available (scripts/hugepages.sh)", False, r.stderr.strip())
            return 1
        hp_before = hugepage_files()
        state["tmp"] = tempfile.TemporaryDirectory(prefix=f"ofan-nxt{PID}-")
        tmp = state["tmp"].name
        sock = os.path.join(tmp, "ctl.sock")
        setup_network()
        cfg = os.path.join(tmp, "dp.yaml")
        # The trap sits on port 0 only: its ARP goes to the kernel (as on a
        # fabric port, where ofan-emu loads it), so ofan-dp is given h0's
        # MAC and h0 the gateway's, as a fabric port's neighbours are;
        # port 1 keeps the exception path's ARP (answers and learning).
        peer0 = ""
        if trap:
            peer0 = f", peer_mac: \"{host_mac(0)}\""
            sw0 = json.loads(run(["ip", "-j", "link", "show", SW_IF[0]]).stdout)[0]["address"]
            run(["ip", "-n", NS[0], "neigh", "replace", GW_IP, "lladdr", sw0, "dev", HOST_IF[0],
                 "nud", "permanent"])
        Path(cfg).write_text(
            f"name: {NAME}\n"
            "fabric: {k: 4, levels: 3, switch: 0}\n"
            "ports:\n"
            f"  - {{port: 0, dev: \"net_af_xdp0,iface={SW_IF[0]}{xdp}\"{peer0}}}\n"
            f"  - {{port: 1, dev: \"net_af_xdp1,iface={SW_IF[1]}\"}}\n"
            f"control: {{socket: {sock}}}\n"
            "idle: {max_sleep_us: 1000}\n")
        state["log"] = os.path.join(tmp, "ofan-dp.log")
        cmd = [ofan_dp, "--in-memory", "--file-prefix", PREFIX, "--no-telemetry",
               "--", "--config", cfg]
        log("starting: " + " ".join(cmd))
        with open(state["log"], "w") as lf:
            spawn("proc", cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        status, err = None, ""
        while time.monotonic() - t0 < 60:
            if state["proc"].poll() is not None:
                break
            if os.path.exists(sock):
                try:
                    status = control(sock, "status", timeout=2)
                    if status.get("running"):
                        break
                except (OSError, ValueError, RuntimeError) as e:
                    err = str(e)
            time.sleep(0.1)
        up = status is not None and status.get("running") and state["proc"].poll() is None
        if not check("ofan-dp starts and answers status on its control socket", up,
                     f"{time.monotonic() - t0:.2f}s" if up else
                     f"exit code {state['proc'].poll()}, last error {err!r}"):
            log("---- ofan-dp output ----\n" + dp_output()[-4000:])
            return 1
        log(f"status: {status['fabric']}, "
            f"workers {[(w['lcore'], w['ports']) for w in status['workers']]}")
        check("an idle worker blocks on its ports' AF_XDP sockets (idle_wait.h)",
              all(w.get("blocking") for w in status["workers"]), str(status["workers"]))
        ports = {p["port"]: p for p in control(sock, "ports")}
        check("ports 0 and 1 present (af_xdp)", set(ports) == {0, 1},
              "; ".join(f"{p}: {v['dev']} {v['mac']} link {v['link']}"
                        for p, v in sorted(ports.items())))

        ok, s = ping(NS[0], GW_IP, 3)
        check(f"ping gateway {GW_IP} from h0", ok, s)
        ok, s = ping(NS[1], GW_IP, 3)
        check(f"ping gateway {GW_IP} from h1", ok, s)
        ports = {p["port"]: p for p in control(sock, "ports")}
        for i in range(2):
            want = host_mac(i)
            got = ports.get(i, {}).get("neighbor")
            how = "configured (its ARP goes to the kernel)" if trap and i == 0 else "from ARP"
            check(f"switch knows h{i}'s MAC on port {i}: {how}",
                  (got or "").lower() == want.lower(),
                  f"{got} (h{i} is {want})")
        ok, s = ping(NS[0], HOST_IP[1], 5)
        check(f"ping {HOST_IP[1]} from h0 through the switch", ok, s)

        mtu_check()

        roce_check(tmp, sock)
        if trap:
            trap_check(trap, sock)

        if state["proc"].poll() is not None:
            check("ofan-dp still running after the checks", False,
                  f"exit code {state['proc'].returncode}")
            log(dp_output()[-3000:])
    except Interrupted as e:
        check("test not interrupted", False, str(e))
    except Exception as e:  # noqa: BLE001 - any error is a failed run, cleanup still happens
        import traceback
        traceback.print_exc()
        check("test ran without errors", False, f"{type(e).__name__}: {e}")
        if state.get("proc") is not None:
            log("---- ofan-dp output ----\n" + dp_output()[-3000:])
    finally:
        try:
            cleanup(hp_before)
        except Exception as e:  # noqa: BLE001
            check("cleanup", False, f"{type(e).__name__}: {e}")
    el = time.monotonic() - t_start
    if state["interrupted"] and "test not interrupted" not in failures:
        check("test not interrupted", False, f"signal {state['interrupted']}")
    if failures:
        log(f"FAIL: {len(failures)} check(s) failed in {el:.1f}s: {', '.join(failures)}")
        return 1
    log(f"PASS: all checks passed in {el:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
