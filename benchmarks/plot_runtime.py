#!/usr/bin/env python
"""One PNG per model from runtime_bench.py's JSON: time, TFLOP/s and GB/s against tokens per kernel.

Drawn as lines: the floor ``max(FLOPs / peak, bytes / bandwidth)`` on the time panel, the measured
dense matmul rate (bf16, and fp8 for fp8 layers) on the TFLOP/s panel and the measured copy
bandwidth on the GB/s panel (runtime_bench.py's docstring says how each number is counted).
Renders anywhere matplotlib is installed (no GPU needed).

Usage: ``python benchmarks/plot_runtime.py results.json --out-dir benchmarks/results``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

STYLE = {
    "ours": dict(color="tab:blue", marker="o", lw=2.2),
    "portable": dict(color="tab:gray", marker="x", ls=":"),
    "gemms+act": dict(color="tab:orange", marker="s", ls="--"),
    "gemms": dict(color="tab:green", marker="^", ls="--"),
    "bf16 ours": dict(color="tab:purple", marker="D"),
    "bf16 gemms+act": dict(color="tab:red", marker="v", ls="--"),
    "bf16 gemms": dict(color="tab:brown", marker="<", ls=":"),
}
LABEL = {
    "ours": "our experts",
    "portable": "our experts, plain-torch path",
    "gemms+act": "its two grouped GEMMs + activation",
    "gemms": "its two grouped GEMMs",
    "bf16 ours": "our bf16 experts, same shapes",
    "bf16 gemms+act": "bf16 grouped GEMMs + activation",
    "bf16 gemms": "bf16 grouped GEMMs",
}


def plot_model(model: dict, limits: dict, device: str, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    fig, (ax_t, ax_f, ax_b) = plt.subplots(1, 3, figsize=(17, 5.2))
    kernels = [k for k in STYLE if any(r["kernel"] == k for r in model["rows"])]
    for k in kernels:
        rows = sorted((r for r in model["rows"] if r["kernel"] == k), key=lambda r: r["tokens"])
        t = [r["tokens"] for r in rows]
        kw = dict(STYLE[k], label=LABEL[k], ms=4)
        ax_t.plot(t, [r["ms"] for r in rows], **kw)
        ax_f.plot(t, [r["tflops"] for r in rows], **kw)
        ax_b.plot(t, [r["gbs"] for r in rows], **kw)
    floor = sorted((r for r in model["rows"] if r["kernel"] == "ours"), key=lambda r: r["tokens"])
    ax_t.plot([r["tokens"] for r in floor], [r["floor_ms"] for r in floor], color="black", lw=1, ls="-.", label="floor: max(FLOPs/peak, bytes/bandwidth)")
    ax_f.axhline(limits["bf16_tflops"], color="black", lw=1, ls="-.", label=f"measured bf16 dense matmul {limits['bf16_tflops']:.0f}")
    if model["fp8"]:
        ax_f.axhline(limits["fp8_tflops"], color="black", lw=1, ls=":", label=f"measured fp8 dense matmul {limits['fp8_tflops']:.0f}")
    ax_b.axhline(limits["copy_gbs"], color="black", lw=1, ls="-.", label=f"measured copy bandwidth {limits['copy_gbs']:.0f}")
    ticks = sorted({r["tokens"] for r in model["rows"]})
    for ax, title, unit in ((ax_t, "time per call", "ms"), (ax_f, "compute rate (real rows)", "TFLOP/s"), (ax_b, "memory rate (least bytes)", "GB/s")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("tokens per call")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=7.5, loc="upper left")
    ax_f.legend(fontsize=7.5, loc="lower right")
    ax_b.legend(fontsize=7.5, loc="lower right")
    num = model.get("numerics") or {}
    err = f"; normwise error vs fp32 reference {num['normwise_vs_reference']:.1e} at {num['tokens']} tokens" if "normwise_vs_reference" in num else ""
    fig.suptitle(f"{model['label']} [{model['scheme']}, {model['activation']}] on {device} (CUDA graphs){err}", fontsize=11)
    fig.tight_layout()
    path = out / f"h200_runtime_{model['model']}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


PEER_STYLE = {
    "ours": dict(color="tab:blue", marker="o", lw=2.2, label="ours"),
    "peer": dict(color="tab:red", marker="s", label="vLLM Triton fused_moe (stand-in alignment counted)"),
    "peer w/o align": dict(color="tab:red", marker="x", ls=":", label="vLLM Triton fused_moe without alignment"),
}


def plot_peer(model: dict, limits: dict, device: str, out: Path) -> Path:
    """Ours against vLLM's Triton kernel (runtime_bench.py --peer): time and % of floor against tokens."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_p) = plt.subplots(1, 2, figsize=(13, 4.8))
    ticks = sorted({r["tokens"] for r in model["rows"]})
    for k, kw in PEER_STYLE.items():
        rows = sorted((r for r in model["rows"] if r["kernel"] == k), key=lambda r: r["tokens"])
        if not rows:
            continue
        t = [r["tokens"] for r in rows]
        ax_t.plot(t, [r["ms"] for r in rows], ms=4, **kw)
        ax_p.plot(t, [100 * r["floor_ms"] / r["ms"] for r in rows], ms=4, **kw)
    floor = sorted((r for r in model["rows"] if r["kernel"] == "ours"), key=lambda r: r["tokens"])
    ax_t.plot([r["tokens"] for r in floor], [r["floor_ms"] for r in floor], color="black", lw=1, ls="-.", label="floor: max(FLOPs/peak, bytes/bandwidth)")
    ax_p.axhline(100, color="black", lw=1, ls="-.")
    ax_p.plot([16, 16], [80, 100], color="green", lw=3, alpha=0.5, label="target: >= 80 % at 16 tokens")
    ax_p.plot([2048, max(ticks)], [60, 60], color="green", lw=3, alpha=0.5, label="target: >= 60 % from 2,048 tokens")
    for ax in (ax_t, ax_p):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlabel("tokens per call")
        ax.grid(True, which="both", alpha=0.3)
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    ax_t.set_yscale("log")
    ax_t.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax_t.yaxis.set_minor_formatter(NullFormatter())
    ax_t.set_ylabel("ms per call (CUDA graph replay, best round's median)")
    ax_p.set_ylabel("% of floor")
    ax_p.set_ylim(0, 105)
    ax_t.legend(fontsize=7.5, loc="upper left")
    ax_p.legend(fontsize=7.5, loc="lower right")
    peak = limits["fp8_tflops" if model["fp8"] else "bf16_tflops"]
    fig.suptitle(f"{model['label']} [{model['scheme']}] on {device}: ours vs vLLM 0.33.0 Triton (peak {peak:.0f} TFLOP/s, copy {limits['copy_gbs']:.0f} GB/s, measured)", fontsize=10)
    fig.tight_layout()
    path = out / f"h200_peer_{model['model']}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path)
    parser.add_argument("--out-dir", type=Path, default=Path("."))
    parser.add_argument("--peer", action="store_true", help="the JSON is runtime_bench.py --peer's: draw ours against vLLM's Triton kernel")
    args = parser.parse_args(argv)
    data = json.loads(args.json.read_text())
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for model in data["models"]:
        print((plot_peer if args.peer else plot_model)(model, data["limits"], data["device"], args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
