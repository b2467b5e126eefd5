"""vLLM refuses at start a quantization method the device's platform does not list.

vLLM 0.29.0-0.33.0 vllm/config/model.py ``ModelConfig._verify_quantization`` ends with
``current_platform.verify_quantization(self.quantization)`` (after the unknown-method check,
before the deprecation check); ``Platform.verify_quantization`` (vllm/platforms/interface.py)
raises when the class's ``supported_quantization`` is non-empty and lacks the method. ROCm and
XPU have lists (XPU's changes between releases), CUDA and CPU none. The lists are
``engine_facts/vllm-release-values.yaml`` (``platforms``), generated from each release's source
by tools/vllm_release_values.py (checked against the trees in
tests/differential/test_release_sources.py).

Before this check was modelled, every refusal below was answered with a kernel (or a dead end).
Tests assert the issue's ``keyword`` and ``path``; the message is checked only for the facts it
must name (release, device, platform, method, vLLM's own sentence).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.explain.whynot import why_not
from moe_oracle.cli import main
from moe_oracle.inputs.release_facts import platform_quantization
from moe_oracle.verify.run import RELEASES

NVFP4 = "nvidia-qwen3.5-122b-a10b-nvfp4"  # ModelOpt NVFP4: vLLM checks it as modelopt_fp4
EXAMPLES = Path(__file__).parents[2] / "examples" / "models"


def _checkpoint(tmp_path: Path, name: str, quantization_config: dict) -> Path:
    cfg = json.loads((EXAMPLES / "qwen3-30b-a3b.json").read_text())
    cfg["quantization_config"] = quantization_config
    (tmp_path / name).mkdir()
    (tmp_path / name / "config.json").write_text(json.dumps(cfg))
    return tmp_path / name


GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
FBGEMM = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]}


def _run(argv: list[str], capsys) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else {})


def _issue(argv: list[str], capsys) -> dict:
    code, doc = _run(argv, capsys)
    assert code == 2, doc
    (issue,) = doc["issues"]
    return issue


# --- the facts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_the_platform_lists_per_release(release):
    gates = platform_quantization(release)
    assert gates["cuda"].supported == () and gates["cpu"].supported == () and gates["zen_cpu"].supported == ()
    assert gates["tpu"].supported is None and gates["tpu"].out_of_tree == "tpu_inference.platforms"
    assert gates["rocm"].verify_override == "RocmPlatform" and gates["xpu"].verify_override is None
    rocm, xpu = set(gates["rocm"].supported), set(gates["xpu"].supported)
    assert {"modelopt_fp4", "fp8", "compressed-tensors", "auto_gptq", "quark"} <= rocm and not {"moe_wna16", "humming", "experts_int8", "gptq_marlin"} & rocm
    assert {"fp8", "modelopt", "compressed-tensors", "auto_gptq", "mxfp4"} <= xpu and not {"modelopt_fp4", "quark", "fbgemm_fp8", "humming"} & xpu
    # XPU's list grows: moe_wna16 from 0.30.0, fp8_per_channel from 0.32.0.
    assert ("moe_wna16" in xpu) == (release != "0.29.0")
    assert ("fp8_per_channel" in xpu) == (release in ("0.32.0", "0.33.0", "0.34.0"))
    assert gates["rocm"].refusal("moe_wna16") == "moe_wna16 quantization is currently not supported in rocm."


@pytest.mark.parametrize("release", RELEASES)
def test_the_names_deepseek_v4_fp8_s_override_chooses_between_pass_every_platform(release):
    """deployment.quantization_override leaves DeepseekV4FP8Config's override out (fp8 DeepSeek-V4
    checkpoints are checked as deepseek_v4_fp8); that is sound only while both names pass
    every platform's check."""
    for gate in platform_quantization(release).values():
        assert gate.allows("fp8") is not False and gate.allows("deepseek_v4_fp8") is not False, gate.module


