"""The selection core imports neither torch nor the runtime (docs/architecture.md, HELPERS standards).

Core: every module under ``moe_oracle/`` except ``runtime/``, ``kernels/*.py``,
``prepare_finalize/*.py`` and ``verify/`` (the differential harness, a tool the CLI may load;
it is not the runtime, so it is not blocked, but torch is, wherever it is imported from). Two tests: a subprocess imports every core module
(and runs a selection, an explanation and the CLI) with torch and the runtime made unimportable;
a source scan finds lazy imports that an import alone would not execute.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import moe_oracle

PACKAGE = Path(moe_oracle.__file__).resolve().parent
RUNTIME_PREFIXES = ("moe_oracle.runtime", "moe_oracle.kernels.", "moe_oracle.prepare_finalize.")

# Deliberate, documented exceptions of the source scan: the CLI's `run` command builds on the
# runtime (a front end, imported only inside that command), and probe_device asks torch for the
# local GPU (optional: without torch the device is this host's CPU).
ALLOWED_LAZY = {("cli/run.py", "moe_oracle.runtime"), ("core/environment.py", "torch")}


def core_modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("runtime", "verify") or (rel.parts[0] in ("kernels", "prepare_finalize") and rel.name != "__init__.py"):
            continue
        if rel.name == "__main__.py":  # runs the CLI on import (python -m moe_oracle)
            continue
        parts = ["moe_oracle", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


_PROBE = r"""
import importlib, json, sys

BLOCKED = ("torch",) + tuple(json.loads(sys.argv[2]))

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch.") or any(name.startswith(b) if b.endswith(".") else (name == b or name.startswith(b + ".")) for b in BLOCKED[1:]):
            raise ImportError(f"core isolation: {name} is blocked")
        return None

sys.modules["torch"] = None  # `import torch` raises ImportError even if a finder is bypassed
sys.meta_path.insert(0, Blocker())
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)

from moe_oracle import Device, MoEConfig, Oracle
from moe_oracle.cli import main

cfg = MoEConfig(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=Device("cuda", capability=90), lora=True)
for view in ("engine", "runtime"):
    for policy in ("faithful", "safe"):
        d = Oracle.default(view=view, policy=policy).explain(cfg)
        d.to_dict(); d.render_text(show_all=True); d.select_line()
assert main(["select", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--package", "vllm==0.31.0"]) == 0
assert main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "B200", "--view", "runtime", "--policy", "safe", "--json"]) == 0
loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.") or m.startswith(BLOCKED[1:]))
print("LOADED " + json.dumps([m for m in loaded if sys.modules.get(m) is not None]))
"""


def test_core_modules_import_and_select_without_torch_or_the_runtime():
    modules = core_modules()
    assert {"moe_oracle.core.engine", "moe_oracle.core.decision", "moe_oracle.core.compile", "moe_oracle.core.compile.link", "moe_oracle.core.catalog", "moe_oracle.core.versions", "moe_oracle.cli"} <= set(modules)
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(modules), json.dumps(list(RUNTIME_PREFIXES))], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("LOADED "))
    assert json.loads(line[len("LOADED "):]) == []


def _imports(tree: ast.AST, module: str) -> set[str]:
    """Absolute names of every import statement in ``tree`` (lazy ones inside functions included)."""
    package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else module
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def test_no_core_source_imports_torch_or_the_runtime_even_lazily():
    offenders = []
    for module in core_modules():
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
        name = module if path.name != "__init__.py" else module + ".__init__"
        for imported in _imports(ast.parse(path.read_text(encoding="utf-8")), name):
            bad = imported == "torch" or imported.startswith("torch.") or imported.startswith(RUNTIME_PREFIXES)
            allowed = any(path.relative_to(PACKAGE).as_posix() == f and (imported == p or imported.startswith(p + ".")) for f, p in ALLOWED_LAZY)
            if bad and not allowed:
                offenders.append(f"{module}: {imported}")
    assert offenders == []


def test_the_scan_sees_a_lazy_runtime_import(tmp_path):
    # The scan must catch what the old Decision.make_kernel did: a runtime import inside a method.
    tree = ast.parse("def make_kernel(self):\n    from ..runtime.build import make_kernel\n    return make_kernel(self)\n")
    assert "moe_oracle.runtime.build" in _imports(tree, "moe_oracle.core.decision")
