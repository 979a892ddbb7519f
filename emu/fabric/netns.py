"""Network namespaces, veth links and their settings, through netlink
(pyroute2) rather than `ip` in loops; `tc` and `sysctl` where netlink has no
simpler way.

expects:  root; names that the caller made unique (the fabric's prefix)
gives:    create / delete namespaces; a veth pair between two namespaces with
          given names, MACs and MTU; addresses, routes, permanent neighbours;
          link up/down; a "wire" namespace carrying tc netem between two ends
"""
import os
from subprocess import CompletedProcess
from typing import Any, Iterable, Sequence

from pyroute2 import NetNS, netns
from pyroute2.netlink.exceptions import NetlinkError

from .tools import FabricError, run, run_ns
from .topology import LinkAttrs

NETNS_DIR = "/var/run/netns"


def exists(ns: str) -> bool:
    return os.path.exists(os.path.join(NETNS_DIR, ns))


def list_ns() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def check_lasting() -> None:
    """FabricError (exit 2) when the mount that holds /run/netns is, here, a
    slave (mountinfo's "master:" without "shared:"), as in the mount
    namespace `ip netns exec` makes: the namespaces this process names (bind
    mounts there) would not be seen outside it and would vanish with it. A
    server that is itself a network namespace is entered with nsenter
    --net=/run/netns/SERVER, which keeps the mount namespace."""
    where = os.path.realpath(NETNS_DIR)
    best: list[str] = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                mnt = fields[4] if len(fields) > 4 else ""
                if (where == mnt or where.startswith(mnt.rstrip("/") + "/")) and \
                        len(mnt) >= len(best[4] if best else ""):
                    best = fields
    except OSError:
        return  # nothing to go by: assume the usual
    tags = best[6:best.index("-")] if "-" in best else []
    if any(t.startswith("master:") for t in tags) and \
            not any(t.startswith("shared:") for t in tags):
        raise FabricError("this ofan-emu runs in a mount namespace of its own (ip netns exec "
                          "makes one): the network namespaces it makes would vanish when it "
                          "exits; enter a server's namespace with nsenter --net=/run/netns/NS",
                          code=2)


def create(ns: str, sysctls: Iterable[str] = ()) -> None:
    """Creates ns (an error if it exists: someone else's, or a leftover)."""
    if exists(ns):
        raise FabricError(f"network namespace {ns} already exists "
                          "(a leftover? ofan-emu down --all)")
    netns.create(ns)
    with NetNS(ns) as n:
        lo = n.link_lookup(ifname="lo")[0]
        n.link("set", index=lo, state="up")
    settings = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
    settings += list(sysctls)
    run_ns(ns, ["sysctl", "-q", "-w"] + settings)


def delete(ns: str) -> bool:
    """Deletes ns and, with it, every interface inside (veths die in pairs)."""
    if not exists(ns):
        return False
    try:
        netns.remove(ns)
    except OSError as e:
        raise FabricError(f"cannot delete network namespace {ns}: {e}")
    return True


def pids_in(ns: str) -> list[int]:
    """Processes whose network namespace is ns (ip netns pids)."""
    p = run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split()] if p.returncode == 0 else []


def veth(ns_a: str, if_a: str, mac_a: str, ns_b: str, if_b: str, mac_b: str,
         mtu: int) -> None:
    """A veth pair: if_a in ns_a, if_b in ns_b, both up."""
    with NetNS(ns_a) as a:
        try:
            a.link("add", ifname=if_a, kind="veth", address=mac_a,
                   peer={"ifname": if_b, "net_ns_fd": ns_b, "address": mac_b})
        except NetlinkError as e:
            raise FabricError(f"veth {ns_a}/{if_a} -- {ns_b}/{if_b}: {e}")
        i = a.link_lookup(ifname=if_a)[0]
        a.link("set", index=i, mtu=mtu, state="up")
    with NetNS(ns_b) as b:
        i = b.link_lookup(ifname=if_b)[0]
        b.link("set", index=i, mtu=mtu, state="up")


