"""Our side: the plan ``moe-oracle plan --json`` prints for a :class:`~.corpus.Case`, layer by layer.

The case's inputs go through the one door the CLI uses
(:func:`moe_oracle.inputs.model_deployment.build_model_deployment`, then
:func:`moe_oracle.explain.plan.plan_deployment`) with a ``pip freeze``-style environment file
(every package not listed is absent, as on the vLLM side; those whose copy vLLM's wheel carries are
declared absent too, :func:`without`). The plan's record gives each group's
kind, role, quant keys, selected kernel (its backend as vLLM's enum member name,
:mod:`..backend_names`) and prepare/finalize; the layer's own inputs (experts,
top-k, sizes, routing, activation ...) are read from the group's Decision.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..backend_names import UnknownBackend, vllm_backend_name
from ...core.environment import HOST_TOOLS
from ...core.packages import VENDORED
from ..ours import FLASHINFER_PINS, PACKAGE_NAMES

__all__ = ["our_layers", "plan_argv"]

CUTLASS_DSL_PINS: dict[str, str] = {"0.29.0": "4.6.2", "0.30.0": "4.7.1", "0.31.0": "4.7.1", "0.32.0": "4.8.0", "0.33.0": "4.8.0"}
"""nvidia-cutlass-dsl version each vLLM release pins (its wheel METADATA ``Requires-Dist``)."""


def freeze_text(release: str, packages: list[str]) -> str:
    """The environment file: vLLM ``release``, FlashInfer and the CUTLASS DSL at the versions it
    pins, the others 1.0 (as :mod:`moe_oracle.verify.ours` declares them)."""
    lines = [f"vllm=={release}"]
    for short in packages:
        version = FLASHINFER_PINS.get(release, "0.7.2.post1") if short in ("flashinfer", "flashinfer_cubin") else CUTLASS_DSL_PINS.get(release, "4.8.0") if short == "cutlass" else "1.0"
        lines.append(f"{PACKAGE_NAMES[short]}=={version}")
    return "\n".join(lines) + "\n"


def model_dir(case: dict[str, Any], tmp: Path) -> str:
    """What ``--model`` names for ``case``: its ``config.json``, or, with a paired
    ``hf_quant_config.json``, a directory under ``tmp`` holding both as the vLLM side's worker lays
    them out, so our reader meets the quantization document where vLLM does (beside the config,
    read only when ``config.json`` has no ``quantization_config``: vLLM 0.29.0-0.34.0
    transformers_utils/config.py ``get_config``), not as an explicit override."""
    if not case.get("hf_quant_config"):
        return case["config"]
    d = tmp / "model"
    d.mkdir(exist_ok=True)
    shutil.copyfile(case["config"], d / "config.json")
    shutil.copyfile(case["hf_quant_config"], d / "hf_quant_config.json")
    return str(d)


def plan_inputs(case: dict[str, Any], env_file: Path, model: str) -> Any:
    """The operator's inputs of :func:`plan_argv`, handed to the one door (no CLI in between)."""
    from ...inputs.operator_inputs import OperatorInputs

    dep = case["deployment"]
    return OperatorInputs(model=model, gpu=dep["gpu"], tp=dep["tp"], dp=dep["dp"], pcp=dep.get("pcp", 1), environment=str(env_file),
                          ep=True if dep["ep"] else None, all2all=dep.get("all2all") or None, no_draft=not dep.get("speculative"), tool=tool_flags(case),
                          without=without(case))


def without(case: dict[str, Any]) -> tuple[str, ...]:
    """``--without NAME`` for each package whose copy vLLM's wheel carries
    (:data:`~moe_oracle.core.packages.VENDORED`) and the case leaves out: the vLLM side's stand-ins
    make its module and that copy unimportable alike, which the freeze alone does not say."""
    drawn = {PACKAGE_NAMES[short] for short in case["deployment"].get("packages", [])}
    return tuple(name for name in VENDORED if name not in drawn)


def tool_flags(case: dict[str, Any]) -> tuple[str, ...]:
    """``--tool NAME=yes|no`` for every host tool: the case's tools found, the others not (as the
    vLLM side's lookups answer them)."""
    found = set(case["deployment"].get("tools", ()))
    return tuple(f"{name}={'yes' if name in found else 'no'}" for name in HOST_TOOLS)


