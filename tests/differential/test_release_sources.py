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
* moe_oracle/refusals.py's EPLB platforms are the condition vllm/config/parallel.py raises on, and
  what moe_oracle reads of prefill context parallelism (EPLB's rank count, the EP group, the
  all2all kernels, 0.29.0's refusal of PCP with DP) is that release's code;
* moe_oracle/speculative.py's speculative methods are vllm/config/speculative.py's
  ``MTPModelTypes`` and ``SpeculativeMethod`` literals;
* moe_oracle/checkpoint/releases.py's version-ranged checkpoint facts hold exactly for the
  releases their ranges admit (each read from the function that decides it), and the literals
  the checkpoint reader copies (B12X codec contracts, DeepSeek-V4's claimed model types, the
  model_type vLLM gives a config.json without one by architecture) are the release's;
* the tuned config file the issue-23 peer benchmark looks up (benchmarks/vllm_peer.py
  ``config_file_name``) is the one vLLM 0.33.0's ``get_config_file_name`` names, run from the tree
  with the device name stubbed;
* architectures.py's ``SUBCONFIG_WRAPPERS`` are the registered classes that build their language
  model from a sub-config's ``architectures`` (``registry_scan.subconfig_wrappers``);
* ``engine_facts/vllm-<release>.yaml`` (the ``vllm serve`` flags) is what tools/vllm_cli_facts.py
  generates from the release's own parser (this one imports the release, in the environment's
  interpreter, with the platform stubbed to CPU).

