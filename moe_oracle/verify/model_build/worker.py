"""Worker: one vLLM release builds each case's model on the meta device; its MoE layers are read.

Run inside the differential environment, with the release's tree first on ``PYTHONPATH``::

    python -m moe_oracle.verify.model_build.worker --release 0.33.0 --tree TREE --cases IN.jsonl --out OUT.jsonl

Each input line is a case (:class:`moe_oracle.verify.model_build.corpus.Case` as a dict); each
output line ``{"id", "status": "ok"|"error", "error", "architecture", "num_hidden_layers",
"layers": [...], "draft_status", "draft_error", "seconds"}`` (layers: :func:`.reader.read_layers`).
The last line is ``{"summary": {...}}`` with the import time and the stand-ins' self-check.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

from ...inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does

__all__ = ["main", "build_case"]


def _quiet() -> None:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("TORCHINDUCTOR_DISABLE", "1")
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)


def _model_dir(case: dict[str, Any], root: Path) -> Path:
    """A directory holding the case's ``config.json`` (and ``hf_quant_config.json``): what vLLM reads."""
    d = root / case["id"].replace("/", "_")
    d.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(case["config"], d / "config.json")
    if case.get("hf_quant_config"):
        shutil.copyfile(case["hf_quant_config"], d / "hf_quant_config.json")
    return d


def _engine_args(case: dict[str, Any], model_dir: Path) -> Any:
    from vllm.engine.arg_utils import EngineArgs

    dep = case["deployment"]
    kwargs: dict[str, Any] = dict(
        model=str(model_dir),
        skip_tokenizer_init=True,
        load_format="dummy",
        tensor_parallel_size=dep["tp"],
        data_parallel_size=dep["dp"],
        enable_expert_parallel=dep["ep"],
        distributed_executor_backend="mp",
        trust_remote_code=False,
    )
    fields = EngineArgs.__dataclass_fields__
    if dep.get("pcp", 1) != 1:
        kwargs["prefill_context_parallel_size"] = dep["pcp"]  # EngineArgs has it in 0.29.0-0.34.0
    if dep.get("all2all") and "all2all_backend" in fields:
        kwargs["all2all_backend"] = dep["all2all"]
    if dep.get("moe_backend", "auto") != "auto" and "moe_backend" in fields:
        kwargs["moe_backend"] = dep["moe_backend"]
    if dep.get("speculative"):
        kwargs["speculative_config"] = dict(dep["speculative"])
    if dep.get("max_model_len"):
        kwargs["max_model_len"] = dep["max_model_len"]
    return EngineArgs(**kwargs)


