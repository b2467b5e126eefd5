"""Every fix why-not and a dead end print is flags the CLI takes: pasted after the original
flags, ``select`` parses them and picks the winner the fix claims; changes no flag makes are
worded apart (``changes``), and a --moe-backend hint names a value the flag accepts."""

from __future__ import annotations

import json
import re

import pytest

from moe_oracle.cli import build_parser, main
from moe_oracle.explain.whynot_edits import Alternative, Edit

WHY_NOT = [
    ("cutlass", ["--model", "deepseek-r1", "--gpu", "B200", "--tp", "8", "--keep", "device,parallel"]),
    ("flashinfer_b12x", ["--model", "qwen3-30b-a3b", "--gpu", "RTX_PRO_6000", "--dp", "8", "--ep"]),
    # The platform's own MoE runs only on a TPU (CPU and XPU refuse an FP8 layer with no backend
    # at load), and the why-not device moves are catalog GPUs, which hold no TPU.
    ("platform", ["--model", "kimi-k3", "--platform", "tpu"]),
    ("aiter_mxfp4_mxfp4", ["--model", "deepseek-v3.2", "--gpu", "A100", "--dp", "8", "--ep"]),
    ("flashinfer_cutlass_afp8", ["--model", "redhatai-deepseek-v4-flash-nvfp4-fp8", "--gpu", "B200", "--dp", "8", "--ep"]),
    ("flashinfer_trtllm", ["--model", "minimax-m2", "--gpu", "B200", "--tp", "4"]),
    ("deep_gemm", ["--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"]),
    # XPU refuses this checkpoint's method (modelopt_fp4): each fix moves to ARC_B580 with another
    # --quant, i.e. another checkpoint of its format, which select answers as the fix claims.
    ("xpu", ["--model", "nvidia-qwen3.5-122b-a10b-nvfp4", "--gpu", "H200"]),
    ("xpu", ["--serve", "vllm serve nvidia-qwen3.5-122b-a10b-nvfp4", "--gpu", "H200"]),
]
DEAD_ENDS = [
    ["--model", "qwen3-30b-a3b", "--gpu", "RTX_PRO_6000", "--quant", "nvfp4", "--tp", "8", "--ep", "--moe-backend", "flashinfer_b12x"],
    ["--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--moe-backend", "cutlass"],  # vLLM raises on the request itself
]


def _split(argv: list[str]) -> list[str]:
    keep = argv.index("--keep") if "--keep" in argv else None
    return argv if keep is None else argv[:keep] + argv[keep + 2:]