Deselected by default (marker ``differential``); CI runs them with the rest of the tier.
"""

from __future__ import annotations

import ast
import re
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from moe_oracle.verify.run import RELEASES
from tests.unit.test_pairing_facts import BAT, FACTS, MOD, MONO, PAD, SRC, STD

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
                        body = ast.unparse(item)
                        fmt = BAT if "BatchedExperts" in body else PAD if "PaddedStandard" in body else STD
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
        interface, produced = _class_shape(fused / "prepare_finalize", fact.upstream)
        # The experts' format must take what the P/F produces: the same format, or from 0.34.0
        # PaddedStandard experts on a Standard P/F (FusedMoEActivationFormat.is_superset).
        assert interface == fact.interface and (produced == fact.format or (fact.format == PAD and produced == STD)), f"vLLM {release}: {fact.upstream} ({interface}, {produced}) for {fact.interface} {fact.format} experts"
    # And the release has no all2all branch the facts do not name (besides passthrough, 0.32.0+,
    # which binds FlashInfer MoE-EP kernels and is not in our all2all vocabulary).
    branches = {n for n in names if n.startswith("use_") and n.endswith("_kernels")} - {"use_all2all_kernels"}
    stated = {f.source.split(": ", 1)[1].split(" ")[0].removeprefix("moe.") for f in FACTS if version in SpecifierSet(f.releases) and f.source.startswith(SRC + ": moe.")}
    # Not stated: allgather_reducescatter (the naive DP/EP facts name its factory instead).
    unstated = {"use_ag_rs_all2all_kernels"}
    assert branches - unstated <= stated, sorted(branches - stated)
    if version >= Version("0.32.0"):
        assert "use_passthrough_all2all" in names


@pytest.mark.parametrize("release", RELEASES)
def test_release_values_match_the_release_source(release):
    from moe_oracle.inputs.release_facts import release_values

    tree = _tree(release)
    spec = importlib.util.spec_from_file_location("vllm_release_values", ROOT / "tools" / "vllm_release_values.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    from moe_oracle.inputs.release_facts import platform_quantization
    from moe_oracle.core.tables import safe_load_generated

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


# current_platform methods in the EPLB platform condition -> the platforms each admits
# (vllm/platforms/interface.py: is_cuda_alike is CUDA or ROCm).
_PLATFORM_TESTS = {"is_cuda_alike": ("cuda", "rocm"), "is_cuda": ("cuda",), "is_rocm": ("rocm",), "is_xpu": ("xpu",)}


@pytest.mark.parametrize("release", RELEASES)
def test_eplb_platforms_match_the_release_source(release):
    """refusals.EPLB_PLATFORMS is the platform condition of the release's
    ``if self.enable_eplb:`` block in vllm/config/parallel.py (its first nested ``if``)."""
    from moe_oracle.core.refusals import eplb_platforms

    tree = ast.parse((_tree(release) / "vllm/config/parallel.py").read_text(encoding="utf-8"))
    # 0.34.0 has a second ``if self.enable_eplb:`` (compute_eplb_num_redundant_experts) with no nested if.
    (block,) = [n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "self.enable_eplb" and any(isinstance(m, ast.If) for m in n.body)]
    condition = next(n for n in block.body if isinstance(n, ast.If)).test
    called = {n.func.attr for n in ast.walk(condition) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and ast.unparse(n.func.value) == "current_platform"}
    assert called and called <= set(_PLATFORM_TESTS), f"vLLM {release}: cannot read the EPLB platform condition {ast.unparse(condition)!r}"
    assert set(eplb_platforms(release)) == {p for name in called for p in _PLATFORM_TESTS[name]}, ast.unparse(condition)


@pytest.mark.parametrize("release", RELEASES)
def test_pcp_facts_match_the_release_source(release):
    """What moe_oracle reads of prefill context parallelism is the release's code: EPLB needs
    ``tensor_parallel_size * prefill_context_parallel_size * data_parallel_size > 1``
    (vllm/config/parallel.py, core/refusals.py), ``FusedMoEParallelConfig.make`` turns EP on over
    ``dp_size_ * pcp_size_ * tp_size_`` and the all2all kernels on with ``pcp_size > 1`` (P/config.py,
    core/normalize.py), and PCP with DP is refused exactly in refusals.PCP_REFUSES_DP."""
    from moe_oracle.core.refusals import PCP_REFUSES_DP

    parallel = (_tree(release) / "vllm/config/parallel.py").read_text(encoding="utf-8")
    tree = ast.parse(parallel)
    (block,) = [n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "self.enable_eplb" and any(isinstance(m, ast.If) for m in n.body)]
    tests = [ast.unparse(n.test) for n in ast.walk(block) if isinstance(n, ast.If)]
    assert "self.tensor_parallel_size * self.prefill_context_parallel_size * self.data_parallel_size <= 1" in tests, tests
    refuses = any(isinstance(n, ast.If) and ast.unparse(n.test) == "pcp > 1 and self.data_parallel_size > 1" for n in ast.walk(tree))
    assert refuses is (Version(release) in SpecifierSet(PCP_REFUSES_DP)) and (refuses is ("PCP does not support data parallelism yet." in parallel))
    config = ast.parse((_tree(release) / "vllm/model_executor/layers/fused_moe/config.py").read_text(encoding="utf-8"))
    assigns = {ast.unparse(n.targets[0]): ast.unparse(n.value) for n in ast.walk(config) if isinstance(n, ast.Assign) and len(n.targets) == 1}
    assert assigns["use_ep"] == "dp_size_ * pcp_size_ * tp_size_ > 1 and vllm_parallel_config.enable_expert_parallel"
    kernels = next(n for n in ast.walk(config) if isinstance(n, ast.FunctionDef) and n.name == "use_all2all_kernels")
    assert ast.unparse(kernels.body[-1].value) == "self.use_ep and (self.dp_size > 1 or self.pcp_size > 1 or self.is_sequence_parallel)"


@pytest.mark.parametrize("release", RELEASES)
def test_speculative_methods_match_the_release_source(release):
    """moe_oracle/speculative.py's method lists are vllm/config/speculative.py's
    ``MTPModelTypes`` and ``SpeculativeMethod`` of that release."""
    from moe_oracle.inputs.speculative import speculative_methods

    tree = ast.parse((_tree(release) / "vllm/config/speculative.py").read_text(encoding="utf-8"))
    mtp, other = speculative_methods(release)
    assert _literal_strings(tree, "MTPModelTypes") == set(mtp)
    assert _literal_strings(tree, "SpeculativeMethod") == set(mtp) | set(other)


@pytest.mark.parametrize("release", RELEASES)
def test_the_methods_that_need_a_draft_model_are_the_releases(release):
    """inputs/speculative._NEEDS_DRAFT_MODEL (breakit23 finding 5): before 0.34.0 the model-less
    branch of ``SpeculativeConfig.__post_init__`` defaults a draft only for the methods it names and
    raises for the rest; from 0.34.0 the raising ``default_model`` is
    ``DraftModelSpeculatorConfig``'s, inherited by the classes of exactly these methods."""
    from moe_oracle.inputs.speculative import _NEEDS_DRAFT_MODEL, speculative_methods

    message = "num_speculative_tokens was provided but without speculative model."
    tree = _tree(release) / "vllm"
    mtp, other = speculative_methods(release)
    needs = {m for m in _NEEDS_DRAFT_MODEL if m in other}
    if Version(release) < Version("0.34.0"):
        source = (tree / "config/speculative.py").read_text(encoding="utf-8")
        assert message in source
        branch = source[source.index("if self.model is None and self.num_speculative_tokens is not None:"):source.index(message)]
        handled = set(re.findall(r"self\.method (?:==|in) \(?\"([a-z_0-9]+)\"", branch)) | set(re.findall(r"\"([a-z_0-9]+)\"", " ".join(re.findall(r"self\.method in \(([^)]*)\)", branch))))
        assert handled and not needs & handled, (sorted(handled), sorted(needs))
        assert "draft_model" in needs and needs == other - handled, (sorted(needs), sorted(other - handled))
    else:
        spec_decode = tree / "v1/worker/gpu/spec_decode"
        assert message in (spec_decode / "speculator_config.py").read_text(encoding="utf-8")
        raising = {"DraftModelSpeculatorConfig"}
        found: dict[str, str] = {}
        for path in sorted(spec_decode.rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef):
                    bases = {ast.unparse(b) for b in node.bases}
                    method = next((ast.literal_eval(a.value) for a in node.body if isinstance(a, ast.Assign) and any(getattr(t, "id", None) == "base_method" for t in a.targets)), None)
                    overrides = any(isinstance(f, ast.FunctionDef) and f.name == "default_model" for f in node.body)
                    if bases & raising and not overrides:
                        raising.add(node.name)
                    if method is not None:
                        found[method] = node.name
        assert {m for m, cls in found.items() if cls in raising} == needs, (found, sorted(raising))


