"""A link that crosses servers, stitched: on each server its end is a switch
port like any other (a veth into the switch's namespace), whose other side,
in the server's own namespace (the one ofan-emu runs in), is joined to a
kernel VXLAN device by tc u32 mirred redirects both ways (Containerlab's
`vxlan-stitch`; this kernel has VXLAN, u32 and mirred, not matchall or
flower).

expects:  root; a plan (plan.py) naming the link's VNI, UDP port, both
          servers' addresses and the stitch MAC; a route to the far server
          whose device carries plan.underlay_mtu
modifies: in this process's network namespace, per crossing link end: the
          veth's outer side and a VXLAN device (nolearning, fixed remote,
          the plan's VNI and port, the fabric's MTU, the stitch MAC), named
          by ifnames() (the fabric's name and the link id: interfaces of one
          server's namespace, where another server's never are), each with
          an ingress qdisc and one u32 filter redirecting to the other; the
          veth's inner side is the switch's port (p<PORT>, its MAC)
gives:    Stitch.of() (one end's stitch, from the plan), ifnames(),
          check_underlay() (StitchError, exit 3, naming both MTUs),
          create(), delete(), present()

The caller records the names in the state file before create() makes them,
so that down (and down --all after a crash) finds them; deleting the veth's
outer side takes the inner side with it, and deleting either device its
qdisc and filter.
"""
import socket
from dataclasses import dataclass


from . import netns
from .plan import CrossingLink, Plan
from .tools import FabricError, run, run_json

IFNAMSIZ = 15          # an interface name's characters at most (IFNAMSIZ - 1)
EXIT_UNDERLAY = 3      # the environment lacks something (cli.py's EXIT_CPU)


class StitchError(FabricError):
    """A stitch that cannot be made here (names, underlay, addresses)."""


def ifnames(fabric: str, link_id: int) -> tuple[str, str]:
    """(the VXLAN device, the veth's outer side) of a crossing link on a
    server: NAME-xID, NAME-vID."""
    names = (f"{fabric}-x{link_id}", f"{fabric}-v{link_id}")
    if len(names[0]) > IFNAMSIZ:
        raise StitchError(f"fabric {fabric}, link {link_id}: interface name {names[0]} is longer "
                          f"than {IFNAMSIZ} characters; make the plan with a shorter --name",
                          code=2)
    return names


def resolve(address: str, family: int) -> str:
    """An underlay address as VXLAN takes it: an IP address as it is, a host
    name resolved (of the plan's family; 0: either)."""
    fam = {4: socket.AF_INET, 6: socket.AF_INET6}.get(family, socket.AF_UNSPEC)
    try:
        infos = socket.getaddrinfo(address, None, fam, socket.SOCK_DGRAM)
    except OSError as e:
        raise StitchError(f"server address {address}: {e.strerror or e}", code=EXIT_UNDERLAY)
    return str(infos[0][4][0])


@dataclass(frozen=True)
class Stitch:
    """One crossing link's end on this server."""
    link_id: int
    vni: int
    udp_port: int
    local: str          # this server's underlay address
    remote: str         # the far server's
    mtu: int            # the fabric's
    mac: str            # the plan's stitch MAC of this end (veth outer side, VXLAN device)
    vxlan: str          # interface names (ifnames)
    outer: str
    node: str           # the switch of this end, and its port
    port: int

    @classmethod
    def of(cls, plan: Plan, link: CrossingLink, server: str) -> "Stitch":
        here, far = link.ends_from(server)
        fam = plan.server(here.server).family or plan.server(far.server).family
        vx, outer = ifnames(plan.name, link.id)
        return cls(link_id=link.id, vni=link.vni, udp_port=plan.udp_port,
                   local=resolve(plan.server(here.server).address, fam),
                   remote=resolve(plan.server(far.server).address, fam), mtu=plan.fabric_mtu,
                   mac=here.stitch_mac, vxlan=vx, outer=outer, node=here.node, port=here.port)

    @property
    def names(self) -> tuple[str, str]:
        return (self.vxlan, self.outer)


