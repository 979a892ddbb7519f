"""What `ofan-emu up` is asked for, as typed records: one UpRequest, made
once (by cli.py from the command line, or by a caller such as the demo),
checked once (Fabric.check) and then acted on (Fabric.up).

expects:  values already parsed from text (cli.py parses; the ranges and
          defaults are ofan-dp's, read through facts.py)
gives:    UpRequest, with its PFC (Pfc) and resequencing (Reorder) parts;
          Setup's view of them (UpRequest.pfcwd_* , reorder_*)
next:     fabric.py checks a request against the topology and the kinds
          (FabricError, exit 2, before anything is made) and brings it up
"""
from dataclasses import dataclass


# How a uroce host's frames reach the shared engine: through its veth and
# AF_XDP at both ends, as a NIC's would (tcpdump and the hosts' kernels see
# them), or through shared-memory rings (dataplane/hostio/shm_io.h: no
# kernel in the way; the host's kernel is then off the fabric).
HOST_IOS = ("veth", "shm")
DEFAULT_HOST_IO = HOST_IOS[0]


@dataclass(frozen=True)
class Pfc:
    """up --pfc: the lossless priority and its watchdog's settings."""
    priority: int
    wd_detect_ms: int
    wd_restore_ms: int
    wd_action: str


@dataclass(frozen=True)
class Reorder:
    """up --reorder: each host port's buffer and timeout (None: the
    buffer's drain time at the port's rate, ofan-dp's default)."""
    buffer_kb: int
    timeout_us: int | None


@dataclass(frozen=True)
class UpRequest:
    """vm_hosts: host names whose slot a soft-RoCE VM takes (nodes/rxe_vm.py);
    engine: ofan-dp's, per-switch or shared (None: nodes.DEFAULT_ENGINE);
    control: who computes the masks (control_plane.py); miswire:
    'SW:PORT,SW:PORT', two ports whose cables are swapped (a cabling error
    for the control plane to find: Topology.cabling); bfd_ms,
    bfd_multiplier: the agents' BFD timers (None: ofan-agent's default);
    pfc: PFC on every link (None: off); reorder: the edges' resequencing
    (None: off); host_stamp: how the shared engine stamps hosts' frames
    (None: ofan-dp's default); host_io: how uroce hosts' frames reach the
    shared engine (HOST_IOS); pipe_size None: the topology's k."""
    switch: str = "ofan"
    policy: str = "ofan"
    ofan_mode: str | None = "combined"
    seed: int = 1
    pipe_size: int | None = None
    vm_hosts: tuple[str, ...] = ()
    vm_mem_mb: int | None = None
    engine: str | None = None
    control: str = "tables"
    miswire: str | None = None
    bfd_ms: int | None = None
    bfd_multiplier: int | None = None
    pfc: Pfc | None = None
    reorder: Reorder | None = None
    host_stamp: str | None = None
    host_io: str = DEFAULT_HOST_IO
