#!/usr/bin/env python3
"""Plots an `ofan-sim paper --figure F` result (JSON): CCT increase and max
queue against the figure's x axis, one line per LB scheme, one row of panels
per facet value (e.g. per CCA), the claims under the plot.

usage: plot_paper.py FIGURE.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LOG_X = {"hosts", "k", "msg_bytes", "packet_bytes"}


def verdict(claim: dict) -> str:
    """holds | does not hold | not computed; JSON from before `verdict` has `holds` only."""
    if "verdict" in claim:
        return str(claim["verdict"])
    return "holds" if claim["holds"] else "does not hold"


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        data = json.load(f)
    rows, x, facets = data["rows"], data["x"], data.get("facets", [])
    facet_values = list(dict.fromkeys(tuple(r.get(k) for k in facets) for r in rows))
    lbs = list(dict.fromkeys(r["lb"] for r in rows))
    xs_all = list(dict.fromkeys(r.get(x) for r in rows))
    categorical = not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs_all)
    fig, axes = plt.subplots(len(facet_values), 2, figsize=(12, 3.8 * len(facet_values) + 1.2),
                             squeeze=False)
    markers = "osD^v<>ph*"
    for fi, fv in enumerate(facet_values):
        sub = [r for r in rows if tuple(r.get(k) for k in facets) == fv]
        for ai, (key, title, scale) in enumerate(
                [("cct_inflation", "CCT increase over the bound (%)", 100.0),
                 ("queue_max_pkts", "max queue (data packets)", 1.0)]):
            ax = axes[fi][ai]
            for i, lb in enumerate(lbs):
                pts = [r for r in sub if r["lb"] == lb]
                if not pts:
                    continue
                if categorical:
                    xv = [xs_all.index(r.get(x)) for r in pts]
                else:
                    pts.sort(key=lambda r: r.get(x))
                    xv = [r.get(x) for r in pts]
                yv = [r[key] * scale for r in pts]
                err = [r.get(key + "_sem", 0.0) * scale for r in pts]
                ax.errorbar(xv, yv, yerr=err, marker=markers[i % len(markers)], capsize=3,
                            label=lb)
            if categorical:
                ax.set_xticks(range(len(xs_all)))
                ax.set_xticklabels([str(v) for v in xs_all])
            elif x in LOG_X:
                ax.set_xscale("log", base=2)
            ax.set_xlabel(x)
            label = ", ".join(f"{k}={v}" for k, v in zip(facets, fv))
            ax.set_title(f"{title}{' — ' + label if label else ''}", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    claims = "\n".join(f"[{verdict(c)}] {c['text']}" for c in data["claims"])
    fig.suptitle(f"Fig. {data['figure']}: {data['title']} ({data['size']} size, "
                 f"{data['seeds']} seed(s))", fontsize=10)
    fig.text(0.01, 0.005, claims, fontsize=7, va="bottom", wrap=True)
    fig.tight_layout(rect=(0, 0.04 + 0.02 * len(data["claims"]), 1, 0.96))
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
