"""List the MoE architectures one vLLM release registers, from its source tree (no import).

An architecture is MoE when the file of its model class builds a fused-MoE layer
(``FusedMoE``, ``SharedFusedMoE``, ``FusedMoEFactory``) or imports a class whose name says
MoE / experts / sparse block from a file that does; the import chain is followed to a fixed
point. A registered class is MoE too when it subclasses, or builds as its ``self.model`` /
language model (a direct call, ``init_vllm_registered_model(architectures=[...])``, or the
configuration class its ``config: XConfig`` annotation names, whose text config derives from a
MoE architecture's transformers config), a MoE model class; a subclass that builds its own
``self.model`` is judged by that, and a class whose ``Moe``-named sibling is registered
(``Qwen3_5ForCausalLM``) is not followed. Read from ``vllm/model_executor/models/registry.py`` (the ``_*_MODELS`` tables) and
the model files beside it or under ``vllm/models/<pkg>``.

A class that builds whatever language model its sub-config's ``architectures`` names
(``init_vllm_registered_model(hf_config=config.text_config)``: InternVL, LLaVA, Step-3 VL, ...) is
MoE or dense by checkpoint, not by source, so it is not listed here;
``python -m moe_oracle.verify.model_build.registry_scan --wrappers`` lists those classes
(``moe_oracle.inputs.checkpoint.architectures.SUBCONFIG_WRAPPERS``).

Usage: ``python -m moe_oracle.tools.vllm_moe_archs SRC_ROOT`` (SRC_ROOT holds ``vllm/``);
prints one ``Architecture<TAB>module<TAB>table`` line per MoE architecture.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

__all__ = ["moe_architectures", "registered_architectures"]

_MOE_NAME = re.compile(r"MoE|Moe|Expert|Sparse")
_BUILDS = re.compile(r"\b(?:Shared)?FusedMoE(?:Factory)?\s*\(|\bFusedMoEFactory\b|\bSharedFusedMoE\b")
_MODEL_CLASS = re.compile(r"(?:ForCausalLM|ForConditionalGeneration|Model|DecoderLayer)$")
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


def _imports(path: Path, root: Path, tree: ast.Module | None = None) -> list[tuple[Path, str]]:
    """(file, name) of each ``from X import name`` of ``path`` that resolves to a file under ``root``
    (``tree``: ``path`` already parsed)."""
    tree = tree if tree is not None else _tree(path)
    if tree is None:
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


def _tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _names(path: Path, root: Path) -> tuple[dict[str, ast.ClassDef], dict[str, tuple[Path | None, str, str]]]:
    """The classes ``path`` defines, and each imported name -> (file or None, name, module)."""
    tree = _tree(path)
    if tree is None:
        return {}, {}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    resolved = {alias: f for f, alias in _imports(path, root, tree)}
    imported: dict[str, tuple[Path | None, str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imported[alias.asname or alias.name] = (resolved.get(alias.name), alias.name, node.module or "")
    # A module-level alias (``_Base = MistralLarge3ForCausalLM`` outside ``if TYPE_CHECKING``).
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Name) and node.value.id in imported and node.targets[0].id not in classes):
            imported[node.targets[0].id] = imported[node.value.id]
    return classes, imported


def _model_file(path: Path, root: Path) -> bool:
    """A model file (not the shared interfaces, adapters and helpers beside them)."""
    rel = path.relative_to(root).parts
    return (rel[:3] == ("vllm", "model_executor", "models") or rel[:2] == ("vllm", "models")) and not (
        path.stem.startswith("interfaces") or path.stem in ("utils", "adapters", "registry", "__init__"))


def _called(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and (isinstance(node.func, ast.Name) and node.func.id == name
                                           or isinstance(node.func, ast.Attribute) and node.func.attr == name)


def moe_architectures(root: Path) -> dict[str, tuple[str, str, str]]:
    """The registered architectures whose model builds a fused-MoE layer (see module doc)."""
    builds: dict[Path, bool] = {}
    # Each file is parsed once per scan: the class walks below ask for the same files many times.
    names = functools.cache(lambda path: _names(path, root))
    registered = registered_architectures(root)
    by_file = {(f, cls): arch for arch, (mod, cls, _) in registered.items() for f in _module_files(root, mod)}
    # A registered class with a registered MoE-named sibling (Qwen3_5ForCausalLM beside
    # Qwen3_5MoeForCausalLM) is the dense one: a wrapper building it is not followed into it.
    classes_registered = {cls for _, cls, _ in registered.values()}
    dense = {re.sub(r"Mo[eE]", "", c, count=1) for c in classes_registered if re.search(r"Mo[eE]", c)} & classes_registered

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

    def config_is_moe(path: Path, name: str, seen: frozenset[tuple[Path, str]]) -> bool:
        # A configuration class whose text config is (a subclass of) the transformers config
        # of a MoE architecture: ``<Stem>Config`` -> registered ``<Stem>ForCausalLM``.
        classes, imported = names(path)
        if (path, name) in seen:
            return False
        seen = seen | {(path, name)}
        if name not in classes:
            file, orig, module = imported.get(name, (None, name, ""))
            if module.split(".")[0] == "transformers" and orig.endswith("Config"):
                arch = orig[: -len("Config")] + "ForCausalLM"
                return arch in registered and arch_is_moe(arch, frozenset())
            return file is not None and config_is_moe(file, orig, seen)
        node = classes[name]
        if any(isinstance(b, ast.Name) and config_is_moe(path, b.id, seen) for b in node.bases):
            return True
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) and isinstance(sub.value.func, ast.Name):
                targets = [t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "") for t in sub.targets]
                if any(t in ("text_config", "language_config") for t in targets) and sub.value.func.id != name:
                    if config_is_moe(path, sub.value.func.id, seen):
                        return True
        return False

    def class_is_moe(path: Path, name: str, seen: frozenset[tuple[Path, str]]) -> bool:
        # The class subclasses, or builds as its language model, a class that is MoE: a model
        # class of a file that builds a fused-MoE layer, a registered MoE architecture, or the
        # text model a MoE configuration class names (followed to a fixed point).
        if (path, name) in seen:
            return False
        seen = seen | {(path, name)}
        arch = by_file.get((path, name))
        if arch is not None and arch_is_moe(arch, seen):
            return True
        if _MODEL_CLASS.search(name) and _model_file(path, root) and is_moe(path):
            return True
        classes, imported = names(path)

        def resolve(ref: str) -> tuple[Path, str] | None:
            if ref in classes:
                return path, ref
            file, orig, _ = imported.get(ref, (None, ref, ""))
            return (file, orig) if file is not None else None

        node = classes.get(name)
        if node is None:
            return False
        # A subclass that builds its own ``self.model`` (an EAGLE draft over a MoE target class)
        # is judged by what it builds, not by the class it inherits from.
        own_model = any(isinstance(t, ast.Attribute) and t.attr == "model" and isinstance(t.value, ast.Name) and t.value.id == "self"
                        for sub in ast.walk(node) if isinstance(sub, (ast.Assign, ast.AnnAssign))
                        for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target]))
        for base in node.bases if not own_model else ():
            target = resolve(base.id) if isinstance(base, ast.Name) else None
            if target is not None and target != (path, name) and class_is_moe(*target, seen):
                return True
        for sub in ast.walk(node):
            if _called(sub, "init_vllm_registered_model"):
                kw = {k.arg: k.value for k in sub.keywords}
                archs = kw.get("architectures")
                if isinstance(archs, ast.List):
                    if any(isinstance(e, ast.Constant) and e.value in registered and arch_is_moe(e.value, seen) for e in archs.elts):
                        return True
                elif archs is None and "hf_config" in kw:
                    for ann in ast.walk(node):
                        if isinstance(ann, ast.AnnAssign) and isinstance(ann.annotation, ast.Name) and ann.annotation.id.endswith("Config"):
                            if config_is_moe(path, ann.annotation.id, frozenset()):
                                return True
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and _MODEL_CLASS.search(sub.func.id):
                target = resolve(sub.func.id)
                if target is not None and target != (path, name) and target[1] not in dense and class_is_moe(*target, seen):
                    return True
        return False

    def arch_is_moe(arch: str, seen: frozenset[tuple[Path, str]]) -> bool:
        mod, cls, _ = registered[arch]
        files = _module_files(root, mod)
        if any(is_moe(f) for f in files):
            return True
        return any(class_is_moe(f, cls, seen) for f in files if cls in names(f)[0] and (f, cls) not in seen)

    return {arch: spec for arch, spec in registered.items() if arch_is_moe(arch, frozenset())}


if __name__ == "__main__":
    for a, (m, c, t) in sorted(moe_architectures(Path(sys.argv[1])).items()):
        print(f"{a}\t{m}\t{t}")