def plan_argv(case: dict[str, Any], env_file: Path, model: str) -> list[str]:
    """The ``moe-oracle plan`` command of the case (``model``: :func:`model_dir`)."""
    dep = case["deployment"]
    argv = ["plan", "--model", model, "--gpu", dep["gpu"], "--tp", str(dep["tp"]), "--dp", str(dep["dp"]), "--environment", str(env_file), "--json"]
    if dep.get("pcp", 1) != 1:
        argv += ["--pcp", str(dep["pcp"])]
    if dep["ep"]:
        argv.append("--ep")
    if dep.get("all2all"):
        argv += ["--all2all", dep["all2all"]]
    if not dep.get("speculative"):
        argv.append("--no-draft")
    for flag in tool_flags(case):
        argv += ["--tool", flag]
    for name in without(case):
        argv += ["--without", name]
    return argv


def _upstream_pf() -> dict[str, str]:
    """Our prepare/finalize id -> vLLM class name (``upstream`` of the shipped P/F tables)."""
    import yaml

    from ...core._resources import package_dir

    out: dict[str, str] = {}
    for path in sorted(package_dir().rglob("prepare_finalize/*.yaml")):
        doc = yaml.safe_load(path.read_text()) or {}
        for entry in doc.get("entries", []) or []:
            if "id" in entry and "upstream" in entry:
                out[entry["id"]] = entry["upstream"]
    return out


_METHOD_RE = re.compile(r"\b([A-Z][A-Za-z0-9]*MoEMethod)\b")

_NO_ACTIVATION_KEY = frozenset({"mxfp8"})
"""Quant families whose vLLM selector takes no activation key: vLLM 0.29.0-0.34.0
``P/oracle/mxfp8.py`` ``select_mxfp8_moe_backend(config)``, called so by ``Q/modelopt.py``
``ModelOptMxFp8FusedMoE``; whether activations are quantized is the backend's own (Marlin takes
them unquantized). The compared ``activation_key`` is what the selector is handed (vLLM's side
records none: :data:`.reader._IMPLIED_WEIGHT_KEY` implies a weight key only), so ours is ``None``
there too."""

_BLOCK_OF = {"block_128x128": (128, 128)}
"""Granularity of a block weight key -> the block its vLLM constant names."""


def selector_weight_key(weight: str | None, block: list[int] | None) -> str | None:
    """Our weight key as the selector receives it. A block key whose block the front end changed
    (the plan's ``selector_weight_block``: refined to the TP shard) matches no vLLM constant;
    vLLM's side then reads ``dtype/static/(n, k)`` (:func:`.reader.describe_key`), and so does ours."""
    from ...core.quant import QUANT_KEYS

    key = QUANT_KEYS.get(weight) if weight else None
    native = _BLOCK_OF.get(key.granularity.value) if key is not None else None
    if key is None or native is None or not block or tuple(block) == native:
        return weight
    return f"{key.dtype}/{'static' if key.static else 'dynamic'}/({block[0]}, {block[1]})"


def _backend_member(decision: Any, sel: dict[str, Any], release: str) -> str | None:
    """Our selection as the name of vLLM ``release``'s backend enum member (:mod:`..backend_names`,
    as the selection tier translates it): ``flashinfer_trtllm`` on an MXFP4 layer is
    ``FLASHINFER_TRTLLM_MXFP4_BF16``, a batched Marlin ``BATCHED_MARLIN``."""
    if not sel or not sel.get("kernel"):
        return None
    family = decision.normalized.values.get("quant_family") or ""
    try:
        return vllm_backend_name(family, sel.get("backend") or "", sel["kernel"], decision.shortcut, release=release)
    except UnknownBackend as exc:
        return f"(unknown: {exc})"


