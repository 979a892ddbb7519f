#!/usr/bin/env python3
"""Plots an ofan-sim --sweep result (JSON) as Fig. 4-style panels.

usage: plot_sweep.py SWEEP.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        data = json.load(f)
    rows = data["sweep"]
    lbs = list(dict.fromkeys(r["lb"] for r in rows))
    cfg = data["config"]
    panels = [
        ("queue_max_pkts", "Max queue (data packets)", True),
        ("queue_avg_pkts", "Time-average queue (data packets)", True),
        ("cct_inflation", "CCT inflation over lower bound (%)", False),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    # One colour and marker per scheme, also past matplotlib's ten colours.
    colours = plt.get_cmap("tab20").colors
    markers = "osD^v<>ph*"
    for ax, (key, title, logy) in zip(axes, panels):
        for i, lb in enumerate(lbs):
            pts = sorted((r["msg_bytes"], r[key], r.get(key + "_sem", 0.0))
                         for r in rows if r["lb"] == lb)
            xs = [p[0] / 1024 for p in pts]
            scale = 100.0 if key == "cct_inflation" else 1.0
            ys = [p[1] * scale for p in pts]
            es = [p[2] * scale for p in pts]
            exp = data.get("growth_exponent", {}).get(lb)
            label = f"{lb} (slope {exp:.2f})" if exp is not None and key == "queue_max_pkts" else lb
            ax.errorbar(xs, ys, yerr=es, marker=markers[i % len(markers)], capsize=3,
                        label=label, color=colours[(2 * i) % 20 + (2 * i) // 20 % 2])
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel("message size (KiB)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"ofan-sim: {cfg['workload']} on a k={cfg['k']} {cfg['levels']}-level fat tree, "
        f"{cfg['link_gbps']:g} Gb/s, {data.get('seeds', 1)} seed(s) per point"
    )
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
