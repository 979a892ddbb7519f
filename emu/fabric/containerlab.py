"""A fabric as a Containerlab topology (`ofan-emu export --format
containerlab`).

expects:  a Topology, and a Plan (plan.py) when the fabric spans servers
gives:    topology_doc() -> the Containerlab document (name, topology.nodes,
          topology.links) of the whole fabric or of one server's part;
          to_yaml() -> its text
errors:   PlanError (exit code 2): a multi-server plan without a server, or
          a server named by host name (Containerlab's vxlan-stitch `remote`
          is an IP address)

The whole fabric (no plan, or a plan over one server) has every link a
veth: what clabernetes takes to a Kubernetes cluster, where it places the
nodes and makes the tunnels between them itself. One server's part of a
plan has that server's nodes, a veth for every link inside it, and a
`vxlan-stitch` link for each crossing link with an end there (endpoint =
the local end, remote = the far server, the plan's VNI and UDP port as
`dst-port`, the fabric's MTU): Containerlab's multi-host labs, one
topology per server. Link fields as in Containerlab's
schemas/clab.schema.json (link-type-veth, link-type-vxlan-stitched,
link-endpoint).

Nodes are `kind: linux` running SWITCH_IMAGE and HOST_IMAGE, which
ofan-emu does not build. A switch's port P is its interface eth<P+1>, a
host's one port eth1 (Containerlab keeps eth0 for management). Every
endpoint has its MAC from ofan-topo: each ofan-dp port knows its peer's
MAC statically (peer_mac), so a link with Containerlab's random MACs would
carry nothing; hence the long form of links, not `endpoints: ["a:eth1",
"b:eth2"]`.
"""
from typing import Any

from .plan import Plan, PlanError, Server, port_mac
from .topology import Link, Topology

SWITCH_IMAGE = "ofan/ofan-dp:latest"
HOST_IMAGE = "ofan/uroce-host:latest"


def interface(node_is_host: bool, port: int) -> str:
    """The Containerlab interface of a node's port."""
    return "eth1" if node_is_host else f"eth{port + 1}"


def _end(topo: Topology, node: str, port: int, mac: str) -> dict[str, Any]:
    return {"node": node, "interface": interface(node in topo.host_by_name, port), "mac": mac}


def _node(topo: Topology, name: str, server: Server | None) -> dict[str, Any]:
    labels: dict[str, Any] = {}
    env: dict[str, Any]
    if name in topo.host_by_name:
        h = topo.host_by_name[name]
        d: dict[str, Any] = {"kind": "linux", "image": HOST_IMAGE}
        labels = {"ofan.role": "host"}
        if topo.levels == 3:
            labels["ofan.pod"] = h.pod
        env = {"OFAN_NODE": name, "OFAN_ADDR": h.addr, "OFAN_MAC": h.mac,
               "OFAN_GATEWAY": h.gateway, "OFAN_GATEWAY_MAC": h.edge_mac}
    else:
        s = topo.sw_by_name[name]
        d = {"kind": "linux", "image": SWITCH_IMAGE}
        labels = {"ofan.role": s.role}
        if topo.levels == 3 and s.role != "core":
            labels["ofan.pod"] = s.pod
        env = {"OFAN_NODE": name, "OFAN_K": topo.k, "OFAN_LEVELS": topo.levels}
    if server is not None:
        labels["ofan.server"] = server.name
    d["labels"] = labels
    d["env"] = env
    return d


def _veth(topo: Topology, li: Link, mtu: int) -> dict[str, Any]:
    return {"type": "veth",
            "endpoints": [_end(topo, n, p, port_mac(topo, n, p)) for n, p in (li.a, li.b)],
            "mtu": mtu}


def pick_server(plan: Plan, which: str | None) -> Server | None:
    """The server whose part to export: None for the whole fabric (a plan
    over one server, or no --server with one server); PlanError when a
    plan over several servers names none."""
    if which is not None:
        return plan.server(which)
    if len(plan.servers) == 1:
        return None
    raise PlanError("export: the plan spans " + ", ".join(s.name for s in plan.servers)
                    + ": give --server S (Containerlab runs one topology per server); without "
                    "a plan, export writes the whole fabric for clabernetes")


def topology_doc(name: str, topo: Topology, fabric_mtu: int, plan: Plan | None = None,
                 server: Server | None = None) -> dict[str, Any]:
    """The Containerlab document: the whole fabric, or `server`'s part of
    `plan`."""
    if server is None or plan is None:
        nodes = {n: _node(topo, n, None) for n in
                 [s.name for s in topo.switches] + [h.name for h in topo.hosts]}
        links = [_veth(topo, li, fabric_mtu) for li in topo.links]
        return {"name": name, "topology": {"nodes": nodes, "links": links}}
    if server.family == 0 and len(plan.servers) > 1:
        raise PlanError(f"export: server {server.name} is {server.address}, a host name: "
                        "Containerlab's vxlan-stitch needs IP addresses (plan with "
                        "--servers ADDR,ADDR)")
    part = plan.part(server.name)
    here = {n.name for n in part.nodes}
    by_id = {c.id: c for c in part.crossing}
    address = {s.name: s for s in plan.servers}
    for crossing in part.crossing:
        far = crossing.ends_from(server.name)[1]
        if address[far.server].family == 0:
            raise PlanError(f"export: server {far.server} is {address[far.server].address}, a "
                            "host name: Containerlab's vxlan-stitch needs IP addresses")
    nodes = {n.name: _node(topo, n.name, server) for n in part.nodes}
    out: list[dict[str, Any]] = []
    for li in topo.links:
        c = by_id.get(li.id)
        if c is not None:
            local, far = c.ends_from(server.name)
            out.append({"type": "vxlan-stitch",
                        "endpoint": _end(topo, local.node, local.port, local.mac),
                        "remote": address[far.server].address, "vni": c.vni,
                        "dst-port": plan.udp_port, "mtu": plan.fabric_mtu})
        elif li.a[0] in here and li.b[0] in here:
            out.append(_veth(topo, li, plan.fabric_mtu))
    return {"name": name, "topology": {"nodes": nodes, "links": out}}


def to_yaml(doc: dict[str, Any], header: str) -> str:
    import yaml
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
