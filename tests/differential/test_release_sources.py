"""Facts stated in our files, checked against each vLLM release's source tree (no import of vLLM).

The differential environment (``$MOE_ORACLE_VLLM_ENV``, built by ``python -m
moe_oracle.verify.setup_env --dir DIR``) holds every modelled release's tree under
``src/<release>/vllm``. These facts are read there (statically with ``ast``, but for the last):

* the prepare/finalize pairing facts of tests/unit/test_pairing_facts.py: each class is
  constructed (directly or through its factory) in that release's ``maybe_make_prepare_finalize``,
  and its interface and activation format are what its class body declares;
* ``engine_facts/vllm-release-values.yaml`` is what tools/vllm_release_values.py reads from the
  release (quantization methods, KV-cache dtypes, environment variable names, each platform
  class's ``supported_quantization`` and ``Platform.verify_quantization``'s message);
* moe_oracle/speculative.py's speculative methods are vllm/config/speculative.py's
  ``MTPModelTypes`` and ``SpeculativeMethod`` literals;
* ``engine_facts/vllm-<release>.yaml`` (the ``vllm serve`` flags) is what tools/vllm_cli_facts.py
  generates from the release's own parser (this one imports the release, in the environment's
  interpreter, with the platform stubbed to CPU).

Deselected by default (marker ``differential``); CI runs them with the rest of the tier.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from moe_oracle.verify.run import RELEASES
from tests.unit.test_pairing_facts import BAT, FACTS, MOD, MONO, SRC, STD

pytestmark = pytest.mark.differential

ROOT = Path(__file__).resolve().parents[2]


def _tree(release: str) -> Path:
    """``$MOE_ORACLE_VLLM_ENV/src/<release>`` (skips when the variable is unset; a set variable
    without the tree is a broken environment: fails)."""
    directory = os.environ.get("MOE_ORACLE_VLLM_ENV")
    if not directory:
        pytest.skip("MOE_ORACLE_VLLM_ENV is not set: build it with `python -m moe_oracle.verify.setup_env --dir DIR`")
    tree = Path(directory) / "src" / release
    if not (tree / "vllm").is_dir():
        pytest.fail(f"MOE_ORACLE_VLLM_ENV={directory} has no vLLM {release} source tree ({tree / 'vllm'})")
    return tree


def _function_names(path: Path, function: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}


def _class_shape(pf_dir: Path, cls: str) -> tuple[str, str]:
    """(interface, activation format) a P/F class declares: its base class and activation_format()."""
    for path in sorted(pf_dir.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                bases = " ".join(ast.unparse(b) for b in node.bases)
                interface = MONO if "Monolithic" in bases else MOD
                fmt = STD
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "activation_format":
                        fmt = BAT if "BatchedExperts" in ast.unparse(item) else STD
                return interface, fmt
    raise AssertionError(f"class {cls} not found under {pf_dir}")


@pytest.mark.parametrize("release", RELEASES)
def test_the_facts_hold_in_the_release_source(release):
    tree = _tree(release)
    fused = tree / "vllm/model_executor/layers/fused_moe"
    names = _function_names(fused / "all2all_utils.py", "maybe_make_prepare_finalize")
    version = Version(release)
    for fact in FACTS:
        if version not in SpecifierSet(fact.releases) or fact.upstream is None:
            continue
        assert fact.via in names, f"vLLM {release}: {fact.via} is not called in {SRC}"
        assert _class_shape(fused / "prepare_finalize", fact.upstream) == (fact.interface, fact.format), f"vLLM {release}: {fact.upstream}"
    # And the release has no all2all branch the facts do not name (besides passthrough, 0.32.0+,
    # which binds FlashInfer MoE-EP kernels and is not in our all2all vocabulary).
    branches = {n for n in names if n.startswith("use_") and n.endswith("_kernels")} - {"use_all2all_kernels"}
    stated = {f.source.split(": ", 1)[1].split(" ")[0].removeprefix("moe.") for f in FACTS if version in SpecifierSet(f.releases) and f.source.startswith(SRC + ": moe.")}
    assert branches - {"use_ag_rs_all2all_kernels"} <= stated, sorted(branches - stated)
    if version >= Version("0.32.0"):
        assert "use_passthrough_all2all" in names


@pytest.mark.parametrize("release", RELEASES)
def test_release_values_match_the_release_source(release):
    from moe_oracle.serve import release_values

    tree = _tree(release)
    spec = importlib.util.spec_from_file_location("vllm_release_values", ROOT / "tools" / "vllm_release_values.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    from moe_oracle.serve import platform_quantization
    from moe_oracle.tables import safe_load_generated

    read = tool.release_values(tree)
    stored = safe_load_generated((ROOT / "moe_oracle" / "engine_facts" / "vllm-release-values.yaml").read_text(encoding="utf-8"))["releases"][release]
    assert read == stored
    # And the package reads it back as stored (the list kinds, and every platform's gate).
    assert {k: tuple(v) for k, v in read.items() if isinstance(v, list)} == dict(release_values(release))
    gates = platform_quantization(release)
    assert sorted(gates) == sorted(read["platforms"])
    for module, facts in read["platforms"].items():
        gate = gates[module]
        assert (gate.qualname, gate.device_name, gate.supported, gate.out_of_tree, gate.verify_override) == (
            facts["class"], facts.get("device_name"), tuple(facts["supported_quantization"]) if "supported_quantization" in facts else None,
            facts.get("out_of_tree"), facts.get("verify_quantization_override"))
        assert gate.template == read["platform_refusal"]


def _literal_strings(tree: ast.Module, name: str) -> set[str]:
    """The strings of a module-level ``Literal[...]`` alias, following the aliases it names."""
    aliases = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    aliases |= {node.target.id: node.value for node in tree.body if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None}

    def walk(node: ast.expr) -> set[str]:
        if isinstance(node, ast.Subscript):
            return walk(node.slice)
        if isinstance(node, (ast.Tuple, ast.List)):
            return set().union(*(walk(e) for e in node.elts))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.Name) and node.id in aliases:
            return walk(aliases[node.id])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return walk(node.left) | walk(node.right)
        raise AssertionError(f"{name}: cannot read {ast.unparse(node)}")

    return walk(aliases[name])


@pytest.mark.parametrize("release", RELEASES)
def test_speculative_methods_match_the_release_source(release):
    """moe_oracle/speculative.py's method lists are vllm/config/speculative.py's
    ``MTPModelTypes`` and ``SpeculativeMethod`` of that release."""
    from moe_oracle.speculative import speculative_methods

    tree = ast.parse((_tree(release) / "vllm/config/speculative.py").read_text(encoding="utf-8"))
    mtp, other = speculative_methods(release)
    assert _literal_strings(tree, "MTPModelTypes") == set(mtp)
    assert _literal_strings(tree, "SpeculativeMethod") == set(mtp) | set(other)


@pytest.mark.parametrize("release", RELEASES)
def test_serve_facts_match_the_releases_own_parser(release, tmp_path):
    """Each release's serve facts file, regenerated from that release's ``make_arg_parser``."""
    from moe_oracle.serve import engine_facts
    from moe_oracle.tables import safe_load
    from moe_oracle.verify.run import VllmEnv

    tree = _tree(release)
    env = VllmEnv.from_dir(tree.parent.parent)
    out = tmp_path / f"vllm-{release}.yaml"
    subprocess.run([str(env.python), str(ROOT / "tools" / "vllm_cli_facts.py"), str(out)], check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, timeout=600)
    assert safe_load(out.read_text(encoding="utf-8")) == dict(engine_facts(release))