def bridge(ns: str, name: str, addr: str, prefixlen: int) -> None:
    """A Linux bridge in ns holding addr, up: a flat L2 segment (the VM
    hosts' management network)."""
    with NetNS(ns) as n:
        try:
            n.link("add", ifname=name, kind="bridge")
        except NetlinkError as e:
            raise FabricError(f"{ns}: bridge {name}: {e}")
        i = n.link_lookup(ifname=name)[0]
        n.addr("add", index=i, address=addr, prefixlen=prefixlen)
        n.link("set", index=i, state="up")


def enslave(ns: str, ifname: str, bridge_name: str) -> None:
    """ifname, in ns, a port of the bridge there."""
    with NetNS(ns) as n:
        try:
            n.link("set", index=n.link_lookup(ifname=ifname)[0],
                   master=n.link_lookup(ifname=bridge_name)[0])
        except (NetlinkError, IndexError) as e:
            raise FabricError(f"{ns}: {ifname} into bridge {bridge_name}: {e}")


def set_link(ns: str, ifname: str, up: bool) -> None:
    with NetNS(ns) as n:
        idx = n.link_lookup(ifname=ifname)
        if not idx:
            raise FabricError(f"{ns}: no interface {ifname}")
        n.link("set", index=idx[0], state="up" if up else "down")


SILENT_TABLE = "ofan_silent"


def silent_drop(ns: str, ifname: str, drop: bool) -> None:
    """Every frame the kernel of ns receives on ifname dropped (an nftables
    netdev ingress chain, policy drop), or no longer: with the carrier up,
    what a silently failed cable does to the control frames the kernel
    hears (this kernel has no tc drop action)."""
    chain = f"drop_{ifname}"
    if drop:
        rules = (f"table netdev {SILENT_TABLE} {{\n"
                 f"  chain {chain} {{ type filter hook ingress device \"{ifname}\" "
                 "priority -500; policy drop; }\n}\n")
        run_ns(ns, ["nft", "-f", "-"], input=rules)
    else:
        # Gone already (a namespace made again, a rule removed by hand): fine.
        r = run_ns(ns, ["nft", "delete", "chain", "netdev", SILENT_TABLE, chain], check=False)
        if r.returncode != 0 and "No such file" not in r.stderr:
            raise FabricError(f"{ns}: nft delete chain {chain}: {r.stderr.strip()}")


def has_link(ns: str, ifname: str) -> bool:
    with NetNS(ns) as n:
        return bool(n.link_lookup(ifname=ifname))


def set_mtu_up(ns: str, ifname: str, mtu: int) -> None:
    with NetNS(ns) as n:
        n.link("set", index=n.link_lookup(ifname=ifname)[0], mtu=mtu, state="up")


def add_addr(ns: str, ifname: str, addr: str, prefixlen: int) -> None:
    with NetNS(ns) as n:
        i = n.link_lookup(ifname=ifname)[0]
        n.addr("add", index=i, address=addr, prefixlen=prefixlen)


def add_neighbor(ns: str, ifname: str, ip: str, mac: str) -> None:
    with NetNS(ns) as n:
        i = n.link_lookup(ifname=ifname)[0]
        n.neigh("replace", dst=ip, lladdr=mac, ifindex=i, state=128)  # NUD_PERMANENT


def replace_route(ns: str, prefix: str, nexthops: Sequence[tuple[str, str | None]]) -> None:
    """prefix -> [(ifname, gateway or None)]; no next hop deletes the route
    (then the destination is unreachable from here, as the tables say)."""
    dst, _, plen = prefix.partition("/")
    with NetNS(ns) as n:
        if not nexthops:
            try:
                n.route("del", dst=dst, dst_len=int(plen))
            except NetlinkError:
                pass
            return
        hops: list[dict[str, Any]] = []
        for ifname, gw in nexthops:
            h: dict[str, Any] = {"oif": n.link_lookup(ifname=ifname)[0]}
            if gw:
                h["gateway"] = gw
                h["flags"] = 4  # RTNH_F_ONLINK
            hops.append(h)
        kw: dict[str, Any] = {"dst": dst, "dst_len": int(plen)}
        if len(hops) == 1:
            kw.update(hops[0])
            kw["oif"] = hops[0]["oif"]
        else:
            kw["multipath"] = hops
        try:
            n.route("replace", **kw)
        except NetlinkError as e:
            raise FabricError(f"{ns}: route {prefix} via {nexthops}: {e}")


