"""What a dead end's fix list and why-not offer: the variable that disables a kernel is among the
fixes, no fix is another fix plus needless changes, and each fix runs as printed (the QA pass of
session 17). Each test failed on the code before its change."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from moe_oracle.cli import build_parser
from tests.cli_capture import cli, select_json

MORI = ["--model", "qwen3-30b-a3b-fp8", "--gpu", "MI300X", "--dp", "8", "--ep", "--package", "mori==1.0.0"]


def _parts(flags: str) -> frozenset[str]:
    """A fix's options, one item each (``--tp 1``, ``--ep``)."""
    out: list[list[str]] = []
    for word in flags.split():
        if word.startswith("--") or not out:
            out.append([word])
        else:
            out[-1].append(word)
    return frozenset(" ".join(o) for o in out)


def _rechecked(argv: list[str], fix: dict) -> None:
    """The fix pasted after the original flags selects the kernel it claims."""
    build_parser().parse_args(["select", *argv, *fix["flags"].split()])
    code, record, _ = select_json(*argv, *fix["flags"].split())
    assert code == 0 and record["selected"]["kernel"] == fix["winner_after"], fix


# ----------------------------------------------------------------------------- 1. environment variables


@pytest.mark.parametrize(("release", "all2all", "env", "fix"), [
    ("0.34.0", "mori", "VLLM_ROCM_USE_AITER=0", "--env VLLM_ROCM_USE_AITER=1"),
    ("0.33.0", "mori_low_latency", "VLLM_ROCM_USE_AITER=0", "--env VLLM_ROCM_USE_AITER=1"),
    ("0.34.0", "mori", "VLLM_ROCM_USE_AITER_MOE=0", "--env VLLM_ROCM_USE_AITER_MOE=1"),
], ids=["aiter-0.34", "aiter-0.33", "aiter-moe-0.34"])
def test_a_dead_end_a_variable_causes_offers_to_set_it(release: str, all2all: str, env: str, fix: str) -> None:
    # constraint.mori_needs_aiter.*: the MoRI all2all needs AITER fused MoE (env_disabled). Its
    # condition (the dispatch) came first, so three parallel flags of equal cost filled the list
    # and the variable was never offered.
    argv = [*MORI, "--all2all", all2all, "--env", env, "--env", "VLLM_ROCM_USE_AITER=1" if "MOE" in env else "VLLM_ROCM_USE_AITER_MOE=1", "--package", f"vllm=={release}"]
    code, record, _ = select_json(*argv)
    assert code == 1 and record["blocking"][0]["code"] == "env_disabled"
    offered = [f for f in record["fixes"] if f["flags"] == fix]
    assert offered, [f["flags"] for f in record["fixes"]]
    _rechecked(argv, offered[0])
    code, out, _ = cli("select", *argv)
    assert code == 1 and f"1. {fix}  [cost 1" in out


def test_why_not_offers_the_variable_that_disables_the_backend_and_it_runs_as_printed() -> None:
    # The fix sets a variable the command already declares: appended, it used to be refused
    # ("--env VLLM_ROCM_USE_AITER: declared twice with different values"); now the last wins, said.
    argv = [*MORI, "--all2all", "mori", "--env", "VLLM_ROCM_USE_AITER=0"]
    code, out, _ = cli("why-not", "--backend", "aiter", *argv, "--json")
    record = json.loads(out)
    assert code == 0 and record["alternatives"][0]["flags"] == "--env VLLM_ROCM_USE_AITER=1"
    _rechecked(argv, record["alternatives"][0])
    _, _, err = cli("select", *argv, "--env", "VLLM_ROCM_USE_AITER=1")
    assert "--env VLLM_ROCM_USE_AITER given more than once: the last ('1') is used, not '0'" in err


# ----------------------------------------------------------------------------- 2. dominated fixes