def _json(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def _set_by(flags: list[str]) -> list[str]:
    """What each option of a fix sets (``--no-ep`` and ``--ep`` the same; ``--env VAR=..`` per variable)."""
    keys = []
    for i, word in enumerate(flags):
        if not word.startswith("--"):
            continue
        key = word.replace("--no-", "--", 1)
        if key in ("--env", "--package", "--without") and i + 1 < len(flags):
            key = ("--package" if key == "--without" else key) + " " + re.split(r"==|=", flags[i + 1])[0]
        keys.append(key)
    return keys


def _check_fix(capsys, base: list[str], fix: dict) -> None:
    flags = fix["flags"].split()
    assert not re.search(r"\bno --|\(|->", fix["flags"]), fix["flags"]
    keys = _set_by(flags)
    assert len(keys) == len(set(keys)), f"fix {fix['flags']!r} repeats a flag"
    parser = build_parser()
    before = parser.parse_args(["select", *base])
    after = parser.parse_args(["select", *base, *flags])  # SystemExit(2) on a flag the CLI lacks
    if fix["changes"]:
        return  # another checkpoint or model: not reachable by flags alone
    assert vars(after) != vars(before), f"fix {fix['flags']!r} repeats the current settings"
    _, record = _json(capsys, ["select", *base, *flags, "--json"])
    assert record["selected"] is not None and record["selected"]["kernel"] == fix["winner_after"], fix


@pytest.mark.parametrize(("backend", "argv"), WHY_NOT, ids=[f"{b}-{a[1]}" for b, a in WHY_NOT])
def test_why_not_fixes_are_pasteable(capsys, backend, argv):
    code, record = _json(capsys, ["why-not", "--backend", backend, *argv, "--json"])
    assert code == 0
    for alt in record["alternatives"]:
        _check_fix(capsys, _split(argv), alt)
    main(["why-not", "--backend", backend, *argv])
    text = capsys.readouterr().out
    for name in set(re.findall(r"--moe-backend (\S+?)[ )]", text)):
        code = main(["select", *_split(argv), "--moe-backend", name])
        capsys.readouterr()
        assert code != 2, f"--moe-backend {name} is refused"


@pytest.mark.parametrize("argv", DEAD_ENDS)
def test_dead_end_fixes_are_pasteable(capsys, argv):
    code, record = _json(capsys, ["select", *argv, "--json"])
    assert code == 1 and record["fixes"]
    shown = [f["flags"] for f in record["fixes"]]
    assert len(shown) == len(set(shown))
    for fix in record["fixes"]:
        _check_fix(capsys, argv, fix)


# A sampled layer (sample_configs seed 3, #1290) where the search edits --tp and then redeploys
# the same GPUs: the redeployment's --tp used to follow the first one (`--tp 1 --tp 8 --dp 1`).
# model_type gpt_oss keeps the layer on the generic MXFP4 selector it was found with (without a
# model_type, its deepseek_v4 routing now rules GPT-OSS out: core/normalize.gpt_oss_ruled_out).
REDEPLOYED_TWICE = {
    "model": {"num_experts": 8, "top_k": 5, "hidden_size": 5120, "intermediate_size": 8192, "activation": "silu", "quant": "mxfp4_mxfp4",
              "quant_method": "mxfp4", "routing_method": "deepseek_v4", "in_dtype": "float32", "model_type": "gpt_oss"},
    "device": {"gpu": "MI325X"},
    "parallel": {"tp_size": 2, "dp_size": 8, "all2all_backend": "deepep_high_throughput"},
    "batch_invariant": True,
    "environment": {"env": {"VLLM_B12X_MOE_FP4_FORCE_A16": "1", "VLLM_MOE_USE_DEEP_GEMM": "0", "VLLM_ROCM_USE_AITER_MOE": "0", "VLLM_USE_DEEP_GEMM": "0"}},
}


def test_a_fix_that_edits_a_flag_twice_names_it_once(capsys, tmp_path):
    path = tmp_path / "layer.json"
    path.write_text(json.dumps(REDEPLOYED_TWICE))
    code, record = _json(capsys, ["why-not", "--backend", "aiter", "--config", str(path), "--keep", "device", "--json"])
    assert code == 0 and record["alternatives"]
    for alt in record["alternatives"]:
        _check_fix(capsys, ["--config", str(path)], alt)
    # The search found `--tp 1`, then the redeployment `--tp 8 --dp 1`, as one fix; it is now left
    # out because `--dp 1` alone works (tests/unit/test_fix_lists.py), so its edits are taken as found.
    env, inv = Edit("env.VLLM_ROCM_USE_AITER", None, "1", 1), Edit("batch_invariant", True, False, 1)
    twice = Alternative((env, inv, Edit("parallel.tp_size", 2, 1, 3), Edit("parallel", "tp=1 dp=8", "tp=8 dp=1", 3)), "k", None, None, None)  # type: ignore[arg-type]
    assert twice.flags() == "--env VLLM_ROCM_USE_AITER=1 --no-batch-invariant --env VLLM_BATCH_INVARIANT=0 --tp 8 --dp 1"


def test_merged_flags_keep_the_last_value_at_the_first_place():
    from moe_oracle.core.environment import ABSENT
    from moe_oracle.explain.whynot_edits import Alternative, Edit

    edits = (Edit("parallel.use_ep", False, True, 1), Edit("parallel.tp_size", 2, 1, 3), Edit("parallel", "tp=1 dp=8", "tp=8 dp=1", 3),
             Edit("packages.deep-gemm", ABSENT, "2.1.0", 2), Edit("packages.deep_gemm", "2.1.0", ABSENT, 2), Edit("parallel.use_ep", True, False, 1))
    assert Alternative(edits, "k", None, None, None).flags() == "--no-ep --tp 8 --dp 1 --without deep_gemm"


def test_non_flag_change_is_worded_apart(capsys):
    _, record = _json(capsys, ["why-not", "--backend", "cutlass", "--model", "deepseek-r1", "--gpu", "B200", "--tp", "8", "--keep", "device,parallel", "--json"])
    worded = [a for a in record["alternatives"] if a["changes"]]
    assert worded and all("quant_method" not in a["flags"] and "checkpoint" in a["changes"][0] for a in worded)


def test_no_ep_turns_ep_off(capsys):
    _, on = _json(capsys, ["select", "--model", "qwen3-30b-a3b", "--gpu", "RTX_PRO_6000", "--quant", "nvfp4", "--tp", "8", "--ep", "--moe-backend", "flashinfer_b12x", "--json"])
    _, off = _json(capsys, ["select", "--model", "qwen3-30b-a3b", "--gpu", "RTX_PRO_6000", "--quant", "nvfp4", "--tp", "8", "--ep", "--moe-backend", "flashinfer_b12x", "--no-ep", "--json"])
    assert on["selected"] is None and off["selected"]["kernel"] == "flashinfer_b12x"


SERVE_DEAD_END = "vllm serve Qwen/Qwen3-30B-A3B-FP8 --tensor-parallel-size 16"


def test_dead_end_fixes_of_a_serve_line_are_serve_line_edits(capsys):
    """A deployment given as a vllm serve line gets its fixes as edits of that line: the
    moe-oracle flags would be refused next to it (one setting given both ways). vLLM's argparse
    keeps a repeated flag's last value, so appending the edits to the line applies them."""
    argv = ["select", "--gpu", "H200", "--serve", SERVE_DEAD_END]
    code, record = _json(capsys, [*argv, "--json"])
    assert code == 1 and record["fixes"]
    for fix in record["fixes"]:
        edits, rest = fix["serve_line"]["edits"], fix["serve_line"]["flags"]
        assert edits and "--tp" not in edits.split(), fix
        _, after = _json(capsys, ["select", "--gpu", "H200", "--serve", f"{SERVE_DEAD_END} {edits}", *rest.split(), "--json"])
        assert after["selected"] is not None and after["selected"]["kernel"] == fix["winner_after"], fix
    main(argv)
    text = capsys.readouterr().out
    assert "1. in the vllm serve line: --enable-expert-parallel" in text and "--tp 1" not in text


@pytest.mark.parametrize("model", [
    {"hf_config": "nvidia-qwen3.5-122b-a10b-nvfp4"},
    {"num_experts": 256, "top_k": 8, "hidden_size": 3072, "intermediate_size": 1024, "activation": "silu", "quant": "nvfp4", "quant_method": "modelopt"},
], ids=["hf_config", "explicit"])
def test_why_not_fixes_of_a_config_file_the_platform_gates_are_pasteable(model, capsys, tmp_path):
    """The same fixes for a --config layer, checkpoint or field by field: pasted after --config FILE."""
    path = tmp_path / "layer.json"
    path.write_text(json.dumps({"model": model, "device": {"gpu": "H200"}}))
    code, record = _json(capsys, ["why-not", "--backend", "xpu", "--config", str(path), "--json"])
    assert code == 0 and record["alternatives"]
    for alt in record["alternatives"]:
        _check_fix(capsys, ["--config", str(path)], alt)


def test_a_fix_whose_kernel_fails_when_built_is_not_offered(capsys):
    """TP 16 on an XPU: DP 16 + EP over DeepEP high-throughput selects xpu_block_fp8 (vLLM does not
    check its prepare/finalize), which then fails when built (DeepEP runs on CUDA and ROCm only):
    the answer carries an `unchecked` warning, so it is no fix. DP 16 + EP over allgather is."""
    line = "vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 16"
    assert main(["select", "--gpu", "ARC_B580", "--serve", line, "--json"]) == 1
    fixes = json.loads(capsys.readouterr().out)["fixes"]
    flags = [f["serve_line"]["edits"] for f in fixes]
    # The redeployments over an all2all (DeepEP's would fail when built) contain the first fix,
    # --enable-expert-parallel, and are left out as that fix plus needless changes.
    assert not any("deepep" in f for f in flags) and flags[0] == "--enable-expert-parallel"
    for f in fixes:  # each one runs without a warning that it fails when built
        assert main(["select", "--gpu", "ARC_B580", "--serve", f"{line} {f['serve_line']['edits']}", "--json"]) == 0
        assert not [w for w in json.loads(capsys.readouterr().out).get("warnings", []) if w["code"] == "unchecked"]


@pytest.mark.parametrize("argv", [["--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--moe-backend", "cutlass"],
                                  ["--serve", "vllm serve qwen3-30b-a3b-fp8 --moe-backend cutlass", "--gpu", "H200"]], ids=["flags", "serve"])
def test_a_dead_end_request_can_be_dropped_by_a_fix(capsys, argv):
    """The dead end's fixes kept the request (--moe-backend cutlass, which vLLM refuses on block
    FP8 before trying a kernel) and offered only other checkpoints (cost 4 and 8); dropping the
    request, one flag, is the smallest change, and the fixes that keep it are still offered."""
    code, record = _json(capsys, ["select", *argv, "--json"])
    fixes = record["fixes"]
    assert code == 1 and fixes[0]["edits"] == [{"target": "moe_backend", "before": "cutlass", "after": "auto", "cost": 1, "flag": "--moe-backend auto", "change": None}]
    assert fixes[0]["winner_after"] == "triton"
    assert any(f["flags"] == "--quant w4a8_fp8" for f in fixes)  # keeping the request: another checkpoint
    if "--serve" not in argv:
        for fix in fixes:
            _check_fix(capsys, argv, fix)
        return
    assert fixes[0]["serve_line"] == {"edits": "--moe-backend auto", "flags": ""}
    code, after = _json(capsys, ["select", "--serve", f"{argv[1]} --moe-backend auto", *argv[2:], "--json"])  # vLLM's argparse keeps the last value
    assert code == 0 and after["selected"]["kernel"] == "triton"
