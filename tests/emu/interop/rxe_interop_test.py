#!/usr/bin/python3
"""uroce against the kernel's soft-RoCE (rxe): ofan-rc-1's pair check
(docs/rc-exchange.md) between `uroce peer` and `ofan-verbs peer` (rdma-core).

    rxe_interop_test.py PATH/TO/uroce PATH/TO/ofan-verbs PATH/TO/ofan-coll
                                                       (root; 77 = skipped)

rxe needs the rdma_rxe module and this test needs netem; where this kernel has
neither, the whole test runs again inside ONE VM with Debian's kernel and this
machine's root and binaries (`ofan-emu vm run`, emu/vm/). It skips (77) when
ofan-verbs is not built (the verbs side), when not root, or when no VM can run.

Topology (kernel 6.1's rxe has its UDP socket in the initial network
namespace only, so rxe sits on a netdev there):

    init netns: r0 10.9.0.1/24, rxe device on it  (ofan-verbs peer)
        | veth
    bridge netns B: br0 with ports p0 (to H) and pr (to r0); netem loss on
        | veth      both (AF_XDP's copy mode bypasses the sender's qdisc)
    host netns H: eth0 10.9.0.2/24                 (uroce peer --netns H)

MTU 2200 on every link: rxe's active MTU and uroce's offer are both 2048.
Static neighbour entries both ways (the kernels would ARP; static ones keep
loss from ever hitting ARP). For each run both sides must exit 0 with every
message acknowledged and every one expected arrived intact; WRITE WITH
IMMEDIATE and SEND, both directions at once, each stack once as the listener,
uroce on AF_XDP and once on AF_PACKET;
never an RNR, invalid request or access NAK. (A clean link may still reorder:
each vCPU has its own veth backlog, so NAKs are not counted there.) Under 1.5%
loss each way: uroce retransmitted (go-back-N on rxe's NAKs or timeouts) and
rxe's requester went back too (its hw_counters' deltas: a NAK it received or
a retry; names are read at run time, they differ between kernels). uroce's
PSNs start below 2^24 in one run so that they wrap.

Then a collective that mixes the stacks (uroce's "exchange" mode): rank 0 is
`ofan-coll --transport verbs` on rxe, ranks 1..3 one `uroce collective`
process driving namespaces H, H2, H3 (10.9.0.2..4, next hops from their
neighbour tables); all-to-all and all-gather must verify on both sides, and
`ofan-coll merge` must make one verified result of the two parts.
Processes, namespaces and the rxe device are removed on every exit path.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import (SKIP, Cleanup, bridge_hosts, check, has_netem, last_json, log,  # noqa: E402
                    rerun_in_vm, run, verdict)

PID = os.getpid()
NS = {"h": f"rih{PID}", "b": f"rib{PID}", "h2": f"ri2h{PID}", "h3": f"ri3h{PID}"}
UROCE_HOSTS = {"h": "10.9.0.2", "h2": "10.9.0.3", "h3": "10.9.0.4"}  # ranks 1.. of the collective
R0 = f"ri{PID}"[:15]  # the init namespace's veth end (no clash on a real host)
DEV = f"rxi{PID}"[:15]
IP_RXE, IP_UROCE = "10.9.0.1", "10.9.0.2"
LOSS = 0.015
cleanup = None


def mac_of(ifname, ns=None):
    cmd = ["ip", "-j", "link", "show", ifname] if ns is None else [
        "ip", "-j", "-n", ns, "link", "show", ifname]
    return json.loads(run(cmd).stdout)[0]["address"]


def kernel_has(module):
    return subprocess.run(["modprobe", module], capture_output=True).returncode == 0


def setup():
    for ns in NS.values():
        run(["ip", "netns", "add", ns])
    # H's eth0 <-> B's p0 (the pair checks' port), H2 p1, H3 p2.
    bridge_hosts(NS["b"], {NS[h]: f"{ip}/24" for h, ip in UROCE_HOSTS.items()})
    # netns 1: PID 1's, the initial namespace (rxe's).
    run(["ip", "-n", NS["b"], "link", "add", "pr", "type", "veth", "peer", "name", R0,
         "netns", "1"])
    run(["ip", "-n", NS["b"], "link", "set", "pr", "mtu", "2200", "master", "br0", "up"])
    run(["ip", "link", "set", R0, "mtu", "2200", "up"])
    run(["ip", "addr", "add", f"{IP_RXE}/24", "dev", R0])
    macs = {IP_RXE: (None, mac_of(R0))}
    macs.update({ip: (h, mac_of("eth0", NS[h])) for h, ip in UROCE_HOSTS.items()})
    for ip, (h, _) in macs.items():
        for peer, (_, mac) in macs.items():
            if peer == ip:
                continue
            where = ["ip"] if h is None else ["ip", "-n", NS[h]]
            run(where + ["neigh", "replace", peer, "lladdr", mac, "dev",
                         R0 if h is None else "eth0", "nud", "permanent"])
    run(["rdma", "link", "add", DEV, "type", "rxe", "netdev", R0])


def remove_rxe():
    subprocess.run(["rdma", "link", "delete", DEV], capture_output=True)
    subprocess.run(["ip", "link", "del", R0], capture_output=True)


def impair(loss):
    for port in ("p0", "pr"):
        run(["tc", "-n", NS["b"], "qdisc", "del", "dev", port, "root"], check_rc=False)
        if loss:
            run(["tc", "-n", NS["b"], "qdisc", "add", "dev", port, "root", "netem", "loss",
                 f"{loss * 100:g}%"])


def hw_counters():
    d = f"/sys/class/infiniband/{DEV}/ports/1/hw_counters"
    out = {}
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        try:
            with open(os.path.join(d, name)) as f:
                out[name] = int(f.read().strip())
        except (OSError, ValueError):
            continue
    return out


def pair_run(uroce, verbs, common, uroce_listens, uroce_extra=(), timeout_s=90, io="afxdp"):
    """Runs both sides; returns {"uroce": (rc, json, err), "rxe": (...)}.
    Each side keeps about 128 packets in flight (uroce: 8 messages of 16,
    ofan-verbs: 4 per QP): what either queues ahead of the other's ACKs must
    drain well inside rxe's 67 ms timeout on a TCG VM's slow links (see
    docs/uroce.md, "Interop with rxe")."""
    t = ["--json", "--timeout-s", str(timeout_s - 30)]
    u = [uroce, "peer", "--netns", NS["h"], "--iface", "eth0", "--io", io, "--window", "8",
         *t, *common, *uroce_extra]
    v = [verbs, "peer", "--device", DEV, "--ip", IP_RXE, "--depth", "4", *t, *common]
    if uroce_listens:
        u += ["--listen"]
        v += ["--connect", IP_UROCE]
        order = [("uroce", u), ("rxe", v)]
    else:
        v += ["--listen", IP_RXE]
        u += ["--connect", IP_RXE]
        order = [("rxe", v), ("uroce", u)]
    procs = [(name, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)) for name, cmd in order]
    cleanup.procs = [p for _, p in procs]
    res = {}
    for name, p in procs:
        try:
            o, e = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        res[name] = (p.returncode, last_json(o), e)
    cleanup.procs = []
    return res


def scenario(uroce, verbs, name, op, loss, uroce_listens, count=100, size="32KiB", qps=2,
             uroce_extra=(), io="afxdp"):
    impair(loss)
    label = f"{op} {name}"
    common = ["--op", op, "--count", str(count), "--size", size, "--qps", str(qps),
              "--direction", "both"]
    before = hw_counters()
    res = pair_run(uroce, verbs, common, uroce_listens, uroce_extra, io=io)
    after = hw_counters()
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    ok = True
    for side in ("uroce", "rxe"):
        rc, j, err = res[side]
        ok &= check(f"{label}: {side} side exits 0", rc == 0 and j is not None and j.get("ok"),
                    f"rc {rc} {err.strip()[-400:]} {j and j.get('error')} "
                    f"{j and j.get('bad_notes')}")
    if not ok:
        log(f"  rxe hw_counters deltas: {delta}")
        return
    ju, jv = res["uroce"][1], res["rxe"][1]
    check(f"{label}: uroce sent {count} acknowledged and received {count} intact",
          ju["sent"] == count and ju["received"] == count and ju["bad"] == 0 and
          ju["peer_done"] == {"received": count, "bad": 0},
          f"sent {ju['sent']} received {ju['received']} bad {ju['bad']} {ju['bad_notes']} "
          f"rxe's done {ju.get('peer_done')}")
    check(f"{label}: the rxe side received {count}, none bad",
          jv.get("received") == count and jv.get("bad") == 0,
          f"received {jv.get('received')} bad {jv.get('bad')}")
    check(f"{label}: uroce saw no bad ICRC from rxe", ju["counters"]["bad_icrc"] == 0,
          str(ju["counters"]["bad_icrc"]))
    check(f"{label}: uroce ran on {io}", ju["counters"]["io"] == io.replace("af", "af_"),
          ju["counters"]["io"])
    tot = ju["totals"]
    log(f"  {label}: uroce {ju['seconds']:.2f} s {ju['gbps']:.3f} Gb/s, mtu {ju['mtu']}, "
        f"retransmits {tot['retransmits']}, NAKs sent {tot['naks_tx']} received "
        f"{tot['naks_rx']}, timeouts {tot['timeouts']}, out of sequence "
        f"{tot['out_of_sequence']}, duplicates {tot['duplicates']}; rxe hw_counters deltas "
        f"{delta}")
    other_naks = sum(q["other_naks_tx"] + q["other_naks_rx"] for q in ju["counters"]["qps"])
    check(f"{label}: no RNR, invalid request or access NAK either way", other_naks == 0,
          str(other_naks))
    if not loss:
        # Not "no NAK": with two vCPUs the veths reorder (each CPU has its
        # backlog), and both stacks NAK a packet that overtook another.
        return
    check(f"{label}: uroce's requester went back N (retransmissions)", tot["retransmits"] > 0,
          str(tot))
    went_back = [k for k in ("rcvd_seq_err", "completer_retry_err") if k in after]
    if went_back:
        check(f"{label}: rxe's requester went back N ({' + '.join(went_back)} > 0)",
              sum(delta.get(k, 0) for k in went_back) > 0, str(delta))
    else:
        log(f"  (this kernel's rxe counts neither rcvd_seq_err nor completer_retry_err: "
            f"{sorted(after)})")
    check(f"{label}: uroce's responder saw rxe's gaps (out of sequence, NAKs sent)",
          tot["out_of_sequence"] > 0 or tot["duplicates"] > 0, str(tot))


def mixed_collective(uroce, coll, workload, msg=128 * 1024):
    """Rank 0 on rxe (ofan-coll verbs), ranks 1..3 in one uroce process."""
    impair(0)
    label = f"mixed {workload}: rank 0 rxe, ranks 1-3 uroce"
    port = str(19000 + PID % 1000)
    addrs = [IP_RXE] + list(UROCE_HOSTS.values())
    spec = {"workload": workload, "msg_bytes": msg, "seed": 7, "qps_per_peer": 2,
            "chunk_bytes": 32 * 1024, "max_outstanding": 4, "mtu": 2048, "deadline_s": 60,
            "rto_us": 67108,  # as the verbs rank's QPs (IBA timeout 14)
            "io": "afxdp", "exchange": True, "rc_port": int(port),
            "hosts": [{"rank": 0, "ip": IP_RXE, "external": True}] +
                     [{"rank": r + 1, "netns": NS[h], "ifname": "eth0", "ip": ip}
                      for r, (h, ip) in enumerate(UROCE_HOSTS.items())]}
    path = f"/tmp/rxe-interop-{PID}-{workload}.json"
    with open(path, "w") as f:
        json.dump(spec, f)
    cmds = {"rxe": [coll, "--transport", "verbs", "--rank", "0", "--addrs", ",".join(addrs),
                    "--device", DEV, "--rc-port", port, "--workload", workload, "--msg",
                    str(msg), "--qps", "2", "--seed", "7", "--chunk", "32KiB",
                    "--max-outstanding", "4", "--deadline-ms", "60000", "--json"],
            "uroce": [uroce, "collective", "--spec", path, "--json"]}
    try:
        procs = {k: subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True) for k, c in cmds.items()}
        cleanup.procs = list(procs.values())
        out = {}
        for k, p in procs.items():
            try:
                o, e = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                o, e = p.communicate()
            out[k] = (p.returncode, last_json(o), e)
        cleanup.procs = []
    finally:
        os.unlink(path)
    parts = {"rxe": out["rxe"][1], "uroce": out["uroce"][1] and out["uroce"][1].get("result")}
    for k, (rc, _, err) in out.items():
        res = parts[k] or {}
        check(f"{label}: the {k} side verifies its ranks (exit 0)",
              rc == 0 and res.get("verified") and not res.get("error"),
              f"rc {rc} error {res.get('error')!r} {err.strip()[-300:]}")
    if not all(parts.values()):
        return
    merged = subprocess.run([coll, "merge"], input="\n".join(json.dumps(parts[k]) for k in parts),
                            capture_output=True, text=True, timeout=30)
    m = last_json(merged.stdout) or {}
    tot = out["uroce"][1]["totals"]
    check(f"{label}: ofan-coll merge: one verified collective of 4 ranks",
          merged.returncode == 0 and m.get("verified") and m.get("ranks") == 4 and
          not m.get("partial"),
          f"rc {merged.returncode} cct {m.get('cct_us')} us, algbw {m.get('algbw_gbps')} Gb/s, "
          f"uroce retransmissions {tot['retransmissions']}, timeouts {tot['timeouts']}; "
          f"rxe {({k: v for k, v in (m.get('rxe_counters') or {}).items() if v})} "
          f"{merged.stderr.strip()[-200:]}")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    uroce, verbs = sys.argv[1], sys.argv[2]
    coll = sys.argv[3] if len(sys.argv) > 3 else ""
    if not verbs or not os.access(verbs, os.X_OK):
        log(f"SKIP: ofan-verbs is not built here ({verbs or 'no path'}): the rdma-core side of "
            f"the pair check (emu/verbs/, built where libibverbs is found) is missing")
        return SKIP
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, AF_XDP, rdma link)")
        return SKIP
    missing = [w for w, ok in (("rdma_rxe", kernel_has("rdma_rxe")),
                               ("netem", has_netem())) if not ok]
    if missing:
        return rerun_in_vm(f"this kernel has no {' and no '.join(missing)}",
                           [os.path.abspath(__file__), os.path.abspath(uroce),
                            os.path.abspath(verbs)] + ([os.path.abspath(coll)] if coll else []),
                           mem_mb=1536)
    global cleanup
    cleanup = Cleanup(NS.values())
    try:
        setup()
        scenario(uroce, verbs, "both ways, clean, uroce listens", "write", 0, True)
        scenario(uroce, verbs, "both ways, clean, rxe listens", "send", 0, False)
        scenario(uroce, verbs, f"both ways, loss {LOSS:.1%}, rxe listens", "write", LOSS, False)
        scenario(uroce, verbs, f"both ways, loss {LOSS:.1%}, uroce listens", "send", LOSS, True)
        scenario(uroce, verbs, "both ways, clean, uroce's PSNs wrap", "write", 0, True,
                 count=40, size="30000", qps=1, uroce_extra=["--psn", "16777200"])
        scenario(uroce, verbs, "both ways, clean, uroce on AF_PACKET", "send", 0, False,
                 count=40, io="afpacket")
        if coll:
            for w in ("alltoall", "allgather"):
                mixed_collective(uroce, coll, w)
        else:
            log("  (no ofan-coll given: the mixed collective is not run)")
    except Exception as e:  # a failed setup step is a failure, after cleanup
        check("setup and runs", False, str(e))
    finally:
        cleanup()
        remove_rxe()
    return verdict("uroce-rxe interop")


if __name__ == "__main__":
    sys.exit(main())