@pytest.fixture(scope="module")
def heads_split_3_ways(tmp_path_factory) -> str:
    """The NVFP4 Qwen3.5-122B-A10B checkpoint with 48 attention heads: TP 3 passes ModelConfig's
    head check (its 32 heads refuse it at start), while the 1,024 expert intermediate size still
    does not split 3 ways, the dead end these fix lists come from."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "models"
    cfg = json.loads((examples / "nvidia-qwen3.5-122b-a10b-nvfp4.json").read_text(encoding="utf-8"))
    cfg["text_config"]["num_attention_heads"] = 48
    where = tmp_path_factory.mktemp("heads48")
    (where / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    shutil.copy(examples / "nvidia-qwen3.5-122b-a10b-nvfp4.hf_quant_config.json", where / "hf_quant_config.json")
    return str(where / "config.json")


@pytest.mark.parametrize("argv", [
    # was: --ep, --tp 1 --dp 3 --ep --all2all allgather_reducescatter, --tp 1
    ["--gpu", "RTX_PRO_6000", "--moe-backend", "cutlass", "--tp", "3"],
    # was: --moe-backend auto --ep, --moe-backend auto --tp 1 --dp 3 --ep --all2all ..., twice
    ["--gpu", "L40S", "--moe-backend", "flashinfer_trtllm", "--tp", "3"],
    ["--gpu", "MI300X", "--tp", "3"],
], ids=["cutlass-rtx", "trtllm-l40s", "auto-mi300x"])
def test_no_fix_is_another_fix_plus_more(argv: list[str], heads_split_3_ways: str) -> None:
    argv = ["--model", heads_split_3_ways, *argv]
    code, record, _ = select_json(*argv)
    assert code == 1 and record["fixes"]
    parts = [_parts(f["flags"]) | frozenset(f["changes"]) for f in record["fixes"]]
    assert not any(a < b for a in parts for b in parts), [f["flags"] for f in record["fixes"]]
    for fix in record["fixes"]:
        if not fix["changes"]:
            _rechecked(argv, fix)


def test_a_dominated_fix_found_first_is_dropped_for_the_smaller_one() -> None:
    from moe_oracle.explain.whynot_edits import Alternative, Edit
    from moe_oracle.explain.whynot_search import _add_undominated

    def alt(*edits: Edit) -> Alternative:
        return Alternative(edits, "k", None, None, None)  # type: ignore[arg-type]

    ep = Edit("parallel.use_ep", False, True, 1)
    preset = Edit("parallel", "tp=3 dp=1", "tp=1 dp=3 ep all2all=naive", 1)  # a tie, found first
    found: list[Alternative] = []
    _add_undominated(found, alt(preset))
    _add_undominated(found, alt(ep))
    _add_undominated(found, alt(preset))
    assert [a.flags() for a in found] == ["--ep"]


# ----------------------------------------------------------------------------- 4. a backend request as the fix

TP16 = ["--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "16"]


def test_requesting_a_backend_vllm_pads_the_shard_for_is_a_one_flag_fix() -> None:
    # 768 / 16 = 48 fails the 128-wide FP8 block under auto; for a backend requested by name vLLM
    # 0.31.0+ pads the shard (constraint.fp8_block_tp_alignment's condition reads weight_block,
    # derived from moe_backend). The search never proposed a request: the cheapest fixes were --ep
    # and redeployments of 1 or 2 GPUs.
    code, record, _ = select_json(*TP16)
    assert code == 1
    requests = [f for f in record["fixes"] if f["flags"].startswith("--moe-backend ") and f["cost"] == 1]
    assert requests, [f["flags"] for f in record["fixes"]]
    for fix in record["fixes"]:
        _rechecked(TP16, fix)


@pytest.mark.parametrize("extra", [["--lora"], ["--package", "vllm==0.30.0"]], ids=["lora-refuses-padding", "0.30-no-padding"])
def test_a_backend_request_is_offered_only_where_the_engine_takes_it(extra: list[str]) -> None:
    # vLLM refuses to pad under LoRA (constraint.fp8_block_tp_padding) and 0.30.0 pads nothing:
    # a one-flag request that the engine would refuse is never a fix; each fix offered runs as printed.
    argv = [*TP16, *extra]
    code, record, _ = select_json(*argv)
    assert code == 1 and record["fixes"]
    for fix in record["fixes"]:
        assert not re.fullmatch(r"--moe-backend \S+", fix["flags"]), fix["flags"]
        _rechecked(argv, fix)


def test_a_hint_to_request_an_outranked_kernel_is_rechecked() -> None:
    # Unquantized LoRA on B200: the engine returns TrtLlmBf16LoRAExperts before it reads
    # moe_backend (shortcut.unquantized_lora.checked), so "request it with --moe-backend triton"
    # was a hint that did not run triton.
    argv = ["--model", "qwen3-30b-a3b", "--gpu", "B200", "--tp", "2", "--lora"]
    code, out, _ = cli("why-not", "--backend", "triton", *argv)
    assert code == 0 and "request it with --moe-backend triton" not in out
    assert "--moe-backend triton does not run it: the engine then selects flashinfer_trtllm_bf16_lora" in out
    code, record, _ = select_json(*argv, "--moe-backend", "triton")
    assert code == 0 and record["selected"]["kernel"] == "flashinfer_trtllm_bf16_lora"


NO_CUBIN = ["--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--package", "flashinfer-python==0.6.1", "--without", "flashinfer-cubin", "--tool", "jit_nvcc=no"]


def test_a_hint_to_request_an_outranked_kernel_that_works_is_kept() -> None:
    code, out, _ = cli("why-not", "--backend", "flashinfer_cutlass", *NO_CUBIN)
    assert code == 0 and ". --package flashinfer-cubin  [cost 2, tie]" in out and "(add --moe-backend flashinfer_cutlass to run it)" in out
    # The fix applied (appended, it would meet --without flashinfer-cubin, which is refused), then the hint.
    with_cubin = [w if w != "--without" else "--package" for w in NO_CUBIN]
    code, record, _ = select_json(*with_cubin, "--moe-backend", "flashinfer_cutlass")
    assert code == 0 and record["selected"]["kernel"] == "flashinfer_cutlass"
