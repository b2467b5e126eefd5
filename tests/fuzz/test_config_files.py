"""MoEConfig files and Hugging Face config.json files: malformed and hostile input ends in a
ConfigError whose issues name the file and JSON path, never in a traceback."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from moe_oracle.core._resources import examples_dir
from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.environment import Environment
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.hf import from_hf_config, load_hf_config
from moe_oracle.inputs.files import dump_document, load_config_file
from moe_oracle.inputs.models import example_names
from moe_oracle.core.oracle import Oracle
from moe_oracle.explain.plan import build_plan
from moe_oracle.core.vocab import Platform
from tests.fuzz.hostile import SNIPPETS, Bad, assert_typed_error, byte_edits, serialize, tree_edits
from tests.property import tally
from tests.property.profiles import budget
from tests.property.strategies import CATALOG, cases

# --------------------------------------------------------------------------- MoEConfig files

# Keys of schemas/moe_config.schema.json that config_from_document reads.
CONFIG_KEYS = ("model", "device", "parallel", "environment", "num_experts", "top_k", "hidden_size", "intermediate_size", "activation", "routing_method", "quant",
               "quant_method", "in_dtype", "router_logits_dtype", "gpu", "platform", "capability", "arch", "tp_size", "dp_size", "use_ep", "all2all_backend",
               "moe_backend", "packages", "absent", "env", "probe", "hf_config", "hf_quant_config", "weight", "activation")


@st.composite
def config_documents(draw: st.DrawFn) -> dict:
    """A valid config document: explicit fields (from the strategies), or a Hugging Face reference."""
    if draw(st.booleans()):
        return draw(cases()).document()
    model = {"hf_config": draw(st.sampled_from(example_names()))}
    if draw(st.booleans()):
        model["quant"] = draw(st.sampled_from(("fp8_block", "nvfp4", "FP8-Blk", "unquantized")))
    return {"model": model, "device": {"gpu": draw(st.sampled_from(("H200", "B200", "MI300X", "cpu")))}, "parallel": {"tp_size": draw(st.sampled_from((1, 2, 8)))}}


_REFERENCES = ("no/such/file.json", ".", "..", "/", "/etc/hostname", "/dev/null", "case.yaml", "junk.json", "list.json", "deep.json", "huge.json", "\u00e9\u00e9.json", "a" * 300, "")


def _workdir() -> Path:
    root = Path(tempfile.mkdtemp(prefix="moe-oracle-fuzz-config-"))
    atexit.register(shutil.rmtree, root, True)
    (root / "junk.json").write_bytes(b"\xff\xfe not json")
    (root / "list.json").write_text("[1, 2, 3]")
    (root / "deep.json").write_text("[" * 100_000)
    (root / "huge.json").write_text('{"num_experts": ' + "9" * 5000 + "}")
    return root


WORKDIR = _workdir()


@st.composite
def bad_config_files(draw: st.DrawFn) -> Bad:
    doc = draw(config_documents())
    op = draw(st.sampled_from(("tree", "tree", "bytes", "reference")))
    if op == "reference":
        key = draw(st.sampled_from(("hf_config", "hf_quant_config")))
        ref = draw(st.sampled_from(_REFERENCES))
        doc["model"] = {"hf_config": "deepseek-r1", key: ref} if key == "hf_quant_config" else {key: ref}
        bad = Bad(f"model.{key} = {ref!r}", dump_document(doc).encode())
    elif op == "tree":
        how, edited = draw(tree_edits(doc, focus=CONFIG_KEYS))
        bad = Bad(how, serialize(edited, as_json=False))
    else:
        bad = draw(byte_edits(dump_document(doc).encode()))
    tally.bump("bad inputs: config files")
    return bad


def _load_and_select(path: Path) -> None:
    try:
        loaded = load_config_file(path, CATALOG)
    except ConfigError as exc:
        assert_typed_error(exc, ConfigError)
        assert all(i.file is not None for i in exc.issues), f"an issue names no file: {[i.format() for i in exc.issues if i.file is None]}"
        return
    try:
        evaluate(CATALOG, loaded.config, loaded.environment or Environment()).to_dict()
    except ConfigError as exc:  # moe_backend names no backend: raised by the engine, before evaluation
        assert [i.path for i in exc.issues] == ["$.moe_backend"]


@budget(1.5)
@given(bad_config_files())
def test_a_bad_config_file_loads_or_raises_a_config_error(bad):
    note(bad.description)
    path = WORKDIR / "case.yaml"
    path.write_bytes(bad.raw)
    _load_and_select(path)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: repr(s[:24]))
@pytest.mark.parametrize("key", (b"num_experts", b"platform", b"tp_size", b"moe_backend"))
def test_hostile_yaml_constructs_in_a_config_file(key, snippet):
    doc = {"model": {"num_experts": 8, "top_k": 2, "hidden_size": 1024, "intermediate_size": 512}, "device": {"platform": "cuda", "capability": 90},
           "parallel": {"tp_size": 2}, "moe_backend": "auto"}
    raw = dump_document(doc).encode()
    line = next(ln for ln in raw.split(b"\n") if ln.strip().startswith(key + b":"))
    raw = raw.replace(line, line.split(b":")[0] + b": " + snippet, 1)
    tally.bump("bad inputs: config files")
    path = WORKDIR / f"snippet-{key.decode()}.yaml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError) as info:
        load_config_file(path, CATALOG)
    assert_typed_error(info.value, ConfigError)


_NOT_FILES = (WORKDIR, WORKDIR / "missing.yaml", Path("/dev/null"), Path("/dev/zero"), Path("a\x00b"), Path("\ud800"), Path("x" * 5000))
# Ids fixed by hand: the work directory's random name must not enter a test id (pytest-xdist
# workers must collect the same tests).
_NOT_FILE_IDS = ("directory", "missing-file", "dev-null", "dev-zero", "nul-byte", "lone-surrogate", "5000-char-name")


@pytest.mark.parametrize("path", _NOT_FILES, ids=_NOT_FILE_IDS)
def test_a_config_path_that_is_no_regular_file(path):
    tally.bump("bad inputs: config files")
    with pytest.raises(ConfigError) as info:
        load_config_file(path, CATALOG)
    assert_typed_error(info.value, ConfigError)


@pytest.mark.parametrize("path", _NOT_FILES, ids=_NOT_FILE_IDS)
def test_an_hf_config_path_that_is_no_regular_file(path):
    tally.bump("bad inputs: hf configs")
    with pytest.raises(ConfigError) as info:
        load_hf_config(path)
    assert_typed_error(info.value, ConfigError)


# --------------------------------------------------------------------------- Hugging Face configs

EXAMPLES = {p.name: json.loads(p.read_text()) for p in sorted(examples_dir().glob("*.json"))}
QUANT_CONFIG = "nvidia-nemotron-3-nano-30b-a3b-nvfp4.hf_quant_config.json"
MODELS = sorted(name for name in EXAMPLES if name != QUANT_CONFIG)
# Keys moe_oracle.inputs.hf reads (from_hf_config and its helpers).
HF_KEYS = ("text_config", "model_type", "n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts", "num_experts_per_tok", "experts_per_token",
           "moe_topk", "top_k", "hidden_size", "moe_intermediate_size", "intermediate_size", "torch_dtype", "dtype", "mlp_hidden_act", "hidden_act",
           "hidden_activation", "activation_function", "swiglu_limit", "scoring_func", "norm_topk_prob", "n_group", "topk_group", "topk_method",
           "use_routing_bias", "moe_router_enable_expert_bias", "routed_scaling_factor", "quantization_config", "quantization", "quant_method",
           "quant_algo", "modules_to_not_convert", "ignore", "exclude_modules", "weight_block_size", "activation_scheme", "config_groups", "weights",
           "input_activations", "type", "num_bits", "strategy", "dynamic", "group_size", "symmetric", "bits", "w_bit", "sym", "_name_or_path", "architectures",
           # the whole-model reader (moe_oracle.inputs.checkpoint): layouts, MTP, aliases, formats
           "num_hidden_layers", "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers", "decoder_sparse_step", "interleave_moe_layer_step",
           "hybrid_override_pattern", "mtp_hybrid_override_pattern", "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", "num_hash_layers",
           "mlp_layer_types", "expert_dtype", "moe_quant_algo", "quantized_layers", "targets", "format", "ignored_layers", "scale_fmt", "store_dtype",
           "num_experts_per_token", "top_k_experts", "moe_router_activation_func", "router_score_function", "router_scoring_func", "use_grouped_topk",
           "num_expert_group", "moe_renormalize", "router_scaling_factor", "route_scale", "routed_expert_hidden_size", "moe_latent_size",
           "activation_situ_beta", "swiglu_alpha", "swiglu_beta", "n_shared_experts", "shared_expert_intermediate_size", "approximate_experts",
           "compression_config", "producer", "block_structure", "actorder", "scale_dtype", "desc_act", "zero_point")
H200 = Device(Platform.CUDA, capability=90, name="H200")
PLAN_ORACLE = Oracle(CATALOG, Environment())


@st.composite
def bad_hf_files(draw: st.DrawFn) -> tuple[str, Bad]:
    name = draw(st.sampled_from((*MODELS, QUANT_CONFIG)))
    if draw(st.integers(0, 3)):
        how, doc = draw(tree_edits(EXAMPLES[name], json_only=True, focus=HF_KEYS))
        bad = Bad(how, serialize(doc, as_json=True))
    else:
        bad = draw(byte_edits(json.dumps(EXAMPLES[name], indent=1).encode(), json_text=True))
    tally.bump("bad inputs: hf configs")
    return name, bad


def _hf_door(path: Path, quant_path: Path | None) -> None:
    """What `--model PATH [--hf-quant-config Q]` does: read, infer the checkpoint fields, build the config."""
    quant = load_hf_config(quant_path) if quant_path is not None else None
    ck = from_hf_config(load_hf_config(path), file=str(path), quant_cfg=quant)
    MoEConfig(device=H200, provenance=ck.provenance, **ck.kwargs)


@budget(2.0)
@given(bad_hf_files())
def test_a_bad_hf_config_is_read_or_raises_a_config_error(edit):
    name, bad = edit
    note(f"{name}: {bad.description}")
    path = WORKDIR / "config.json"
    path.write_bytes(bad.raw)
    try:
        if name == QUANT_CONFIG:
            _hf_door(examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-bf16.json", path)
        else:
            _hf_door(path, None)
    except ConfigError as exc:
        assert_typed_error(exc, ConfigError)
        assert all(i.file is not None for i in exc.issues), f"an issue names no file: {[i.format() for i in exc.issues if i.file is None]}"


@budget(2.0)
@given(bad_hf_files())
def test_a_bad_hf_config_is_planned_or_raises_a_config_error(edit):
    """The whole-model door (`moe-oracle plan --model`): every layer, with EP so placement runs too."""
    name, bad = edit
    note(f"{name}: {bad.description}")
    path = WORKDIR / "plan_config.json"
    path.write_bytes(bad.raw)
    try:
        if name == QUANT_CONFIG:
            ck = read_checkpoint(load_hf_config(examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-bf16.json"), file="bf16.json", override=load_hf_config(path))
        else:
            ck = read_checkpoint(load_hf_config(path), file=str(path))
        build_plan(ck, PLAN_ORACLE, device=H200, parallel=ParallelConfig(tp_size=4, use_ep=True))
    except ConfigError as exc:
        assert_typed_error(exc, ConfigError)
        assert all(i.file is not None for i in exc.issues), f"an issue names no file: {[i.format() for i in exc.issues if i.file is None]}"


@pytest.mark.parametrize("text", [b"9" * 5000, b'{"hidden_size": ' + b"1" * 5000 + b"}", b"[" * 100_000, b"NaN", b'{"a": Infinity}', b"", b"\xef\xbb\xbf{}", b"\x00"],
                         ids=["huge-int", "huge-int-value", "deep", "nan", "infinity", "empty", "bom", "nul"])
def test_hostile_json_in_an_hf_config(text):
    path = WORKDIR / "hostile.json"
    path.write_bytes(text)
    tally.bump("bad inputs: hf configs")
    with pytest.raises(ConfigError) as info:
        _hf_door(path, None)
    assert_typed_error(info.value, ConfigError)
