"""What a fabric named NAME may have left behind: its namespaces, processes
(not zombies) whose command line names its state directory, EAL files and the
state directory itself. Shared by the fabric tests. A server's part of a plan
(multiserver_test.py): its run directory (OFAN_EMU_RUN_DIR) and its prefix,
ofe-NAME-SERVER-."""
import glob
import os


def leftovers(name, run_dir="/run/ofan-emu", pre=None):
    pre = pre or f"ofe-{name}-"
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
            if f"{run_dir}/{name}/" in cmd and state != "Z":
                procs.append(int(p))
    files = glob.glob(f"/var/run/dpdk/{pre}*") + glob.glob(f"/dev/hugepages/{pre}*")
    if os.path.exists(f"{run_dir}/{name}"):
        files.append(f"{run_dir}/{name}")
    return {"namespaces": ns, "processes": procs, "files": files}