def underlay(remote: str) -> tuple[str, int]:
    """(the device the route to `remote` leaves by, the MTU it carries: the
    device's, or the route's own where it sets a lower one)."""
    routes = run_json(["ip", "-j", "route", "get", remote])
    if not routes or not isinstance(routes, list) or "dev" not in routes[0]:
        raise StitchError(f"underlay: no route to the far server {remote} from this server "
                          "(ip route get)", code=EXIT_UNDERLAY)
    dev = str(routes[0]["dev"])
    links = run_json(["ip", "-j", "link", "show", "dev", dev])
    if not links or "mtu" not in links[0]:
        raise StitchError(f"underlay: cannot read the MTU of {dev} (the route to {remote})",
                          code=EXIT_UNDERLAY)
    mtu = int(links[0]["mtu"])
    for m in routes[0].get("metrics", []) or []:
        if isinstance(m, dict) and isinstance(m.get("mtu"), int):
            mtu = min(mtu, m["mtu"])
    return dev, mtu


def check_underlay(plan: Plan, remotes: set[str]) -> None:
    """StitchError (exit 3) unless the route to every far server carries
    plan.underlay_mtu: the fabric's MTU plus VXLAN's overhead."""
    for remote in sorted(remotes):
        dev, mtu = underlay(remote)
        if mtu < plan.underlay_mtu:
            raise StitchError(
                f"underlay: the route to {remote} leaves by {dev}, MTU {mtu}; the fabric's "
                f"MTU {plan.fabric_mtu} over VXLAN needs an underlay MTU of at least "
                f"{plan.underlay_mtu} (raise {dev}'s MTU, or the network's, to "
                f"{plan.underlay_mtu})", code=EXIT_UNDERLAY)


def present() -> set[str]:
    """The interfaces of this namespace, by name."""
    links = run_json(["ip", "-j", "link", "show"]) or []
    return {str(x["ifname"]) for x in links if isinstance(x, dict) and "ifname" in x}


def create(st: Stitch, switch_ns: str, switch_if: str, switch_mac: str) -> None:
    """The veth (switch_if with switch_mac in switch_ns, st.outer here), the
    VXLAN device, and the redirects between the two."""
    mtu = str(st.mtu)
    run(["ip", "link", "add", "name", st.outer, "address", st.mac, "mtu", mtu, "type", "veth",
         "peer", "name", switch_if, "address", switch_mac, "mtu", mtu, "netns", switch_ns])
    run(["ip", "link", "add", "name", st.vxlan, "address", st.mac, "mtu", mtu, "type", "vxlan",
         "id", str(st.vni), "remote", st.remote, "local", st.local, "dstport",
         str(st.udp_port), "nolearning"])
    for dev in st.names:
        # No IPv6 link-local address: this side sends nothing of its own
        # (no ND, no MLD) into the fabric.
        run(["ip", "link", "set", "dev", dev, "addrgenmode", "none"], check=False)
        run(["ip", "link", "set", "dev", dev, "up"])
    netns.set_link(switch_ns, switch_if, True)
    netns.ethtool_off(switch_ns, switch_if)
    netns.ethtool_off(None, st.outer)
    netns.redirect(None, st.outer, st.vxlan)
    netns.redirect(None, st.vxlan, st.outer)


def delete(names: list[str] | tuple[str, ...]) -> list[str]:
    """The interfaces named (a stitch's, or what a state file recorded)
    removed from this namespace, with their qdiscs and filters; the names
    that were there."""
    here = present()
    gone = []
    for name in names:
        if name in here:
            p = run(["ip", "link", "del", "dev", name], check=False)
            if p.returncode == 0:
                gone.append(name)
            elif name in present():
                raise FabricError(f"ip link del {name}: {p.stderr.strip()}")
            here = present()  # a veth's outer side takes the inner one with it
    return gone
