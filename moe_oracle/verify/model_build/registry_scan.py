"""Which architectures a vLLM release's model registry maps to a module that builds fused-MoE layers.

Reads ``vllm/model_executor/models/registry.py`` of a release tree with ``ast`` (no import): the
``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS`` and ``_SPECULATIVE_DECODING_MODELS`` tables
(architecture -> (module, class)). An architecture counts as MoE when its module's source (or a
module of the same package it imports from ``vllm.model_executor.models``) constructs ``FusedMoE``
/ ``SharedFusedMoE`` / ``FusedMoEFactory`` — a source heuristic, stated as such; whether the release
can *build* each on this CPU machine is what the model-construction tier answers for the configs
it has.

The scan cannot see a wrapper whose language model is chosen at run time: a multimodal or audio
class that builds ``init_vllm_registered_model(hf_config=config.text_config)`` (or
``vllm_config.with_hf_config(config.text_config)``) takes its language model's class from that
sub-config's ``architectures`` (vLLM 0.29.0-0.34.0 ``model_executor/models/utils.py``
``init_vllm_registered_model``, ``config/vllm.py`` ``VllmConfig.with_hf_config``: the sub-config's
``architectures``, else transformers' causal-LM class of its ``model_type``), so whether it is MoE is
a fact of the checkpoint, not of the source (InternVL3.5-30B-A3B is, InternVL3.5-8B is not).
:func:`subconfig_wrappers` lists those classes instead (``--wrappers``); the checkpoint reader
reads them by their language model (:data:`moe_oracle.inputs.checkpoint.architectures.SUBCONFIG_WRAPPERS`).

``python -m moe_oracle.verify.model_build.registry_scan [--wrappers] TREE [TREE ...]`` prints per
release the MoE architectures and their count (or the wrappers).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

__all__ = ["registry_tables", "moe_architectures", "subconfig_wrappers"]

_TABLES = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_SPECULATIVE_DECODING_MODELS")
_MOE_RE = re.compile(r"\b(FusedMoE|SharedFusedMoE|FusedMoEFactory)\s*\(")


def registry_tables(tree: Path) -> dict[str, tuple[str, str, str]]:
    """architecture -> (table, module, class) from the release's registry source."""
    src = (tree / "vllm" / "model_executor" / "models" / "registry.py").read_text()
    out: dict[str, tuple[str, str, str]] = {}
    for node in ast.parse(src).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            name = next((t.id for t in targets if isinstance(t, ast.Name)), None)
            if name in _TABLES and isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Tuple) and len(v.elts) >= 2:
                        mod, cls = (e.value if isinstance(e, ast.Constant) else None for e in v.elts[:2])
                        if isinstance(mod, str) and isinstance(cls, str):
                            out[k.value] = (name, mod, cls)
    return out


def _module_file(tree: Path, module: str) -> Path | None:
    base = tree / "vllm" / "model_executor" / "models"
    candidates = [base / f"{module}.py", base / module / "__init__.py"]
    if module.startswith("vllm."):
        p = tree.joinpath(*module.split("."))
        candidates = [p.with_suffix(".py"), p / "__init__.py", p / "model.py"]
    return next((c for c in candidates if c.is_file()), None)


def _is_moe(tree: Path, path: Path, seen: set[Path]) -> bool:
    if path in seen:
        return False
    seen.add(path)
    text = path.read_text()
    if path.name in ("__init__.py", "model.py") and "models" in path.parts and path.parent.name != "models":
        # A model package (vllm/models/<name>/): every module of it.
        text += "".join(f.read_text() for f in path.parent.rglob("*.py") if f != path)
    if _MOE_RE.search(text):
        return True
    # One level of the model package's own modules it imports from (e.g. a subclass of deepseek_v2).
    for mod in re.findall(r"from vllm\.model_executor\.models\.(\w+) import", text) + re.findall(r"from \.(\w+) import", text):
        dep = _module_file(tree, mod) if not path.parent.name.startswith("models") else (path.parent / f"{mod}.py")
        if dep is not None and dep.is_file() and len(seen) < 6 and _is_moe(tree, dep, seen):
            return True
    return False


def moe_architectures(tree: Path) -> dict[str, tuple[str, str]]:
    """MoE architecture -> (table, module) for the release at ``tree``."""
    out = {}
    for arch, (table, module, _cls) in sorted(registry_tables(tree).items()):
        path = _module_file(tree, module)
        if path is not None and _is_moe(tree, path, set()):
            out[arch] = (table, module)
    return out


def _lm_calls(cls: ast.ClassDef) -> list[str]:
    """How each ``init_vllm_registered_model`` call in ``cls`` names its language model's
    architecture: ``sub:<expr>`` (a sub-config's ``architectures``, or ``architectures=<expr>.architectures``),
    ``fixed:<expr>`` (a literal list), ``top`` (the model's own config)."""
    out = []
    for n in ast.walk(cls):
        if not (isinstance(n, ast.Call) and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) == "init_vllm_registered_model"):
            continue
        kw = {k.arg: k.value for k in n.keywords}
        arch, hf, vc = kw.get("architectures"), kw.get("hf_config"), kw.get("vllm_config")
        if arch is not None:
            expr = ast.unparse(arch)
            out.append(f"sub:{expr.removesuffix('.architectures')}" if expr.endswith(".architectures") else f"fixed:{expr}")
        elif hf is not None:
            out.append(f"sub:{ast.unparse(hf)}")
        elif isinstance(vc, ast.Call) and getattr(vc.func, "attr", None) == "with_hf_config" and vc.args and len(vc.args) == 1 and "architectures" not in {k.arg for k in vc.keywords}:
            out.append(f"sub:{ast.unparse(vc.args[0])}")
        else:
            out.append("top")
    return out


def subconfig_wrappers(tree: Path) -> dict[str, tuple[str, str, str]]:
    """Registered architecture -> (module, class, sub-config expression) for every class (or a base
    class of it in the same module) that builds its language model from a sub-config's
    ``architectures`` (:func:`_lm_calls` ``sub:``)."""
    out = {}
    for arch, (_table, module, cls) in sorted(registry_tables(tree).items()):
        path = _module_file(tree, module)
        if path is None:
            continue
        classes = {c.name: c for c in ast.parse(path.read_text()).body if isinstance(c, ast.ClassDef)}
        todo, seen, calls = [cls], set(), []
        while todo:
            name = todo.pop()
            if name in seen or name not in classes:
                continue
            seen.add(name)
            calls += _lm_calls(classes[name])
            todo += [ast.unparse(b).split(".")[-1] for b in classes[name].bases]
        subs = sorted({c[4:] for c in calls if c.startswith("sub:")})
        if subs:
            out[arch] = (module, cls, ", ".join(subs))
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    wrappers = "--wrappers" in args
    for t in (a for a in args if a != "--wrappers"):
        tree = Path(t)
        if wrappers:
            found = subconfig_wrappers(tree)
            print(f"{tree.name}: {len(found)} classes build their language model from a sub-config's architectures")
            for arch, (module, cls, expr) in found.items():
                print(f"  {arch:55s} {module}:{cls} ({expr})")
            continue
        archs = moe_architectures(tree)
        print(f"{tree.name}: {len(archs)} MoE architectures of {len(registry_tables(tree))} registered")
        for arch, (table, module) in archs.items():
            print(f"  {arch:55s} {table:32s} {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