def add_default_route(ns: str, ifname: str, gateway: str) -> None:
    with NetNS(ns) as n:
        i = n.link_lookup(ifname=ifname)[0]
        n.route("replace", dst="0.0.0.0", dst_len=0, gateway=gateway, oif=i, flags=4)


def run_in(ns: str | None, cmd: list[str], **kw: Any) -> "CompletedProcess[str]":
    """cmd inside namespace ns, or in this process's own (None: a server's
    namespace, where a crossing link's stitch lives: stitch.py)."""
    return run(cmd, **kw) if ns is None else run_ns(ns, cmd, **kw)


def tc(ns: str | None, args: list[str]) -> None:
    run_in(ns, ["tc"] + args)


def netem_args(attrs: LinkAttrs) -> list[str]:
    """tc netem's arguments for a link's latency / loss / reordering."""
    a: list[str] = []
    if attrs.latency_us > 0:
        a += ["delay", f"{attrs.latency_us}us"]
    if attrs.reorder_pct > 0:
        a += ["reorder", f"{attrs.reorder_pct}%", "50%"]
    if attrs.loss_pct > 0:
        a += ["loss", f"{attrs.loss_pct}%"]
    # netem's own queue must not be the bottleneck or a drop point: the
    # switches emulate buffers; netem only delays.
    return a + ["limit", "100000"]


NO_NETEM = ("this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), which link latency, "
            "loss and reordering need (latency_us, loss_pct, reorder_pct); "
            "run on a kernel that has it, or leave those attributes at 0")


def has_netem() -> bool:
    """Whether tc netem works here (probed on the loopback of a scratch
    namespace, which carries the reserved prefix so that down --all would
    find it)."""
    ns = f"ofe-probe{os.getpid() % 100000}-x"
    try:
        create(ns)
        p = run_ns(ns, ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1us"],
                   check=False)
        return p.returncode == 0
    finally:
        delete(ns)


def wire(ns: str, if_a: str, if_b: str, attrs: LinkAttrs) -> None:
    """Makes ns a wire between its two interfaces: each one's ingress is
    redirected to the other's egress, where netem delays, drops or reorders.
    Needed because AF_XDP transmits past the qdisc layer (a netem qdisc on a
    switch's own port would never see its frames)."""
    for src, dst in ((if_a, if_b), (if_b, if_a)):
        p = run_ns(ns, ["tc", "qdisc", "add", "dev", dst, "root", "netem"] + netem_args(attrs),
                   check=False)
        if p.returncode != 0:
            if "qdisc kind is unknown" in p.stderr:
                raise FabricError(NO_NETEM, code=3)
            raise FabricError(f"{ns}: tc netem: {p.stderr.strip()}")
        redirect(ns, src, dst)


def redirect(ns: str | None, src: str, dst: str) -> None:
    """Everything arriving on src leaves through dst (tc mirred): one half
    of a wire, how a VM's tap is spliced onto a host's link, and one half of
    a crossing link's stitch (ns None: this process's namespace)."""
    tc(ns, ["qdisc", "add", "dev", src, "handle", "ffff:", "ingress"])
    # u32 matching everything rather than matchall, which some kernels
    # (this machine kind's) are built without.
    tc(ns, ["filter", "add", "dev", src, "parent", "ffff:", "protocol", "all", "u32", "match",
            "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", dst])


def ethtool_off(ns: str | None, ifname: str, features: Sequence[str] = ("tx", "rx")) -> None:
    """Checksum offloads off: a veth hands frames with a partial checksum to
    the peer, and an AF_XDP socket (the switch) would forward them broken."""
    args: list[str] = []
    for f in features:
        args += [f, "off"]
    run_in(ns, ["ethtool", "-K", ifname] + args, check=False)