def build_case(sim: Any, case: dict[str, Any], root: Path) -> dict[str, Any]:
    """Build ``case``'s model (target, and the draft under a speculative config) and read its layers."""
    import torch

    from ..cases import Deployment
    from . import standins
    from .reader import read_layers

    dep = case["deployment"]
    t0 = time.perf_counter()
    out: dict[str, Any] = {"id": case["id"], "status": "ok", "error": None, "layers": [], "draft_status": None, "draft_error": None}
    sim.apply(Deployment(platform=dep["platform"], capability=dep.get("capability"), arch=dep.get("arch"), packages=tuple(sorted(dep.get("packages", ()))), tools=tuple(sorted(dep.get("tools", ()))), env=tuple(sorted(dep.get("env", {}).items()))))
    standins.reload_all2all_utils()
    standins.install_groups(dep["tp"], dep["dp"], dep["ep"], pcp=dep.get("pcp", 1))
    stage = "config"
    try:
        from vllm.config import CompilationMode, set_current_vllm_config
        from vllm.model_executor.model_loader.utils import initialize_model
        from vllm.utils.torch_utils import set_default_torch_dtype

        vc = _engine_args(case, _model_dir(case, root)).create_engine_config()
        object.__setattr__(vc.compilation_config, "mode", CompilationMode.NONE)  # standins 4
        text = vc.model_config.hf_text_config
        out["architecture"] = (vc.model_config.architectures or [None])[0]
        out["num_hidden_layers"] = getattr(text, "num_hidden_layers", None)
        out["quantization"] = vc.model_config.quantization
        out["quant_config_class"] = type(vc.quant_config).__name__ if vc.quant_config is not None else None
        out["all2all_backend"] = getattr(vc.parallel_config, "all2all_backend", None)
        stage = "target"
        # As BaseModelLoader.load_model: the model dtype is the default dtype while building.
        with set_default_torch_dtype(vc.model_config.dtype), set_current_vllm_config(vc), torch.device("meta"), standins.cuda_to_meta(), standins.cuda_runtime():
            model = initialize_model(vllm_config=vc)
            out["model_class"] = type(model).__name__
            out["layers"] = read_layers(model, "target")
            if case.get("plugin"):
                out["plugin"] = _plugin(model, vc, root)
        del model
        spec = getattr(vc, "speculative_config", None)
        if spec is not None and getattr(spec, "draft_model_config", None) is not None:
            stage = "draft"
            try:
                with set_default_torch_dtype(spec.draft_model_config.dtype), set_current_vllm_config(vc), torch.device("meta"), standins.cuda_to_meta(), standins.cuda_runtime():
                    draft = initialize_model(vllm_config=vc, model_config=spec.draft_model_config)
                    out["draft_class"] = type(draft).__name__
                    out["layers"] += read_layers(draft, "draft")
                out["draft_status"] = "ok"
            except Exception as exc:  # noqa: BLE001 - vLLM refusing or the tier failing (recorded)
                out["draft_status"] = "error"
                out["draft_error"] = f"{type(exc).__name__}: {exc}"[:400]
                out["draft_trace"] = traceback.format_exc()[-1500:]
    except Exception as exc:  # noqa: BLE001 - recorded with the stage
        out["status"] = "error"
        # vLLM says only "failed to be inspected"; the inspection's own exception (standins 9) comes first.
        cause = f" (inspection raised {standins.INSPECTION_ERRORS[-1][:300]})" if "failed to be inspected" in str(exc) and standins.INSPECTION_ERRORS else ""
        out["error"] = f"{stage}: {type(exc).__name__}{cause}: {exc}"[:900]
        out["trace"] = traceback.format_exc()[-2000:]
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _plugin(model: Any, vllm_config: Any, root: Path) -> dict[str, Any]:
    """vLLM's own plugin loader (``vllm.plugins.load_general_plugins``) finds the ``moe_oracle``
    entry point (declared by a dist-info on ``sys.path``, as ``pip install`` writes it) and calls
    it; then the observer reads ``model`` (built on the meta device: no weights were processed)."""
    import importlib

    from .. import vllm_plugin

    info = root / "moe_oracle_plugin_check-0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: moe-oracle-plugin-check\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[vllm.general_plugins]\nmoe_oracle = moe_oracle.verify.vllm_plugin:register\n")
    sys.path.insert(0, str(root))
    plugins = importlib.import_module("vllm.plugins")
    plugins.plugins_loaded = False
    plugins.load_general_plugins()
    loader = importlib.import_module("vllm.model_executor.model_loader.base_loader").BaseModelLoader
    record = vllm_plugin.observe(model, vllm_config)
    return {"wrapped": bool(getattr(loader.load_model, "_moe_oracle_observer", False)), "groups": record["groups"] if record else None}


def _isolated(sim: Any, case: dict[str, Any], root: Path) -> dict[str, Any]:
    """Build ``case`` in a forked child of this (already imported) process, so that what one
    model's construction leaves behind in vLLM's module state (caches, workspace, lazily bound
    globals) cannot change the next case. The child writes its record to a file and exits."""
    result = root / f"{case['id'].replace('/', '_')}.result.json"
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            result.write_text(json.dumps(build_case(sim, case, root), default=str))
        except BaseException as exc:  # noqa: BLE001
            result.write_text(json.dumps({"id": case["id"], "status": "error", "error": f"worker: {type(exc).__name__}: {exc}"[:600], "layers": []}))
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if result.exists():
        return json.loads(result.read_text())
    return {"id": case["id"], "status": "error", "error": f"worker child died (wait status {status})", "layers": []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.model_build.worker", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", required=True)
    parser.add_argument("--tree", type=user_path)
    parser.add_argument("--cases", type=user_path, required=True)
    parser.add_argument("--out", type=user_path, required=True)
    args = parser.parse_args(argv)
    _quiet()
    t0 = time.perf_counter()
    from ..vllm_sim import Simulation
    from . import standins

    standins.patch_stub_values()
    sim = Simulation(args.release, args.tree)
    standins.install_gpu_ops(lambda: sim._platform)
    standins.install_registry_inprocess()
    standins.patch_triton_placeholder()
    standins.install_host_packages()
    standins.init_workspace()
    standins.skip_router_gemm_warmup()
    standins.block_flashinfer_comm()
    problems = standins.self_check()
    from .reader import install_selector_recorder

    if install_selector_recorder() == 0:
        problems.append("no select_*_moe_backend function found to record the quant keys with")
    t_import = time.perf_counter() - t0
    cases = [json.loads(line) for line in args.cases.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="moe_oracle_models_") as tmp, args.out.open("w") as fh:
        if problems:
            fh.write(json.dumps({"summary": {"release": args.release, "self_check": problems}}) + "\n")
            return 3
        for case in cases:
            fh.write(json.dumps(_isolated(sim, case, Path(tmp)), default=str) + "\n")
            fh.flush()
        fh.write(json.dumps({"summary": {"release": args.release, "cases": len(cases), "import_s": round(t_import, 2), "total_s": round(time.perf_counter() - t0, 2), "self_check": problems}}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
