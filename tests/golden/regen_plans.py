"""Golden whole-model plans: build them, and regenerate the kernel snapshots.

``python -m tests.golden.regen_plans`` rewrites ``tests/golden/plans/snapshots/*.json``
(the selected kernel per layer group for every shipped config under two deployments).
Review the diff: a table change moves winners here; the hand-checked layer groups in
``hand_checked.yaml`` must not move.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from moe_oracle.inputs.checkpoint import Checkpoint, read_checkpoint
from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.hf import load_hf_config
from moe_oracle.inputs.models import quant_config_beside, resolve_model_path
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.explain.plan import Plan, build_plan

HERE = Path(__file__).parent / "plans"
HAND: dict[str, Any] = yaml.safe_load((HERE / "hand_checked.yaml").read_text(encoding="utf-8"))
MODELS = sorted(k for k in HAND if k != "placements")
DEPLOYMENTS = {
    "H200__tp8": ("H200", {"tp_size": 8}),
    "B200__dp8_ep_ll": ("B200", {"dp_size": 8, "use_ep": True, "all2all_backend": "deepep_low_latency"}),
}


def checkpoint(model: str) -> Checkpoint:
    """The shipped config of a golden case (with its explicit hf_quant_config, if any)."""
    entry = HAND.get(model, {})
    path = resolve_model_path(entry.get("model", model))
    override = load_hf_config(resolve_model_path(entry["hf_quant_config"])) if "hf_quant_config" in entry else None
    beside = quant_config_beside(path)
    return read_checkpoint(load_hf_config(path), file=path.name, beside=load_hf_config(beside) if beside else None, override=override)


def plan(model: str, deployment: str, oracle: Oracle | None = None, **kw: Any) -> Plan:
    gpu, par = DEPLOYMENTS[deployment]
    oracle = oracle or Oracle(default_catalog(), Environment())
    return build_plan(checkpoint(model), oracle, device=lookup_hardware(gpu).device, parallel=ParallelConfig(**par), **kw)


def snapshot(p: Plan) -> list[dict[str, Any]]:
    """What a table change may move: the kernel per group (the layers are hand-checked)."""
    out = []
    for g in p.groups:
        sel = g.decision.selected if g.decision is not None else None
        out.append({
            "layers": [layer.spec.name for layer in g.layers][:3] + (["..."] if len(g.layers) > 3 else []),
            "count": len(g.layers),
            "kind": g.kind,
            "role": g.role,
            "quant": g.first.quant.label if g.first.quant else None,
            "kernel": sel.kernel if sel else None,
            "prepare_finalize": sel.prepare_finalize if sel else None,
            "ranks_agree": g.ranks_agree,
        })
    return out


def snapshots(deployment: str) -> dict[str, Any]:
    oracle = Oracle(default_catalog(), Environment())
    return {model: snapshot(plan(model, deployment, oracle)) for model in MODELS}


def snapshot_path(deployment: str) -> Path:
    return HERE / "snapshots" / f"{deployment}.json"


def main(argv: list[str] | None = None) -> int:
    for deployment in DEPLOYMENTS:
        path = snapshot_path(deployment)
        path.write_text(json.dumps(snapshots(deployment), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
