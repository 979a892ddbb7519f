"""What a fabric named NAME may have left behind: its namespaces, processes
(not zombies) whose command line names its state directory, EAL files and the
state directory itself. Shared by the fabric tests."""
import glob
import os


def leftovers(name):
    pre = f"ofe-{name}-"
    ns = [n for n in os.listdir("/var/run/netns") if n.startswith(pre)] \
        if os.path.isdir("/var/run/netns") else []
    procs = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode()
                state = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if f"/run/ofan-emu/{name}/" in cmd and state != "Z":
                procs.append(int(p))
    files = glob.glob(f"/var/run/dpdk/{pre}*") + glob.glob(f"/dev/hugepages/{pre}*")
    if os.path.exists(f"/run/ofan-emu/{name}"):
        files.append(f"/run/ofan-emu/{name}")
    return {"namespaces": ns, "processes": procs, "files": files}
