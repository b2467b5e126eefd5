"""List the MoE architectures one vLLM release registers, from its source tree (no import).

An architecture is MoE when the file of its model class builds a fused-MoE layer
(``FusedMoE``, ``SharedFusedMoE``, ``FusedMoEFactory``) or imports a class whose name says
MoE / experts / sparse block from a file that does; the import chain is followed to a fixed
point. Read from ``vllm/model_executor/models/registry.py`` (the ``_*_MODELS`` tables) and
the model files beside it or under ``vllm/models/<pkg>``.

Usage: ``python -m moe_oracle.tools.vllm_moe_archs SRC_ROOT`` (SRC_ROOT holds ``vllm/``);
prints one ``Architecture<TAB>module<TAB>table`` line per MoE architecture.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

__all__ = ["moe_architectures", "registered_architectures"]

_MOE_NAME = re.compile(r"MoE|Moe|Expert|Sparse")
_BUILDS = re.compile(r"\b(?:Shared)?FusedMoE(?:Factory)?\s*\(|\bFusedMoEFactory\b|\bSharedFusedMoE\b")
_TABLES = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_SPECULATIVE_DECODING_MODELS")


def registered_architectures(root: Path) -> dict[str, tuple[str, str, str]]:
    """Architecture -> (module, class, table) from the generation, multimodal and draft tables.

    Raises:
        FileNotFoundError: ``root`` has no ``vllm/model_executor/models/registry.py``.
    """
    reg = root / "vllm" / "model_executor" / "models" / "registry.py"
    tree = ast.parse(reg.read_text())
    out: dict[str, tuple[str, str, str]] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        if not isinstance(target, ast.Name) or target.id not in _TABLES or not isinstance(node.value, ast.Dict):
            continue
        for k, v in zip(node.value.keys, node.value.values):
            if isinstance(k, ast.Constant) and isinstance(v, ast.Tuple) and len(v.elts) >= 2:
                mod, cls = (e.value if isinstance(e, ast.Constant) else None for e in v.elts[:2])
                if isinstance(mod, str) and isinstance(cls, str):
                    out.setdefault(k.value, (mod, cls, target.id))
    return out


def _module_files(root: Path, module: str) -> list[Path]:
    if module.startswith("vllm."):
        base = root.joinpath(*module.split("."))
        if base.with_suffix(".py").exists():
            return [base.with_suffix(".py")]
        return sorted(base.rglob("*.py")) if base.is_dir() else []
    f = root / "vllm" / "model_executor" / "models" / f"{module}.py"
    return [f] if f.exists() else []


def _imports(path: Path, root: Path) -> list[tuple[Path, str]]:
    try:
        tree = ast.parse(path.read_text())
    except (SyntaxError, UnicodeDecodeError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None or isinstance(node, ast.ImportFrom) and node.level:
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                target = base.joinpath(*(node.module or "").split(".")) if node.module else base
            elif (node.module or "").startswith("vllm."):
                target = root.joinpath(*node.module.split("."))
            else:
                continue
            for alias in node.names:
                cand = [target.with_suffix(".py"), target / "__init__.py", target / f"{alias.name}.py"]
                f = next((c for c in cand if c.exists()), None)
                if f is not None:
                    out.append((f, alias.name))
    return out


def moe_architectures(root: Path) -> dict[str, tuple[str, str, str]]:
    """The registered architectures whose model builds a fused-MoE layer (see module doc)."""
    builds: dict[Path, bool] = {}

    def is_moe(path: Path, seen: frozenset[Path] = frozenset()) -> bool:
        if path in builds:
            return builds[path]
        if path in seen:
            return False
        text = path.read_text(errors="replace")
        hit = bool(_BUILDS.search(text)) and "import" in text
        if not hit:
            hit = any(_MOE_NAME.search(name) and is_moe(f, seen | {path}) for f, name in _imports(path, root) if f != path)
        builds[path] = hit
        return hit

    out = {}
    for arch, (mod, cls, table) in registered_architectures(root).items():
        if any(is_moe(f) for f in _module_files(root, mod)):
            out[arch] = (mod, cls, table)
    return out


if __name__ == "__main__":
    for a, (m, c, t) in sorted(moe_architectures(Path(sys.argv[1])).items()):
        print(f"{a}\t{m}\t{t}")