def our_layers(case: dict[str, Any], release: str) -> dict[str, Any]:
    """``{"status", "error", "layers": [...], "dense": [...], "plan_argv"}`` for ``case`` under ``release``.

    Each layer: role, index, name and the fields :mod:`.compare` compares, in our vocabulary.
    """
    from ...core.errors import ConfigError
    from ...core.oracle import default_catalog
    from ...explain.plan import plan_deployment
    from ...inputs.model_deployment import build_model_deployment

    pf_names = _upstream_pf()
    with tempfile.TemporaryDirectory() as tmp:
        env_file = Path(tmp) / "freeze.txt"
        env_file.write_text(freeze_text(release, list(case["deployment"].get("packages", []))))
        model = model_dir(case, Path(tmp))
        argv = plan_argv(case, env_file, model)
        catalog = default_catalog()
        try:
            plan = plan_deployment(build_model_deployment(plan_inputs(case, env_file, model), catalog), catalog)
        except ConfigError as exc:
            return {"status": "error", "error": f"exit 2: {exc}"[-800:], "layers": [], "dense": [], "plan_argv": argv}
        except Exception as exc:  # noqa: BLE001 - recorded as our side failing
            return {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:400], "layers": [], "dense": [], "plan_argv": argv}
    record = json.loads(json.dumps(plan.to_dict(), default=str))  # what `moe-oracle plan --json` prints
    layers: list[dict[str, Any]] = []
    dense: list[dict[str, Any]] = []
    for gi, g in enumerate(record["groups"]):
        obj = plan.groups[gi] if plan is not None and gi < len(plan.groups) else None
        if obj is None or obj.decision is None:
            for idx, name in zip(g["layers"], g["names"]):
                dense.append({"role": g["role"], "index": idx, "name": name, "kind": g["kind"], "why": g["why"]})
            continue
        cfg = obj.decision.config
        inputs = {k: v.get("value") if isinstance(v, dict) else v for k, v in obj.decision.to_dict()["inputs"].items()}
        q = g.get("quant") or {}
        sel = g.get("selected") or {}
        adapter = sel.get("adapter") or ""
        evidence = q.get("evidence") or ""
        method = _METHOD_RE.search(evidence)
        normalized = obj.decision.normalized.values
        # GPTQ and AWQ fall back to MoeWNA16Method where Marlin cannot take the layer (vLLM
        # Q/auto_gptq.py, Q/auto_awq.py get_quant_method); our tables decide it (moe_quant_method).
        method_class = "MoeWNA16Method" if normalized.get("moe_quant_method") == "moe_wna16" and q.get("method") in ("gptq", "awq") else (method.group(1) if method else None)
        # The key the selector receives: the method's own (GPTQ/AWQ build it from the bit width and
        # pass zero points apart: core.quant.method_weight_key), as our tables read it (weight_quant).
        weight = normalized.get("weight_quant")
        weight = cfg.quant.weight if weight in (None, "none") else weight
        # vLLM's FusedMoEConfig holds the padded sizes the weights are built with; the plan gives
        # them beside the checkpoint's (layer_sizes, for a group with a selected kernel).
        sizes = g.get("layer_sizes") or {}
        base = {
            "num_experts": cfg.num_experts + cfg.parallel.num_redundant_experts,
            "num_local_experts": inputs.get("num_local_experts"),
            "top_k": cfg.top_k,
            "hidden_size": sizes.get("padded_hidden_size", cfg.hidden_size),
            "intermediate_per_partition": sizes.get("padded_intermediate_size_per_partition", inputs.get("intermediate_size_per_partition")),
            "activation": cfg.activation.value,
            "routing_method": cfg.routing_method.value,
            "correction_bias": bool(cfg.has_correction_bias),
            "has_bias": bool(cfg.has_bias),
            "in_dtype": cfg.in_dtype.value,
            "router_logits_dtype": (cfg.router_logits_dtype or cfg.in_dtype).value,
            "swiglu_alpha": cfg.swiglu_alpha,
            "swiglu_beta": cfg.swiglu_beta,
            "swiglu_limit": cfg.swiglu_limit,
            "situ_beta": cfg.situ_beta,
            "situ_linear_beta": cfg.situ_linear_beta,
            "has_hash_routing": bool(cfg.has_hash_routing),
            "num_expert_group": cfg.num_expert_group,
            "topk_group": cfg.topk_group,
            "weight_key": selector_weight_key(weight, q.get("selector_weight_block")),
            "activation_key": None if normalized.get("quant_family") in _NO_ACTIVATION_KEY else cfg.quant.activation,
            "quant_method": q.get("method"),
            "quant_method_class": method_class,
            "experts_class": adapter.rsplit(":", 1)[-1] if adapter else None,
            "backend": _backend_member(obj.decision, sel, release),
            "prepare_finalize": pf_names.get(sel.get("prepare_finalize") or "", sel.get("prepare_finalize")),
            "excluded_by": q.get("excluded_by") or [],
        }
        for idx, name in zip(g["layers"], g["names"]):
            layers.append({"role": g["role"], "index": idx, "name": name, "kind": g["kind"], **base})
    return {"status": "ok", "error": None, "layers": layers, "dense": dense, "plan_argv": argv, "model_family": record["model"].get("family"), "notes": record.get("notes", [])}
