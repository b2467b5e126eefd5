"""What ``--help`` and the refusals say matches what the commands take.

Before: ``plan --quantization`` took only moe_wna16 and its help did not say so; ``plan --help``
cited "vLLM 0.33.0 SpeculativeConfig" while answers default to 0.34.0; ``why-not --backend
bogus`` listed ``auto`` and names (``aiter_mega_moe``, ...) that why-not then refused.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.core.errors import ConfigError
from moe_oracle.core.requests import resolve_request
from moe_oracle.explain.whynot import why_not
from moe_oracle import MoEConfig, Oracle
from moe_oracle.core.config import Device
from tests.cli_capture import cli


def test_plan_help_says_what_quantization_takes_and_cites_every_release() -> None:
    _, out, _ = cli("plan", "--help")
    text = " ".join(out.split())
    assert "the one value taken is moe_wna16" in text
    assert "vLLM 0.33.0 SpeculativeConfig" not in text and "vLLM 0.29.0-0.34.0 vllm/config/speculative.py SpeculativeConfig.moe_backend" in text
    code, _, err = cli("plan", "--model", "deepseek-r1", "--gpu", "H200", "--quantization", "fp8")
    assert code == 2 and "invalid choice: 'fp8' (choose from 'moe_wna16')" in err


@pytest.mark.parametrize("name", ["bogus", "auto"])
def test_why_not_lists_only_the_backends_it_answers(name: str) -> None:
    code, out, _ = cli("why-not", "--backend", name, "--model", "deepseek-r1", "--gpu", "H200", "--json")
    assert code == 2
    allowed = json.loads(out)["issues"][0]["allowed"]
    assert "auto" not in allowed and not {"aiter_mega_moe", "deep_gemm_mega_moe", "flashinfer_moe_ep_mega_cutedsl"} & set(allowed)
    catalog = Oracle.default().catalog
    assert all(resolve_request(catalog, n, "--backend") for n in allowed)  # why_not's two gates: a name, mapping to a kernel


def test_a_name_why_not_refuses_for_mapping_to_no_kernel_is_not_offered() -> None:
    cfg = MoEConfig(num_experts=8, top_k=2, hidden_size=4096, intermediate_size=14336, device=Device("cuda", capability=90))
    with pytest.raises(ConfigError) as exc:
        why_not(Oracle.default(), cfg, "aiter_mega_moe")
    assert "names no kernel" in exc.value.issues[0].message and "aiter_mega_moe" not in exc.value.issues[0].allowed


@pytest.mark.parametrize(
    "command, codes",
    [
        ("explain", ("0 a kernel was selected", "1 nothing eligible", "2 bad input")),
        ("select", ("0 a kernel was selected", "1 nothing eligible", "2 bad input")),
        ("why-not", ("0 BACKEND is eligible already or changes that make it eligible were found", "1 no change found", "2 bad input")),
        ("plan", ("0 every MoE layer group got a kernel", "1 some group got none", "2 bad input")),
        ("run", ("0 the kernel ran", "1 nothing eligible", "2 bad input", "3 an optional dependency is missing")),
        ("lint", ("0 no errors", "1 errors", "2 bad input")),
        ("diff", ("0 it ran", "2 bad input")),
        ("matrix", ("0 printed", "2 bad input")),
        ("examples", ("0 printed",)),
        ("codes", ("0 printed",)),
        ("verify", ("exit codes: 0",)),
    ],
)
def test_every_command_help_states_its_own_exit_codes(command: str, codes: tuple[str, ...]) -> None:
    """Before, why-not's --help said "0 selected, 1 nothing eligible" (it answers found / not found),
    plan's said nothing though it exits 1, and run without torch exited 2 ("bad input")."""
    _, out, _ = cli(command, "--help")
    text = " ".join(out.split())
    assert "exit codes:" in text
    for code in codes:
        assert code in text, (command, code)
    if command != "explain" and command != "select":
        assert "0 selected, 1 nothing eligible" not in text


def test_why_not_exit_codes_are_the_ones_its_help_states() -> None:
    found = cli("why-not", "--backend", "flashinfer_trtllm", "--model", "gpt-oss-120b", "--gpu", "H200", "--tp", "8")
    none = cli("why-not", "--backend", "flashinfer_trtllm", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--keep", "device")
    assert (found[0], none[0]) == (0, 1)


def test_run_without_torch_exits_3_with_the_error_record(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import jsonschema

    from moe_oracle.core._resources import schema_dir

    monkeypatch.setitem(sys.modules, "moe_oracle.runtime.runner", None)  # as where torch is not installed
    code, out, _ = cli("run", "--model", "qwen3-30b-a3b", "--tokens", "16", "--json")
    assert code == 3
    record = json.loads(out)
    jsonschema.validate(record, json.loads((schema_dir() / "bundled" / "error.schema.json").read_text(encoding="utf-8")))
    assert record["error"] == "MissingDependencyError" and "torch" in record["issues"][0]["message"]


def test_a_bare_package_name_is_documented_and_its_note_agrees_with_the_assumption() -> None:
    """Before, ``--package flashinfer-python`` (help: NAME==VERSION) was taken silently as installed
    at an unknown version, and explain noted "version rules on it abstain" while listing
    "packages.flashinfer-python is unknown; assumed installed": the installed check abstained too.
    It is deliberate (why-not's fixes write ``--package flashinfer-cubin``): the help says so and
    the note names the assumption."""
    _, out, _ = cli("explain", "--help")
    assert "A bare NAME, as why-not's fixes write it, declares it installed at an unknown version" in " ".join(out.split())
    code, out, err = cli("explain", "--model", "gpt-oss-120b", "--gpu", "B200", "--tp", "8", "--package", "flashinfer-python", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert any(a["field"] == "packages.flashinfer-python" for a in record["assumptions"])
    note = next(n for n in record["notes"] if n.startswith("flashinfer-python is declared installed without a version"))
    assert "(installed, version) abstain" in note and "packages.flashinfer-python is unknown" in note and "--package flashinfer-python==VERSION" in note


@pytest.mark.parametrize(
    "argv, had",
    [
        (("--model", "qwen3-30b-a3b-fp8"), "fp8_block (the checkpoint's quantization_config)"),
        (("--model", "qwen3-30b-a3b", "--hf-quant-config", "qwen3-30b-a3b-fp8"), "fp8_block (--hf-quant-config qwen3-30b-a3b-fp8)"),
        (("--model", "qwen3-30b-a3b"), "(none: the checkpoint is not quantized)"),
    ],
    ids=["checkpoint", "hf-quant-config", "unquantized"],
)
def test_quant_replacing_the_checkpoints_quantization_is_noted(argv: tuple[str, ...], had: str) -> None:
    """Before, --quant replaced the checkpoint's (or --hf-quant-config's) quantization silently."""
    note = f"--quant nvfp4 replaces the checkpoint's quantization {had}: the answer is for the layer quantized as nvfp4, a checkpoint other than the one given"
    code, out, err = cli("explain", *argv, "--gpu", "B200", "--quant", "nvfp4", "--json")
    assert code == 0, err
    assert note in json.loads(out)["notes"]
    code, out, err = cli("select", *argv, "--gpu", "B200", "--quant", "nvfp4")
    assert code == 0 and f"note: {note}" in err.splitlines()


def test_quant_naming_the_checkpoints_own_scheme_adds_no_note() -> None:
    code, out, _ = cli("explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "B200", "--quant", "fp8_block", "--json")
    assert code == 0 and not any("replaces the checkpoint's quantization" in n for n in json.loads(out)["notes"])