@pytest.mark.parametrize("release", RELEASES)
def test_serve_facts_match_the_releases_own_parser(release, tmp_path):
    """Each release's serve facts file, regenerated from that release's ``make_arg_parser``."""
    from moe_oracle.inputs.release_facts import engine_facts
    from moe_oracle.core.tables import safe_load
    from moe_oracle.verify.run import VllmEnv

    tree = _tree(release)
    env = VllmEnv.from_dir(tree.parent.parent)
    out = tmp_path / f"vllm-{release}.yaml"
    subprocess.run([str(env.python), str(ROOT / "tools" / "vllm_cli_facts.py"), str(out)], check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, timeout=600)
    assert safe_load(out.read_text(encoding="utf-8")) == dict(engine_facts(release))


def _definition(path: Path, qualname: str) -> ast.AST | None:
    """The ``def``/``class`` at ``qualname`` (``Class.method``) in ``path``; ``None`` when the file or
    the definition is absent."""
    if not path.is_file():
        return None
    node: ast.AST = ast.parse(path.read_text(encoding="utf-8"))
    for part in qualname.split("."):
        node = next((n for n in ast.iter_child_nodes(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None)  # type: ignore[assignment]
        if node is None:
            return None
    return node


def _code(path: Path, qualname: str) -> str:
    """The definition's code as ``ast.unparse`` spells it (no comments or docstring layout); ``""`` when absent."""
    node = _definition(path, qualname)
    return ast.unparse(node) if node is not None else ""


_Q = "vllm/model_executor/layers/quantization"


def _checkpoint_fact_holds(tree: Path, fact: str) -> bool:
    """Whether the checkpoint fact ``fact`` (moe_oracle/checkpoint/releases.py FACTS) holds in the
    release at ``tree``, read from its source."""
    q = tree / _Q
    if fact == "ct_actorder_refused":
        code = _code(q / "compressed_tensors/compressed_tensors.py", "CompressedTensorsConfig._quantization_scheme_map_from_config")
        return "actorder" in code and "no longer supported" in code
    if fact == "gptq_desc_act_refused":
        fn = _code(q / "utils/gptq_utils.py", "normalize_and_validate_gptq_desc_act")
        return ("no longer supported" in fn and "normalize_and_validate_gptq_desc_act" in _code(q / "auto_gptq.py", "AutoGPTQConfig.__init__")
                and "normalize_and_validate_gptq_desc_act" in _code(q / "moe_wna16.py", "MoeWNA16Config.__init__"))
    ct_moe = q / "compressed_tensors/compressed_tensors_moe/compressed_tensors_moe.py"
    if fact == "ct_w4a8_mxfp4_method":
        return "_is_mxfp4_w4a8_fp8" in _code(ct_moe, "CompressedTensorsMoEMethod.get_moe_method")
    if fact == "ct_checkpoint_proj_names":
        return "ckpt_gate_proj_name" in _code(ct_moe, "CompressedTensorsMoEMethod.get_moe_method")
    if fact == "modelopt_flat_exclude_modules":
        node = _definition(q / "modelopt.py", "ModelOptQuantConfigBase.from_config")
        assert node is not None
        return any(isinstance(n, ast.Call) and ast.unparse(n.func) == "config.get" and n.args and ast.unparse(n.args[0]) == "'exclude_modules'" for n in ast.walk(node))
    if fact == "modelopt_legacy_mixed_precision":
        return "'MIXED_PRECISION'" in _code(tree / "vllm/transformers_utils/model_arch_config_convertor.py", "ModelArchConfigConvertorBase._normalize_quantization_config")
    if fact == "modelopt_mixed_block_fp8_moe":
        return "_BLOCK_FP8_MOE_ALGOS" in _code(q / "modelopt.py", "ModelOptMixedPrecisionConfig.get_quant_method")
    if fact == "modelopt_mixed_b12x_codecs":
        return "B12X_BLOCK_CODECS" in _code(q / "modelopt.py", "ModelOptMixedPrecisionConfig.get_quant_method")
    if fact == "quark_quant_key_dispatch":
        return _definition(q / "quark/quark.py", "QuarkConfig.get_quant_method_target") is not None
    if fact == "quark_w4a16_int4_moe":
        return "QuarkW4A16Int4MoEMethod" in _code(q / "quark/quark_moe.py", "QuarkMoEMethod.get_moe_method_target")
    if fact == "quark_mxfp8_moe":
        return "QuarkW8A8Mxfp8MoEMethod" in _code(q / "quark/quark_moe.py", "QuarkMoEMethod.get_moe_method_target")
    if fact == "deepseek_v4_claims_quark_mxfp4":
        return "_is_quark_mxfp4_ocp" in _code(tree / "vllm/models/deepseek_v4/quant_config.py", "DeepseekV4FP8Config.override_quantization_method")
    if fact == "deepseek_v41_model":
        return (tree / "vllm/models/deepseek_v41").is_dir() and "'vllm.models.deepseek_v41'" in ast.unparse(ast.parse((tree / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8")))
    if fact == "deepseek_v4_modelopt_ignore":
        v41 = tree / "vllm/models/deepseek_v41/quant_config.py"
        picked = "DeepseekV41FP8Config" in _code(q / "__init__.py", "get_quantization_config")
        return picked and "_modelopt_ignore" in _code(v41, "DeepseekV4FP8Config.from_config") and "_is_nvfp4_expert_layer" in _code(v41, "DeepseekV4FP8Config.get_quant_method")
    if fact == "deepseek_v4_mxfp4_activation_key":
        return "Mxfp4MoEMethod(layer.moe_config, activation_key=kMxfp8Dynamic)" in _code(tree / "vllm/models/deepseek_v4/quant_config.py", "DeepseekV4FP8Config.get_quant_method")
    if fact == "routing_minimax2_any_scale":
        node = _definition(tree / "vllm/model_executor/layers/fused_moe/config.py", "get_routing_method_type")
        assert isinstance(node, ast.FunctionDef)
        return "routed_scaling_factor" not in {a.arg for a in node.args.args + node.args.kwonlyargs}
    if fact == "expert_substitution":
        return "make_expert_substitution" in ast.unparse(ast.parse((tree / "vllm/model_executor/layers/fused_moe/layer.py").read_text(encoding="utf-8")))
    if fact == "gemma4_moe_by_num_experts":
        node = _definition(tree / "vllm/model_executor/models/gemma4.py", "Gemma4DecoderLayer.__init__")
        assert node is not None
        (value,) = [n.value for n in ast.walk(node) if isinstance(n, ast.Assign) and any(ast.unparse(t) == "self.enable_moe_block" for t in n.targets)]
        return "num_experts" in ast.unparse(value)
    if fact == "step3p5_transformers_config":
        return 'step3p5="Step3p7TextConfig"' in (tree / "vllm/transformers_utils/config.py").read_text(encoding="utf-8") and _definition(tree / "vllm/model_executor/models/step3p5.py", "_is_moe_layer") is not None
    if fact == "glm5_next_transformers_config":
        # Registered, and no config class of vLLM's own (0.30.0-0.31.0 shipped configs/glm5_next.py).
        registered = "Glm5Next" in (tree / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8")
        return registered and not any((tree / "vllm/transformers_utils/configs").glob("glm5_next*.py"))
    if fact == "laguna_renormalize_always":
        return "renormalize=True" in _code(tree / "vllm/model_executor/models/laguna.py", "LagunaMoE.__init__")
    if fact == "w4afp8_method":
        return (q / "w4afp8.py").is_file() and "CompressedTensorsW4A8Fp8MoEMethod" in _code(q / "w4afp8.py", "W4AFP8Config.get_quant_method")
    if fact == "lut_b_method":
        shorthands = tree / "vllm/config/quantization.py"
        online = q / "online/base.py"
        return (shorthands.is_file() and '"lut_b_moe"' in shorthands.read_text(encoding="utf-8")
                and online.is_file() and "kLutBStatic: LutBOnlineMoEMethod" in online.read_text(encoding="utf-8"))
    if fact == "model_type_by_architecture":
        return "_ARCHITECTURE_TO_MODEL_TYPE.get(architectures[0])" in _code(tree / "vllm/transformers_utils/config.py", "HFConfigParser.parse")
    if fact == "beam_vllm_config":
        # vLLM's own Beam model and config class; before them transformers' Beam runs on the Transformers backend
        registry = (tree / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8")
        return '"BeamForCausalLM"' in registry and (tree / "vllm/transformers_utils/configs/beam.py").is_file() and (tree / "vllm/models/beam").is_dir()
    if fact == "zaya_native_model":
        registry = (tree / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8")
        return '"ZayaForCausalLM"' in registry and (tree / "vllm/model_executor/models/zaya.py").is_file()
    raise AssertionError(f"no source reading for checkpoint fact {fact!r}: add one")


@pytest.mark.parametrize("release", RELEASES)
def test_checkpoint_facts_match_the_release_source(release):
    """moe_oracle/checkpoint/releases.py FACTS: each version-ranged fact holds for ``release``
    exactly when its range admits it, read from the release's source."""
    from moe_oracle.inputs.checkpoint.releases import FACTS as CHECKPOINT_FACTS
    from moe_oracle.inputs.checkpoint.releases import ReaderRelease

    tree = _tree(release)
    wrong = {fact: f"{spec.engine} says {ReaderRelease.of(release).holds(fact)}" for fact, spec in CHECKPOINT_FACTS.items()
             if _checkpoint_fact_holds(tree, fact) != ReaderRelease.of(release).holds(fact)}
    assert not wrong, f"vLLM {release}: {wrong}"


@pytest.mark.parametrize("release", RELEASES)
def test_checkpoint_constants_match_the_release_source(release):
    """The literals the checkpoint reader copies: B12X codec contracts (vllm/utils/b12x.py, where
    the release has them), the model types DeepSeek-V4's FP8 config claims and the model_type by
    architecture of a config.json without one (transformers_utils/config.py, where the release has it)."""
    from moe_oracle.inputs.checkpoint import quant_formats as qf
    from moe_oracle.inputs.checkpoint import quant_records
    from moe_oracle.inputs.checkpoint.releases import ReaderRelease

    tree = _tree(release)
    rel = ReaderRelease.of(release)
    if rel.holds("modelopt_mixed_b12x_codecs"):
        b12x = ast.parse((tree / "vllm/utils/b12x.py").read_text(encoding="utf-8"))
        (value,) = [n.value for n in b12x.body if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "B12X_BLOCK_CODECS" for t in n.targets)]
        assert {k.upper(): v for k, v in ast.literal_eval(value).items()} == quant_records.B12X_BLOCK_CODECS
    claimed = qf._DSV41_MODEL_TYPES if rel.holds("deepseek_v41_model") else qf._DSV4_MODEL_TYPES
    path = tree / ("vllm/models/deepseek_v41/quant_config.py" if rel.holds("deepseek_v41_model") else "vllm/models/deepseek_v4/quant_config.py")
    node = _definition(path, "DeepseekV4FP8Config.override_quantization_method")
    assert node is not None
    compared = [n for n in ast.walk(node) if isinstance(n, ast.Compare) and ast.unparse(n.left) == "model_type"]
    assert compared, path
    literals = {c.value for n in compared for c in ast.walk(n.comparators[0]) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    assert literals == set(claimed), (path, literals)
    if rel.holds("model_type_by_architecture"):
        from moe_oracle.inputs.checkpoint.model import MODEL_TYPE_BY_ARCHITECTURE

        config_py = ast.parse((tree / "vllm/transformers_utils/config.py").read_text(encoding="utf-8"))
        (mapping,) = [n.value for n in config_py.body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == "_ARCHITECTURE_TO_MODEL_TYPE"]
        assert ast.literal_eval(mapping) == dict(MODEL_TYPE_BY_ARCHITECTURE)


@pytest.mark.parametrize("release", RELEASES)
def test_the_moe_architecture_list_matches_the_release_source(release):
    """moe_oracle/inputs/checkpoint/architectures.py lists exactly the MoE architectures the
    release's registry and model files give (moe_oracle.tools.vllm_moe_archs)."""
    from moe_oracle.inputs.checkpoint.architectures import VLLM_MOE_ARCHITECTURES
    from moe_oracle.tools.vllm_moe_archs import moe_architectures

    found = moe_architectures(_tree(release))
    listed = {a for a, spec in VLLM_MOE_ARCHITECTURES.items() if spec.registered(release)}
    assert listed == set(found), (sorted(listed - set(found)), sorted(set(found) - listed))


@pytest.mark.parametrize("release", RELEASES)
def test_the_subconfig_wrapper_list_matches_the_release_source(release):
    """architectures.py SUBCONFIG_WRAPPERS lists exactly the registered classes that build their
    language model from a sub-config's architectures (registry_scan.subconfig_wrappers), less those
    that are MoE architectures of their own, each with the module and sub-config the release uses."""
    from moe_oracle.inputs.checkpoint.architectures import SUBCONFIG_WRAPPERS, VLLM_MOE_ARCHITECTURES
    from moe_oracle.verify.model_build.registry_scan import subconfig_wrappers

    found = {a: v for a, v in subconfig_wrappers(_tree(release)).items() if a not in VLLM_MOE_ARCHITECTURES}
    listed = {a: w for a, w in SUBCONFIG_WRAPPERS.items() if w.registered(release)}
    assert set(listed) == set(found), (sorted(set(listed) - set(found)), sorted(set(found) - set(listed)))
    wrong = {a: (w.module, w.sub_config, found[a]) for a, w in listed.items() if (w.module, w.sub_config.removeprefix("self.")) != (found[a][0], found[a][2].removeprefix("self."))}
    assert not wrong, wrong


@pytest.mark.parametrize("release", RELEASES)
def test_the_released_binary_has_no_lut_b_gemm(release):
    """kernels/lut_b.yaml ``lut_b_sm107.compiled_op``: vLLM's released wheel does not contain the
    compiled op ``lut_b_moe_gemm`` that ``LutBSm107Experts`` needs (vllm/_custom_ops.py
    ``lut_b_moe_gemm_supported``), so the native LUT-B kernel never runs with a released vLLM.
    Read from the wheel's compiled extensions by setup_env (``compiled_ops.json``); the control op
    ``moe_align_block_size`` must be found, or the search proves nothing."""
    import json

    from moe_oracle.verify.setup_env import COMPILED_OPS_FILE, COMPILED_OP_PROBES

    path = _tree(release) / COMPILED_OPS_FILE
    if not path.exists():
        pytest.fail(f"{path} is missing: re-run `python -m moe_oracle.verify.setup_env --dir ...` (it scans the wheel's compiled extensions)")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["probes"] == list(COMPILED_OP_PROBES), "stale scan: re-run setup_env"
    assert any(name.startswith("vllm/_moe_C") for name in doc["found"]["moe_align_block_size"]), doc
    assert doc["found"]["lut_b_moe_gemm"] == [], doc


@pytest.mark.parametrize("release", RELEASES)
def test_model_start_refusals_match_the_release_source(release):
    """moe_oracle/inputs/model_start_refusals.py: each model-class refusal's message is in the
    release's model package exactly for the releases (and platform directories) its range names."""
    from packaging.specifiers import SpecifierSet

    from moe_oracle.inputs.model_start_refusals import MODEL_START_REFUSALS

    tree = _tree(release) / "vllm"
    dirs = {"BeamForCausalLM": "models/beam", "Qwen4ExpForCausalLM": "models/qwen4_exp", "Qwen4ExpForConditionalGeneration": "models/qwen4_exp"}
    platform_dirs = {"cuda": "nvidia", "rocm": "amd"}
    pairs = {(arch, c.message) for c in MODEL_START_REFUSALS for arch in c.architectures if not c.files}
    for arch, message in sorted(pairs):
        package = tree / dirs[arch]
        for platform, sub in platform_dirs.items():
            # A package without per-platform classes serves both platforms from nvidia/ (0.33.0 beam).
            where = package / sub if (package / sub).is_dir() else package / "nvidia"
            # String constants as the parser joins them (vLLM splits long messages over lines).
            found = where.is_dir() and any(isinstance(n, ast.Constant) and isinstance(n.value, str) and message in n.value
                                           for p in where.glob("*.py") for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))
            expected = any(release in SpecifierSet(c.releases) and (not c.platforms or platform in c.platforms)
                           for c in MODEL_START_REFUSALS if arch in c.architectures and c.message == message)
            assert found == expected, f"vLLM {release} {arch} on {platform}: {message[:50]!r} in {where}: {found}; our table says {expected}"


# The conditions VllmSide.start_checks transcribes from VllmConfig.__post_init__'s MoonEP block (the
# harness cannot build a whole VllmConfig): each raises a ValueError at start.
MOONEP_START_CHECKS = frozenset({
    "self.model_config is not None and self.model_config.quantization is not None",
    "self.model_config is not None and self.model_config.dtype != torch.bfloat16",
    "self.parallel_config.enable_eplb",
    "self.parallel_config.expert_placement_strategy != 'linear'",
})


@pytest.mark.parametrize("release", RELEASES)
def test_the_moonep_start_checks_the_harness_transcribes_are_the_releases(release):
    """moe_oracle/verify/vllm_side.py ``start_checks``: the raising conditions of the release's
    ``if self.parallel_config.all2all_backend == "moonep":`` block in ``VllmConfig.__post_init__``
    are exactly those it transcribes (0.31.0+; none before MoonEP)."""
    tree = ast.parse((_tree(release) / "vllm/config/vllm.py").read_text(encoding="utf-8"))
    blocks = [n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "self.parallel_config.all2all_backend == 'moonep'"]
    raising = {ast.unparse(n.test) for b in blocks for n in ast.walk(b) if n is not b and isinstance(n, ast.If) and any(isinstance(s, ast.Raise) for s in n.body)}
    assert raising == (MOONEP_START_CHECKS if Version(release) >= Version("0.31.0") else set()), sorted(raising)


@pytest.mark.parametrize("release", RELEASES)
def test_tp_above_the_expert_count_refusals_match_the_release_source(release):
    """moe_oracle/inputs/model_start_refusals.py ``tp_exceeds_experts``: every file a check names
    holds vLLM's ``tp_size > <experts>`` ValueError in each release its range admits, and no MoE
    model file of the release holds the check unless a check (or the reviewed list of unmapped
    files in its docstring) names it."""
    import re

    from packaging.specifiers import SpecifierSet

    from moe_oracle.inputs.model_start_refusals import MODEL_START_REFUSALS

    tree = _tree(release) / "vllm"
    check = re.compile(r"if self\.tp_size > [\w.]+:\s*raise ValueError\(\s*f\"Tensor parallel size \{self\.tp_size\} is greater than \"\s*f\"the number of experts")
    named = {f for c in MODEL_START_REFUSALS if c.when == "tp_exceeds_experts" and release in SpecifierSet(c.releases) for f in c.files}
    for f in named:
        assert check.search((tree / f).read_text(encoding="utf-8")), f"vLLM {release} {f}: no tp_size > experts check"
    unmapped = {"model_executor/models/alice_ai.py", "model_executor/models/ernie45_vl_moe.py", "model_executor/models/interns1_pro.py",
                "model_executor/models/interns2_mobius.py", "model_executor/models/k2_horizon.py"}
    holding = {str(p.relative_to(tree)) for p in tree.rglob("*.py") if "models" in p.parts and check.search(p.read_text(encoding="utf-8"))}
    assert holding - unmapped == named, f"vLLM {release}: files with the check {sorted(holding - unmapped - named)} not named; named without it {sorted(named - holding)}"


_SILU_FILES = {
    "model_executor/models/deepseek_v2.py": "deepseek_v3", "model_executor/models/qwen3_moe.py": "qwen3_moe",
    "model_executor/models/qwen2_moe.py": "qwen2_moe", "model_executor/models/qwen3_next.py": "qwen3_5_moe",
    "model_executor/models/qwen3_5.py": "qwen3_5_moe", "model_executor/models/mixtral.py": "mixtral",
    "model_executor/models/minimax_m2.py": "minimax_m2", "model_executor/models/llama4.py": "llama4",
    "model_executor/models/phimoe.py": "phimoe", "model_executor/models/glm4_moe.py": "glm4_moe",
    "model_executor/models/glm4_moe_lite.py": "glm4_moe_lite", "model_executor/models/mimo_v2.py": "mimo_v2_flash",
    "model_executor/models/afmoe.py": "afmoe", "model_executor/models/hy_v3.py": "hy_v3", "model_executor/models/AXK1.py": "axk1",
    "model_executor/models/qwen3_vl_moe.py": "qwen3_vl_moe", "model_executor/models/qwen3_omni_moe_thinker.py": "qwen3_omni_moe",
    "model_executor/models/bailing_moe_linear.py": "bailing_moe_v25", "model_executor/models/mellum.py": "mellum",
}
"""Model files whose class builds its fused-MoE layer without ``activation=`` -> our family, which
must say ``silu`` (FusedMoE's default) whatever config.json's ``hidden_act`` says."""


@pytest.mark.parametrize("release", RELEASES)
def test_families_whose_class_passes_no_activation_say_silu(release):
    from moe_oracle.inputs.checkpoint.families import FAMILIES

    tree = _tree(release) / "vllm"
    by_name = {f.name: f for f in FAMILIES}
    builders = {"FusedMoE", "SharedFusedMoE", "FusedMoEFactory"}
    for rel_path, family in _SILU_FILES.items():
        path = tree / rel_path
        if not path.is_file():
            continue  # mellum.py: 0.29.0-0.31.0 only
        calls = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", getattr(n.func, "attr", None)) in builders]
        # the files that build another file's MoE block construct none themselves
        assert calls or rel_path.endswith(("qwen3_5.py", "qwen3_vl_moe.py", "qwen3_omni_moe_thinker.py", "mellum.py", "glm4_moe_lite.py")), f"vLLM {release} {rel_path}: no fused-MoE construction found"
        passed = [n.lineno for n in calls if any(k.arg == "activation" for k in n.keywords)]
        assert not passed, f"vLLM {release} {rel_path}: activation= passed at lines {passed}"
        assert by_name[family].activation == "silu", f"family {family}: activation {by_name[family].activation!r}, vLLM's FusedMoE default is silu"
    text = (tree / "model_executor/models/deepseek_v2.py").read_text(encoding="utf-8")
    moe = text[text.index("class DeepseekV2MoE"):text.index("self.experts", text.index("class DeepseekV2MoE"))]
    assert 'config.hidden_act != "silu"' in moe and by_name["deepseek_v3"].hidden_acts == ("silu",)


def _function_source(path: Path, name: str) -> str:
    """The source of the top-level function ``name`` in ``path``, without its decorators."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            node.decorator_list = []
            return ast.unparse(node)
    pytest.fail(f"{path} defines no function {name}")


def test_the_peer_benchmark_looks_up_the_config_file_vllm_0_33_looks_up(monkeypatch):
    """benchmarks/vllm_peer.py's ``config_file_name`` (the tuned config the issue-23 peer runs with)
    against vLLM 0.33.0's own ``get_config_file_name`` and ``get_device_name_as_file_name``, run from
    the release's tree with the platform's device name stubbed, for the cards of that benchmark and
    names with runs of spaces, slashes and H200-family words; bf16 and fp8 block layers."""
    import re
    import sys
    import types

    tree = _tree("0.33.0") / "vllm"
    space: dict = {"re": re}
    exec(_function_source(tree / "utils" / "platform_utils.py", "get_device_name_as_file_name"), space)  # noqa: S102 - vLLM's code, read from its tree
    exec(_function_source(tree / "model_executor" / "layers" / "fused_moe" / "fused_moe.py", "get_config_file_name"), space)  # noqa: S102
    spec = importlib.util.spec_from_file_location("vllm_peer", ROOT / "benchmarks" / "vllm_peer.py")
    peer = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "vllm_peer", peer)  # its dataclasses look their module up
    spec.loader.exec_module(peer)
    platform = types.SimpleNamespace(device="")
    platform.get_device_name = lambda device_id=0: platform.device
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setitem(sys.modules, "vllm.platforms", types.SimpleNamespace(current_platform=platform))
    names = ["NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA GH200 480GB", "NVIDIA H20",
             "NVIDIA A100-SXM4-80GB", "NVIDIA B200", "Tesla V100/PCIE  16GB", "NVIDIA  H200\tx"]
    naive = 0
    for device in names:
        platform.device = device
        for e, n, fp8 in ((128, 768, False), (32, 2048, True), (8, 14336, False)):
            theirs = space["get_config_file_name"](e, n, "fp8_w8a8" if fp8 else None, [128, 128] if fp8 else None)
            assert peer.config_file_name(e, n, device, fp8) == theirs, (device, e, n, fp8)
            naive += f"device_name={device.replace(' ', '_')}," not in theirs
    assert naive, "a plain space-to-underscore mapping would agree everywhere: the names do not exercise the rule"


@pytest.mark.parametrize("release", RELEASES)
def test_sequence_parallel_facts_match_the_release_source(release):
    """What moe_oracle reads of sequence-parallel MoE is the release's code: ``make_parallel_config``
    sets ``sp_size = tp_size_`` from the model class's ``is_sequence_parallel`` (P/layer.py);
    the one experts class whose ``_supports_parallel_config`` reads it is TrtLlmFp8ExpertsMonolithic
    (kernels/flashinfer_trtllm.yaml ``no_sequence_parallel``); each model class of
    inputs/sequence_parallel.py passes ``use_sequence_parallel_moe`` (or nothing) as listed."""
    from moe_oracle.inputs.sequence_parallel import SEQUENCE_PARALLEL_CLASSES

    fused = _tree(release) / "vllm/model_executor/layers/fused_moe"
    layer = ast.parse((fused / "layer.py").read_text(encoding="utf-8"))
    assigns = {ast.unparse(n.targets[0]): ast.unparse(n.value) for n in ast.walk(layer) if isinstance(n, ast.Assign) and len(n.targets) == 1}
    assert assigns["sp_size"] == "tp_size_ if is_sequence_parallel else 1"
    readers = sorted(p.name for p in (fused / "experts").glob("*.py") if "is_sequence_parallel" in p.read_text(encoding="utf-8"))
    assert readers == ["trtllm_fp8_moe.py"], readers
    trtllm = ast.parse((fused / "experts/trtllm_fp8_moe.py").read_text(encoding="utf-8"))
    classes = {n.name: n for n in ast.walk(trtllm) if isinstance(n, ast.ClassDef)}
    checks = {name: next((f for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "_supports_parallel_config"), None) for name, c in classes.items()}
    # The base class refuses it; the monolithic class inherits that check, the modular one overrides it without it.
    assert checks["TrtLlmFp8ExpertsMonolithic"] is None and [b.id for b in classes["TrtLlmFp8ExpertsMonolithic"].bases if isinstance(b, ast.Name)] == ["TrtLlmFp8ExpertsBase"]
    assert "not (moe_parallel_config.enable_eplb or moe_parallel_config.is_sequence_parallel)" in ast.unparse(checks["TrtLlmFp8ExpertsBase"])
    assert "is_sequence_parallel" not in ast.unparse(checks["TrtLlmFp8ExpertsModular"])
    registry = (_tree(release) / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8")
    for entry in SEQUENCE_PARALLEL_CLASSES:
        if Version(release) not in SpecifierSet(entry.releases):
            continue
        if entry.platforms:  # a per-platform file whose decoder layer builds DeepseekV2MoE
            text = (_tree(release) / entry.source.split(" ")[2]).read_text(encoding="utf-8")
            assert "self.mlp = DeepseekV2MoE(" in text and "deepseek_v2" in text, entry.source
            continue
        module = entry.source.split("vllm/model_executor/models/")[1].split(".py")[0]
        text = (_tree(release) / f"vllm/model_executor/models/{module}.py").read_text(encoding="utf-8")
        if entry.passes:
            wanted = ("parallel_config.use_sequence_parallel_moe and vllm_config.lora_config is None" if entry.unless_lora else "self.is_sequence_parallel = parallel_config.use_sequence_parallel_moe")
            assert wanted in ast.unparse(ast.parse(text)) and "is_sequence_parallel=self.is_sequence_parallel" in text, (module, entry.architectures)
            # every MoE layer the file builds is handed it
            builds = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] in ("FusedMoE", "FusedMoEFactory", "SharedFusedMoE")]
            assert builds and all("is_sequence_parallel" in {k.arg for k in b.keywords} for b in builds), (module, [ast.unparse(b)[:80] for b in builds])
        else:
            assert "is_sequence_parallel" not in text and "use_sequence_parallel_moe" not in text, module
        for arch in entry.architectures:
            assert f'"{arch}"' in registry, arch


@pytest.mark.parametrize("release", RELEASES)
def test_the_modules_vllms_wheel_carries_are_the_vendored_table(release):
    """core/packages.VENDORED: each release's wheel (its dist-info RECORD, as setup_env unpacks it)
    carries ``vllm/third_party/<module>`` with a compiled part where the module has one, and
    ``vllm/utils/import_utils.py``'s ``has_<module>`` falls back to importing that copy. A pip
    freeze without deep-gemm (breakit23 finding 1) was read as DeepGEMM absent: vLLM finds the copy."""
    from moe_oracle.core.packages import PACKAGE_IMPORTS, VENDORED

    tree = _tree(release)
    record = (tree / f"vllm-{release}.dist-info" / "RECORD").read_text(encoding="utf-8").splitlines()
    source = (tree / "vllm" / "utils" / "import_utils.py").read_text(encoding="utf-8")
    checks = {"deep-gemm": "has_deep_gemm", "triton-kernels": "has_triton_kernels"}
    assert set(VENDORED) == set(checks)
    for name, vendored in VENDORED.items():
        module = PACKAGE_IMPORTS[name]
        assert vendored.host == "vllm" and vendored.provides(release) is True, (name, release)
        carried = [line.split(",", 1)[0] for line in record if line.startswith(f"vllm/third_party/{module}/")]
        assert len(carried) >= 20, (name, release, len(carried))
        if module == "deep_gemm":
            assert any(path.endswith(".so") for path in carried), "the copy's compiled extension is in the wheel"
        fn = ast.unparse(next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == checks[name]))
        assert f"_has_module('{module}')" in fn and f"_has_module('vllm.third_party.{module}')" in fn, fn
    # No other copy of a module the tables read: a new vendored package must join the table.
    others = {line.split("/")[2] for line in record if line.startswith("vllm/third_party/") and line.count("/") >= 3}
    read = set(PACKAGE_IMPORTS.values())
    assert others & read == {PACKAGE_IMPORTS[n] for n in VENDORED}, sorted(others & read)
