"""moe-oracle inside a real vLLM process: the ``vllm.general_plugins`` entry point ``moe_oracle``.

Installed with the ``vllm-plugin`` extra (``pip install 'moe-oracle[vllm-plugin]'``), vLLM's
``load_general_plugins`` (vllm/plugins/__init__.py, 0.29.0-0.34.0) calls :func:`register` in
every process it starts. ``register`` wraps ``BaseModelLoader.load_model``
(vllm/model_executor/model_loader/base_loader.py): once a model is loaded, :func:`observe` reads
every routed-experts layer vLLM built (the experts class and prepare/finalize of the
``FusedMoEKernel`` its quant method holds, after ``process_weights_after_loading``) and plans the
same model and deployment with moe-oracle through the one door
(:func:`moe_oracle.inputs.model_deployment.build_model_deployment`, this process's packages and
device probed). It logs one line per distinct group of layers: what vLLM built and moe-oracle's
one-line reason, as a warning where the two differ (with the ``moe-oracle plan`` command line to
put in a bug report).

Environment variables (read when a model is loaded):

* ``MOE_ORACLE_PLUGIN=0`` turns the observer off.
* ``MOE_ORACLE_PLAN_JSON=PATH`` also writes the record (:func:`observation_record`) as JSON
  (``{rank}`` in the path is replaced by the process's global rank, when vLLM knows it).

Nothing here raises into vLLM: a failure to read or plan is logged as a warning and the load
goes on.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

__all__ = ["compare_layers", "observation_record", "observe", "register", "vllm_layers"]

logger = logging.getLogger("moe_oracle.vllm_plugin")

_MARK = "_moe_oracle_observer"
_ROUTED = ("vllm.model_executor.layers.fused_moe", "vllm.model_executor.layers.fused_moe.routed_experts")


def register() -> None:
    """The plugin's entry: wrap ``BaseModelLoader.load_model`` once per process (vLLM may call
    plugins more than once; the wrapper is installed once)."""
    if os.environ.get("MOE_ORACLE_PLUGIN", "1") in ("0", "false", "off"):
        return
    from vllm.model_executor.model_loader import base_loader

    cls = base_loader.BaseModelLoader
    original = cls.load_model
    if getattr(original, _MARK, False):
        return

    def load_model(self: Any, vllm_config: Any, model_config: Any, *args: Any, **kwargs: Any) -> Any:
        model = original(self, vllm_config, model_config, *args, **kwargs)
        observe(model, vllm_config)
        return model

    setattr(load_model, _MARK, True)
    load_model.__doc__ = original.__doc__
    cls.load_model = load_model


def _routed_class() -> type:
    import importlib

    for name in _ROUTED:
        mod = importlib.import_module(name)
        found = getattr(mod, "RoutedExperts", None)
        if found is not None:
            return found
    raise ImportError("vLLM has no RoutedExperts class where 0.29.0-0.34.0 define it")


def _class_name(obj: Any) -> str | None:
    if obj is None:
        return None
    return obj.__name__ if isinstance(obj, type) else type(obj).__name__


def vllm_layers(model: Any) -> list[dict[str, Any]]:
    """What vLLM built for each routed-experts layer of ``model`` (decoder order): ``prefix``,
    ``index`` (the integer after ``layers.``, else the prefix's last integer), ``quant_method``
    (class name), ``experts`` and ``prepare_finalize`` (class names of the quant method's
    ``moe_kernel``; before weights are processed, the ``experts_cls`` the method selected and
    ``None``)."""
    import re

    routed = _routed_class()
    out = []
    for name, mod in model.named_modules():
        if not isinstance(mod, routed):
            continue
        method = getattr(mod, "quant_method", None)
        kernel = getattr(method, "moe_kernel", None)
        experts = getattr(kernel, "fused_experts", None) if kernel is not None else None
        pf = getattr(kernel, "prepare_finalize", None) if kernel is not None else None
        prefix = getattr(mod, "layer_name", name)
        m = re.search(r"layers\.(\d+)", prefix) or re.search(r"(\d+)(?!.*\d)", prefix)
        out.append({
            "prefix": prefix,
            "index": int(m.group(1)) if m else None,
            "quant_method": _class_name(method),
            "experts": _class_name(experts) or _class_name(getattr(method, "experts_cls", None)),
            "prepare_finalize": _class_name(pf),
        })
    return out


def _device() -> dict[str, Any]:
    """This process's device as vLLM's current platform reports it (platform, and the SM of a CUDA device)."""
    from vllm.platforms import current_platform

    for name in ("cuda", "rocm", "xpu", "cpu"):
        if getattr(current_platform, f"is_{name}")():
            out: dict[str, Any] = {"platform": name}
            if name == "cuda":
                cap = current_platform.get_device_capability()
                if cap is not None:
                    out["sm"] = cap.to_int() if hasattr(cap, "to_int") else cap[0] * 10 + cap[1]
            return out
    return {}


def _inputs_from(vllm_config: Any, config_path: Path) -> Any:
    """The operator's inputs this vLLM process was started with, for the one door: the model's
    config, vLLM's parallel config (its expert placement strategy included) and kernel config, the device its platform reports, this process's
    packages and variables (probed)."""
    from ..inputs.operator_inputs import OperatorInputs

    par = vllm_config.parallel_config
    eplb = getattr(par, "eplb_config", None)
    kernel = getattr(vllm_config, "kernel_config", None)
    backend = getattr(kernel, "moe_backend", None)
    all2all = getattr(par, "all2all_backend", None)
    return OperatorInputs(
        model=str(config_path),
        tp=par.tensor_parallel_size,
        dp=par.data_parallel_size,
        ep=bool(par.enable_expert_parallel),
        all2all=str(all2all) if all2all and par.enable_expert_parallel else None,
        eplb=bool(getattr(par, "enable_eplb", False)) or None,
        redundant_experts=getattr(eplb, "num_redundant_experts", None) or None,
        moe_backend=None if backend in (None, "auto") else str(backend),
        expert_placement=getattr(par, "expert_placement_strategy", None),
        no_draft=getattr(vllm_config, "speculative_config", None) is None,
        probe=True,
        **_device(),
    )


def _plan(vllm_config: Any) -> Any:
    """moe-oracle's plan of the model and deployment ``vllm_config`` describes."""
    from ..core.oracle import default_catalog
    from ..explain.plan import plan_deployment
    from ..inputs.model_deployment import build_model_deployment

    hf = vllm_config.model_config.hf_config
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(hf.to_json_string() if hasattr(hf, "to_json_string") else json.dumps(dict(hf)))
        catalog = default_catalog()
        deployment = build_model_deployment(_inputs_from(vllm_config, path), catalog)
        return plan_deployment(deployment, catalog)


def compare_layers(built: list[dict[str, Any]], plan_groups: list[dict[str, Any]], upstream: Callable[[str | None], str | None]) -> list[dict[str, Any]]:
    """Groups of layers, each with what vLLM built and what moe-oracle selects for them.

    ``plan_groups``: ``[{"layers": [indices], "kernel": id, "prepare_finalize": id, "line": text}]``
    (moe-oracle's MoE groups); ``upstream``: our kernel or prepare/finalize id -> vLLM's class name.
    Layers vLLM built that the plan does not place are their own group with ``moe_oracle`` ``None``.
    Returns ``[{"layers", "vllm": {experts, prepare_finalize}, "moe_oracle": {...} | None, "agree"}]``.
    """
    ours_by_index = {i: g for g in plan_groups for i in g["layers"]}
    groups: dict[tuple, dict[str, Any]] = {}
    for layer in built:
        g = ours_by_index.get(layer["index"])
        theirs = (layer["experts"], layer["prepare_finalize"])
        key = (theirs, id(g) if g is not None else None)
        row = groups.get(key)
        if row is None:
            mine = None
            agree = None
            if g is not None:
                mine = {"kernel": g["kernel"], "experts": upstream(g["kernel"]), "prepare_finalize": upstream(g["prepare_finalize"]), "line": g["line"]}
                agree = mine["experts"] == layer["experts"] and (layer["prepare_finalize"] is None or mine["prepare_finalize"] == layer["prepare_finalize"])
            row = groups[key] = {"layers": [], "vllm": {"experts": theirs[0], "prepare_finalize": theirs[1]}, "moe_oracle": mine, "agree": agree}
        row["layers"].append(layer["index"] if layer["index"] is not None else layer["prefix"])
    return list(groups.values())


def observation_record(model: Any, vllm_config: Any) -> dict[str, Any]:
    """The observer's record: ``{"vllm_layers", "groups" (see :func:`compare_layers`), "plan"
    (moe-oracle's plan ``to_dict()``), "command"}``."""
    from ..core.oracle import default_catalog

    built = vllm_layers(model)
    plan = _plan(vllm_config)
    catalog = default_catalog()

    def upstream(item: str | None) -> str | None:
        if item is None:
            return None
        for lookup in (catalog.experts_by_id, catalog.prepare_finalize_by_id):
            try:
                return lookup(item).upstream
            except KeyError:
                continue
        return item

    groups = [
        {"layers": [layer.spec.index for layer in g.layers], "kernel": g.decision.kernel, "prepare_finalize": g.decision.prepare_finalize, "line": g.decision.select_line()}
        for g in plan.moe_groups() if g.decision is not None
    ]
    return {"vllm_layers": built, "groups": compare_layers(built, groups, upstream), "plan": plan.to_dict(), "command": _command(vllm_config)}


def _command(vllm_config: Any) -> str:
    par = vllm_config.parallel_config
    words = ["moe-oracle", "plan", "--model", str(vllm_config.model_config.model), "--probe", "--tp", str(par.tensor_parallel_size), "--dp", str(par.data_parallel_size)]
    if par.enable_expert_parallel:
        words += ["--ep", "--all2all", str(par.all2all_backend)]
    return " ".join(words)


def _ranges(items: list[Any]) -> str:
    ints = sorted(i for i in items if isinstance(i, int))
    spans, start = [], None
    for a, b in zip([None] + ints, ints + [None]):
        if start is None:
            start = b
        elif b is None or b != a + 1:
            spans.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ", ".join(spans + [str(i) for i in items if not isinstance(i, int)])


def observe(model: Any, vllm_config: Any, *, log: logging.Logger = logger, environ: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """Log, once per distinct group of MoE layers, what vLLM built and moe-oracle's answer (a
    warning where they differ), and write the record where ``MOE_ORACLE_PLAN_JSON`` says.
    Returns the record, or ``None`` when reading or planning failed (logged, never raised)."""
    try:
        record = observation_record(model, vllm_config)
    except Exception as exc:  # noqa: BLE001 - a plugin must never stop vLLM's start
        log.warning("moe-oracle: could not compare this model's MoE layers (%s: %s)", type(exc).__name__, exc)
        return None
    for g in record["groups"]:
        where = f"layers {_ranges(g['layers'])}"
        theirs = f"{g['vllm']['experts']} + {g['vllm']['prepare_finalize'] or '(prepare/finalize not built yet)'}"
        mine = g["moe_oracle"]
        if mine is None:
            log.warning("moe-oracle: %s: vLLM built %s; moe-oracle's plan has no MoE layer there (report it with: %s)", where, theirs, record["command"])
        elif g["agree"]:
            log.info("moe-oracle: %s: vLLM built %s; moe-oracle agrees: %s", where, theirs, mine["line"])
        else:
            log.warning("moe-oracle: %s: vLLM built %s; moe-oracle expected %s + %s: %s (report it with: %s)", where, theirs, mine["experts"], mine["prepare_finalize"], mine["line"], record["command"])
    target = environ.get("MOE_ORACLE_PLAN_JSON")
    if target:
        rank = os.environ.get("RANK", "0")
        Path(target.replace("{rank}", rank)).write_text(json.dumps(record, indent=2, default=str))
    return record