def test_a_deepseek_v4_quark_mxfp4_document_is_noted_not_refused_on_xpu(tmp_path, capsys):
    """vLLM 0.29.0-0.30.0 take it as deepseek_v4_fp8 (XPU lists it), later releases as quark (XPU
    does not): not modelled, so a note instead of a refusal that would be wrong for 0.29.0-0.30.0."""
    from moe_oracle.inputs.quant_checks import verify_checkpoint_quantization
    from moe_oracle.inputs.hardware import lookup_hardware
    from types import SimpleNamespace

    doc = {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp4", "qscheme": "per_group", "group_size": 32}}}
    quant = SimpleNamespace(config=doc, declared="quark", model_type="deepseek_v4", source="config.json quantization_config", file="config.json")
    xpu = lookup_hardware("ARC_B580").device
    notes = verify_checkpoint_quantization(quant, None, "--serve --quantization", "0.33.0", allow_deprecated=False, allow_flag="--allow-deprecated-quantization", device=xpu)
    assert any("deepseek_v4_fp8" in n and "not applied" in n for n in notes)
    quant = SimpleNamespace(config=doc, declared="quark", model_type="qwen3_moe", source="config.json quantization_config", file="config.json")
    with pytest.raises(Exception) as refused:
        verify_checkpoint_quantization(quant, None, "--serve --quantization", "0.33.0", allow_deprecated=False, allow_flag="--allow-deprecated-quantization", device=xpu)
    assert refused.value.issues[0].keyword == "supported_quantization"


# --- refused, answered, unchanged -----------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("command", ["select", "explain", "plan"])
def test_an_nvfp4_checkpoint_is_refused_on_xpu(command, release, capsys):
    issue = _issue([command, "--model", NVFP4, "--gpu", "ARC_B580", "--package", f"vllm=={release}"], capsys)
    assert (issue["keyword"], issue["path"], issue["value"]) == ("supported_quantization", "config.json quantization_config quant_method", "modelopt_fp4")
    assert issue["allowed"] == list(platform_quantization(release)["xpu"].supported)
    message = issue["message"]
    assert f"vLLM {release} refuses to start on ARC_B580 (xpu)" in message
    assert "'modelopt_fp4 quantization is currently not supported in xpu.'" in message  # vLLM's own sentence
    assert "--gpu" in message and "checkpoint quantized with a method xpu allows" in message  # the fixes
    assert issue["did_you_mean"] is None  # modelopt is on the list, but is not a spelling of modelopt_fp4


@pytest.mark.parametrize("gpu", ["MI300X", "MI355X", "H200", "B200"])
def test_an_nvfp4_checkpoint_is_still_answered_where_its_platform_lists_it(gpu, capsys):
    code, doc = _run(["select", "--model", NVFP4, "--gpu", gpu], capsys)
    assert code in (0, 1) and "issues" not in doc


def test_cuda_answers_carry_no_platform_note(capsys):
    for model in (NVFP4, "qwen3-30b-a3b-fp8", "gpt-oss-120b"):
        code, doc = _run(["explain", "--model", model, "--gpu", "H200"], capsys)
        assert code == 0 and not any("supported_quantization" in n or "out of its tree" in n for n in doc.get("notes", []))


@pytest.mark.parametrize("command", ["select", "plan"])
def test_the_override_name_is_checked_gptq_under_moe_wna16_on_rocm(command, tmp_path, capsys):
    """-q moe_wna16 on a GPTQ checkpoint: MoeWNA16Config's override takes it, and ROCm does not
    list moe_wna16; without -q it is auto_gptq, which ROCm lists."""
    ck = _checkpoint(tmp_path, "gptq", GPTQ)
    issue = _issue([command, "--gpu", "MI300X", "--serve", f"vllm serve {ck} -q moe_wna16"], capsys)
    assert (issue["keyword"], issue["path"], issue["value"]) == ("supported_quantization", "--serve --quantization", "moe_wna16")
    assert "'moe_wna16 quantization is currently not supported in rocm.'" in issue["message"] and "drop --quantization moe_wna16" in issue["message"]
    code, doc = _run([command, "--gpu", "MI300X", "--serve", f"vllm serve {ck}"], capsys)
    assert code in (0, 1) and "issues" not in doc
    assert _run([command, "--gpu", "H200", "--serve", f"vllm serve {ck} -q moe_wna16"], capsys)[0] in (0, 1)


@pytest.mark.parametrize(("release", "refused"), [("0.29.0", True), ("0.30.0", False), ("0.33.0", False)])
def test_xpu_refuses_moe_wna16_in_0_29_0_only(release, refused, tmp_path, capsys):
    ck = _checkpoint(tmp_path, "gptq", GPTQ)
    code, doc = _run(["select", "--gpu", "ARC_B580", "--package", f"vllm=={release}", "--serve", f"vllm serve {ck} -q moe_wna16"], capsys)
    if refused:
        assert code == 2 and doc["issues"][0]["keyword"] == "supported_quantization" and "vLLM 0.29.0 refuses" in doc["issues"][0]["message"]
    else:
        assert code in (0, 1) and "issues" not in doc


def test_the_platform_check_comes_before_the_deprecation_check(tmp_path, capsys):
    """fbgemm_fp8 is deprecated in every modelled release; XPU does not list it, ROCm does."""
    ck = _checkpoint(tmp_path, "fbgemm", FBGEMM)
    issue = _issue(["select", "--gpu", "ARC_B580", "--serve", f"vllm serve {ck} --allow-deprecated-quantization"], capsys)
    assert issue["keyword"] == "supported_quantization"
    issue = _issue(["select", "--gpu", "ARC_B580", "--serve", f"vllm serve {ck}"], capsys)
    assert issue["keyword"] == "supported_quantization"  # not the deprecation refusal
    issue = _issue(["select", "--gpu", "MI300X", "--serve", f"vllm serve {ck}"], capsys)
    assert issue["keyword"] != "supported_quantization" and "--allow-deprecated-quantization" in issue["message"]


@pytest.mark.parametrize(("gpu", "keyword"), [("MI300X", "supported_quantization"), ("H200", None)])
@pytest.mark.parametrize("q", ["experts_int8", "humming"])
def test_online_quantization_is_refused_by_the_platform_before_it_is_not_modelled(q, gpu, keyword, capsys):
    issue = _issue(["select", "--gpu", gpu, "--serve", f"vllm serve qwen3-30b-a3b -q {q}"], capsys)
    assert issue["keyword"] == keyword and issue["path"] == "--serve --quantization"
    if keyword is None:
        assert "not modelled" in issue["message"]


def test_an_unknown_method_is_refused_as_unknown_before_the_platform_check(capsys):
    issue = _issue(["select", "--gpu", "MI300X", "--serve", "vllm serve qwen3-30b-a3b -q bogus"], capsys)
    assert issue["keyword"] is None and "knows no such quantization method" in issue["message"]


def test_humming_on_a_quantized_checkpoint_is_refused_by_the_platform_first(tmp_path, capsys):
    ck = _checkpoint(tmp_path, "gptq", GPTQ)
    assert _issue(["select", "--gpu", "MI300X", "--serve", f"vllm serve {ck} -q humming"], capsys)["keyword"] == "supported_quantization"
    assert "not modelled" in _issue(["select", "--gpu", "H200", "--serve", f"vllm serve {ck} -q humming"], capsys)["message"]


def test_a_platform_outside_vllms_tree_is_noted_not_refused(capsys):
    code, doc = _run(["explain", "--model", "qwen3-30b-a3b-fp8", "--platform", "tpu"], capsys)
    assert code == 0 and any("tpu_inference" in n and "not checked" in n for n in doc["notes"])


# --- a --config file: the methods its layer can come from ----------------------------------------

_LAYER = "model: {num_experts: 64, top_k: 4, hidden_size: 1024, intermediate_size: 512, activation: silu, quant: %s, quant_method: %s}\ndevice: {gpu: %s}\n"


@pytest.mark.parametrize(("quant", "method", "gpu", "outcome"), [
    ("nvfp4", "modelopt", "ARC_B580", "refused"),  # modelopt_fp4 or modelopt_mixed: XPU lists neither
    ("fp8_block", "quark", "ARC_B580", "refused"),
    ("int4_w16", "moe_wna16", "MI300X", "refused"),
    ("fp8_tensor_static", "modelopt", "ARC_B580", "noted"),  # modelopt (listed) or modelopt_mixed (not)
    ("nvfp4", "modelopt", "MI300X", "answered"),
    ("nvfp4", "modelopt", "H200", "answered"),
    ("int4_w16", "moe_wna16", "H200", "answered"),
], ids=lambda v: str(v))
def test_a_config_file_layer_is_refused_when_every_method_it_can_come_from_is(quant, method, gpu, outcome, tmp_path, capsys):
    path = tmp_path / "layer.yaml"
    path.write_text(_LAYER % (quant, method, gpu))
    code, doc = _run(["explain", "--config", str(path)], capsys)
    if outcome == "refused":
        (issue,) = doc["issues"]
        assert code == 2 and (issue["keyword"], issue["path"], issue["file"], issue["value"]) == ("supported_quantization", "$.model.quant_method", str(path), method)
    else:
        assert code in (0, 1) and "issues" not in doc
        noted = [n for n in doc["notes"] if "supported_quantization" in n]
        assert bool(noted) == (outcome == "noted")


# --- diff and why-not -----------------------------------------------------------------------------


def test_diff_to_a_gpu_whose_platform_refuses_the_checkpoint_is_refused(capsys):
    for extra in ([], ["--quant", "nvfp4"]):  # a whole model (its plan), and one layer
        issue = _issue(["diff", "--model", NVFP4, *extra, "--from", "gpu:H200", "--to", "gpu:ARC_B580"], capsys)
        assert issue["keyword"] == "supported_quantization" and "ARC_B580 (xpu)" in issue["message"]


def test_why_not_never_moves_the_checkpoint_to_a_platform_that_refuses_it(tmp_path, capsys):
    """vLLM 0.29.0's XPU list lacks moe_wna16, so --gpu ARC_B580 alone (what it answered before)
    is no fix; from 0.30.0 it is."""
    ck = _checkpoint(tmp_path, "gptq", GPTQ)
    for release, gpu_alone in (("0.29.0", False), ("0.30.0", True)):
        code, doc = _run(["why-not", "--backend", "xpu", "--gpu", "H200", "--package", f"vllm=={release}", "--serve", f"vllm serve {ck} -q moe_wna16"], capsys)
        flags = [a["flags"] for a in doc.get("alternatives", [])]
        assert ("--gpu ARC_B580" in flags) == gpu_alone, flags


def test_why_not_moves_to_a_refusing_platform_only_with_other_numerics(capsys):
    """An NVFP4 checkpoint cannot run on XPU; a fix that also changes --quant is another checkpoint."""
    code, doc = _run(["why-not", "--backend", "xpu", "--gpu", "H200", "--model", NVFP4], capsys)
    assert code == 0
    for alt in doc["alternatives"]:
        assert "--quant" in alt["flags"], alt["flags"]


def test_the_search_takes_no_answer_the_engine_would_not_start_with():
    """whynot.search_eligible's ``admissible``: inputs it refuses are no answer (the CLI passes
    deployment.platform_admits for the checkpoint's method)."""
    from moe_oracle.core.environment import Environment
    from moe_oracle.inputs.files import config_from_document
    from moe_oracle.core.oracle import Oracle, default_catalog
    from moe_oracle.core.vocab import Platform

    catalog = default_catalog()
    doc = {"model": {"num_experts": 64, "top_k": 4, "hidden_size": 1024, "intermediate_size": 512, "activation": "silu", "quant": "fp8_block", "quant_method": "fp8"}, "device": {"gpu": "H200"}}
    config = config_from_document(doc, catalog).config
    oracle = Oracle(catalog, Environment())
    moved = why_not(oracle, config, "xpu", n=3)
    assert any(a.config.device.platform is Platform.XPU for a in moved.alternatives)
    kept = why_not(oracle, config, "xpu", n=3, admissible=lambda c, e: c.device.platform is not Platform.XPU)
    assert not any(a.config.device.platform is Platform.XPU for a in kept.alternatives)


# --- --quant next to a checkpoint: another checkpoint of its format ---------------------------------
# moe-oracle's --quant (a config file's model.quant) gives a checkpoint's layer other experts: vLLM
# cannot run this checkpoint so, so the answer is for another checkpoint of the same format with
# those experts. Its method is not the document's: the document's platform check is noted, and the
# layer is held to the methods such a checkpoint can have (deployment.verify_layer_quantization), on
# every path and in why-not's search alike (moe_oracle.inputs.deployment: _verify_quantization, admissible).


def _nvfp4(kind: str, tmp_path: Path) -> list[str]:
    """The ModelOpt NVFP4 example as --model, --serve or a config file's model.hf_config."""
    if kind == "model":
        return ["--model", NVFP4]
    if kind == "serve":
        return ["--serve", f"vllm serve {EXAMPLES / (NVFP4 + '.json')}"]
    path = tmp_path / "layer.yaml"
    path.write_text(f"model: {{hf_config: {NVFP4}}}\ndevice: {{gpu: H200}}\n")
    return ["--config", str(path)]


@pytest.mark.parametrize("kind", ["model", "serve", "config"])
@pytest.mark.parametrize(("quant", "kernel"), [("unquantized", "xpu"), ("fp8_block", "xpu_block_fp8")])
def test_quant_next_to_a_checkpoint_answers_for_another_checkpoint_with_a_note(kind, quant, kernel, tmp_path, capsys):
    """The why-not fix `--gpu ARC_B580 --quant unquantized` was refused by select (modelopt_fp4 on XPU)."""
    code, doc = _run(["explain", *_nvfp4(kind, tmp_path), "--gpu", "ARC_B580", "--quant", quant], capsys)
    assert code == 0 and doc["selected"]["kernel"] == kernel, doc.get("issues")
    (note,) = [n for n in doc["notes"] if "another checkpoint" in n]
    assert note.startswith(f"--quant {quant}:") and "modelopt_fp4" in note and "ARC_B580 (xpu)" in note


@pytest.mark.parametrize("kind", ["model", "serve", "config"])
@pytest.mark.parametrize("quant", [[], ["--quant", "nvfp4"]], ids=["no-quant", "its-own-experts"])
def test_the_checkpoints_own_experts_keep_its_method_checked(kind, quant, tmp_path, capsys):
    """A config file's hf_config checkpoint is checked as --model checks it: the document's method
    (modelopt_fp4), not the layer's possible methods (it said 'modelopt_fp4 or modelopt_mixed')."""
    issue = _issue(["select", *_nvfp4(kind, tmp_path), "--gpu", "ARC_B580", *quant], capsys)
    assert (issue["keyword"], issue["path"], issue["value"]) == ("supported_quantization", "config.json quantization_config quant_method", "modelopt_fp4")


def test_a_config_files_own_quant_is_another_checkpoint_too(tmp_path, capsys):
    """model.quant in the file is --quant's twin; --quant fp8_block on the nvfp4 file was answered
    while the file alone was refused, and `--model ... --quant fp8_block` too: now all three agree."""
    path = tmp_path / "layer.yaml"
    path.write_text(f"model: {{hf_config: {NVFP4}, quant: fp8_block}}\ndevice: {{gpu: ARC_B580}}\n")
    code, doc = _run(["explain", "--config", str(path)], capsys)
    assert code == 0 and doc["selected"]["kernel"] == "xpu_block_fp8"
    assert any(n.startswith(f"$.model.quant of {path}: the answer is for another checkpoint") for n in doc["notes"])
    for argv in (["--config", str(path), "--quant", "fp8_block"], ["--model", NVFP4, "--gpu", "ARC_B580", "--quant", "fp8_block"]):
        code, other = _run(["select", *argv], capsys)
        assert code == 0 and other["selected"]["kernel"] == "xpu_block_fp8"


QUARK_FP8 = {"quant_method": "quark", "export": {"kv_cache_group": [], "pack_method": "reorder"}, "exclude": [], "layer_quant_config": {}, "layer_type_quant_config": {},
             "global_quant_config": {"weight": {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False},
                                     "input_tensors": {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False}, "output_tensors": None, "bias": None}}


def test_another_checkpoint_is_held_to_the_methods_of_its_format(tmp_path, capsys):
    """No quark checkpoint starts on XPU, whatever its experts: refused at --quant (before, the
    refusal named the document, and why-not took the edit as admitted)."""
    ck = _checkpoint(tmp_path, "quark", QUARK_FP8)
    issue = _issue(["select", "--model", str(ck), "--gpu", "ARC_B580", "--quant", "fp8_tensor_dynamic"], capsys)
    assert (issue["keyword"], issue["path"], issue["value"]) == ("supported_quantization", "--quant", "quark")
    code, doc = _run(["why-not", "--backend", "xpu", "--model", str(ck), "--gpu", "H200"], capsys)
    assert not any("ARC_B580" in a["flags"] for a in doc.get("alternatives", [])), doc


def test_a_method_the_serve_lines_flag_chose_stays_checked_under_another_quant(tmp_path, capsys):
    """-q moe_wna16 takes any 4/8-bit GPTQ checkpoint as moe_wna16: the serve line's choice, so
    another checkpoint of the format is refused on ROCm too, and why-not offers no such fix."""
    ck = _checkpoint(tmp_path, "gptq", GPTQ)
    serve = ["--serve", f"vllm serve {ck} -q moe_wna16"]
    issue = _issue(["select", "--gpu", "MI300X", *serve, "--quant", "int8_w16"], capsys)
    assert (issue["keyword"], issue["path"], issue["value"]) == ("supported_quantization", "--serve --quantization", "moe_wna16")
    code, doc = _run(["why-not", "--backend", "aiter", "--gpu", "H200", *serve], capsys)
    for alt in doc.get("alternatives", []):
        rerun, _ = _run(["select", "--gpu", "H200", *serve, *alt["flags"].split()], capsys)
        assert rerun != 2, alt["flags"]


# --- a config file's quant_method: vLLM's methods of the release that moe-oracle models --------------


@pytest.mark.parametrize(("value", "why"), [
    ("bogus", "Unknown quantization method: bogus"),
    ("ptpc_fp8", "fp8_per_channel"),  # the tables' rules on it follow vLLM main; no modelled release has it
    ("", "empty quant_method"),
    ("humming", "does not model"),  # vLLM knows it; its MoE method's choice is not modelled
    ("int8_per_channel_weight_only", "does not model"),  # an online shorthand moe-oracle does not model (fp8_per_block it does)
], ids=lambda v: v or "empty")
def test_a_config_files_quant_method_must_be_a_modelled_method_of_the_release(value, why, tmp_path, capsys):
    from moe_oracle.inputs.quant_checks import modelled_quant_methods

    path = tmp_path / "layer.yaml"
    path.write_text(_LAYER % ("fp8_block", repr(value), "H200"))
    issue = _issue(["select", "--config", str(path), "--package", "vllm==0.31.0"], capsys)
    assert (issue["path"], issue["keyword"], issue["value"], issue["file"]) == ("$.model.quant_method", "enum", value, str(path))
    assert issue["allowed"] == list(modelled_quant_methods("0.31.0")) and why in issue["message"] and "0.31.0" in issue["message"]


@pytest.mark.parametrize(("named", "family", "quant", "gpu"), [
    ("modelopt_fp4", "modelopt", "nvfp4", "B200"),
    ("modelopt_mixed", "modelopt", "fp8_block", "H200"),
    ("auto_gptq", "gptq", "int4_w16", "H200"),
    ("awq_marlin", "awq", "int4_w16", "H200"),
    ("deepseek_v4_fp8", "fp8", "fp8_block", "H200"),
])
def test_vllms_name_for_an_overrides_method_is_read_as_the_format_it_overrides(named, family, quant, gpu, tmp_path, capsys):
    """The tables key quant_method on the checkpoint format (modelopt), as the checkpoint reader
    gives it; vLLM's name for the override's method (modelopt_fp4) used to match none of them."""
    answers = []
    for method in (named, family):
        path = tmp_path / f"{method}.yaml"
        path.write_text(_LAYER % (quant, method, gpu))
        code, doc = _run(["explain", "--config", str(path)], capsys)
        assert code in (0, 1), doc
        answers.append((doc["selected"], [c["kernel"] for c in doc["candidates"] if c["status"] == "eligible"], doc["inputs"]["quant_method"]["value"]))
    assert answers[0] == answers[1] and answers[0][2] == family


@pytest.mark.parametrize(("method", "quant", "gpu", "outcome"), [
    ("modelopt_fp4", "nvfp4", "ARC_B580", "refused"),  # the method vLLM ends with: XPU does not list it
    ("modelopt_fp4", "nvfp4", "MI300X", "answered"),
    ("modelopt_mixed", "fp8_block", "ARC_B580", "refused"),  # modelopt (listed) is not this name
    ("nvfp4_per_token", "nvfp4", "ARC_B580", "refused"),  # an online method the tables read: not gated before
    ("gpt_oss_mxfp4", "mxfp4_w16", "ARC_B580", "answered"),
])
def test_a_config_files_exact_method_is_the_one_the_platform_checks(method, quant, gpu, outcome, tmp_path, capsys):
    path = tmp_path / "layer.yaml"
    path.write_text(_LAYER % (quant, method, gpu))
    code, doc = _run(["explain", "--config", str(path)], capsys)
    if outcome == "refused":
        (issue,) = doc["issues"]
        assert code == 2 and (issue["keyword"], issue["path"], issue["value"]) == ("supported_quantization", "$.model.quant_method", method)
        assert f"'{method} quantization is currently not supported in xpu.'" in issue["message"]
    else:
        assert code in (0, 1) and "issues" not in doc, doc


def test_every_quant_method_the_tables_read_is_allowed_or_named_why_not():
    """What the tables compare quant_method (and moe_quant_method) against, every release allows in
    a config file, but fp8_requant_mxfp4 (a front-end rewrite's method, never a checkpoint's):
    quant_checks._NOT_A_RELEASE_METHOD, which also names ptpc_fp8 (vLLM main's name, which no
    modelled release has and the tables no longer read: fp8_per_channel is the releases')."""
    import yaml

    from moe_oracle.inputs.quant_checks import _NOT_A_RELEASE_METHOD
    from moe_oracle.inputs.quant_checks import modelled_quant_methods

    read: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("quant_method", "moe_quant_method") and isinstance(value, list):
                    read.update(v for v in value if isinstance(v, str))
                walk(value)
            if node.get("field") in ("quant_method", "moe_quant_method"):
                for key in ("in", "not_in"):
                    read.update(v for v in node.get(key) or () if isinstance(v, str))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    root = Path(__file__).parents[2] / "moe_oracle"
    for path in [*root.glob("kernels/*.yaml"), *root.glob("rules/*.yaml"), *root.glob("runtime_tables/**/*.yaml")]:
        walk(yaml.safe_load(path.read_text()))
    assert {"modelopt", "compressed-tensors", "gpt_oss_mxfp4", "nvfp4_per_token", "fp8_per_channel", "fp8_per_tensor", "fp8_per_block"} <= read
    for release in RELEASES:
        assert read - set(modelled_quant_methods(release)) - {"none"} == set(_NOT_A_RELEASE_METHOD) - {"ptpc_fp8"}, release
