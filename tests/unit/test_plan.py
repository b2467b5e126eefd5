"""Whole-model plans: grouping, the draft-backend rule, per-rank placement and agreement, CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.cli import main
from moe_oracle.core.config import Device, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.models import resolve_model_path
from moe_oracle.core.oracle import Oracle
from moe_oracle.core.placement import expert_placement
from moe_oracle.explain.plan import build_plan, layer_ranges
from moe_oracle.core.tables import load_schemas
from tests.tables_fixture import base_tables, load

H200 = lookup_hardware("H200").device
MIXTRAL_LIKE = {"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 256, "intermediate_size": 128, "num_local_experts": 8, "num_experts_per_tok": 2}
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
QWEN35_FP8_BF16_MTP = {"model_type": "qwen3_5_moe", "architectures": ["Qwen3_5MoeForConditionalGeneration"], "text_config": {
    "model_type": "qwen3_5_moe_text", "num_hidden_layers": 3, "hidden_size": 256, "moe_intermediate_size": 128, "num_experts": 16, "num_experts_per_tok": 2, "mtp_num_hidden_layers": 1},
    "quantization_config": {**FP8, "modules_to_not_convert": ["mtp.layers.0.mlp.experts.0.gate_proj"]}}


def test_layer_ranges_text():
    assert layer_ranges([0, 1, 2, 5, 7, 8]) == "0–2, 5, 7–8"
    assert layer_ranges(list(range(1, 48, 2))) == "1, 3, …, 47 (every 2)"


def test_identical_layers_form_one_group_and_every_layer_appears_once(catalog):
    ck = read_checkpoint({**MIXTRAL_LIKE, "model_type": "deepseek_v3", "moe_intermediate_size": MIXTRAL_LIKE["intermediate_size"], "n_routed_experts": 8, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1, "quantization_config": FP8})
    plan = build_plan(ck, Oracle(catalog), device=H200, parallel=ParallelConfig(tp_size=8))
    assert [(g.indices, g.kind, g.role) for g in plan.groups] == [((0,), "dense", "target"), ((1, 2, 3), "moe", "target"), ((4,), "moe", "draft")]
    assert plan.groups[1].decision.config.quant.name == "fp8_block" and plan.groups[0].decision is None


def test_the_draft_inherits_the_target_moe_backend(catalog):
    ck = read_checkpoint(QWEN35_FP8_BF16_MTP)
    plan = build_plan(ck, Oracle(catalog), device=H200, moe_backend="triton")
    draft = next(g for g in plan.groups if g.role == "draft")
    assert draft.first.quant.label == "bf16" and draft.decision.config.moe_backend == "triton"
    assert plan.draft_backend_source == "inherited from the target"


def test_the_speculative_config_backend_overrides_the_draft_only(catalog):
    ck = read_checkpoint(QWEN35_FP8_BF16_MTP)
    plan = build_plan(ck, Oracle(catalog), device=H200, moe_backend="triton", draft_moe_backend="flashinfer_cutlass")
    target = next(g for g in plan.groups if g.role == "target")
    draft = next(g for g in plan.groups if g.role == "draft")
    assert (target.decision.config.moe_backend, draft.decision.config.moe_backend) == ("triton", "flashinfer_cutlass")
    assert plan.to_dict()["deployment"]["draft_backend_source"] == "speculative config"


def test_a_quantization_only_backend_reaches_the_oracle_unchanged_for_an_unquantized_draft(catalog):
    # vLLM 0.33.0 treats marlin/humming as auto for unquantized layers in P/oracle/unquantized.py;
    # that is a table rule, so the plan hands "marlin" on as requested.
    ck = read_checkpoint(QWEN35_FP8_BF16_MTP)
    plan = build_plan(ck, Oracle(catalog), device=H200, moe_backend="marlin")
    draft = next(g for g in plan.groups if g.role == "draft")
    assert draft.decision.config.moe_backend == "marlin" and draft.decision.config.quant.weight is None


def test_no_draft_leaves_the_mtp_layers_out(catalog):
    plan = build_plan(read_checkpoint(QWEN35_FP8_BF16_MTP), Oracle(catalog), device=H200, include_draft=False)
    assert all(g.role == "target" for g in plan.groups)


# ------------------------------------------------------------------ placement


def test_linear_placement_spreads_the_remainder_over_the_first_ranks():
    pl = expert_placement(10, ParallelConfig(tp_size=4, use_ep=True))
    assert [r.physical for r in pl.ranks] == [(0, 1, 2), (3, 4, 5), (6, 7), (8, 9)]


def test_eplb_redundant_experts_are_copies_of_the_first_logical_experts():
    pl = expert_placement(6, ParallelConfig(tp_size=4, use_ep=True, enable_eplb=True, num_redundant_experts=2))
    assert [r.physical for r in pl.ranks] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert pl.ranks[3].logical == (0, 1) and pl.ranks[3].redundant == 2


def test_ranks_with_no_experts_are_named():
    pl = expert_placement(2, ParallelConfig(dp_size=4, use_ep=True))
    assert pl.empty_ranks() == (2, 3)


def test_no_placement_without_expert_parallelism():
    assert expert_placement(8, ParallelConfig(tp_size=8)) is None
    assert expert_placement(8, ParallelConfig(tp_size=1, use_ep=True)) is None


def test_too_many_redundant_experts_to_place_names_the_redundant_experts(capsys):
    """`plan --dp 8 --ep --eplb --redundant-experts 99999999992` was refused as "bad num_experts:
    $.num_experts ... (got 100000000248)", charging the model for the copies the flag added."""
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--dp", "8", "--ep", "--eplb", "--redundant-experts", "99999999992", "--json"]) == 2
    record = json.loads(capsys.readouterr().out)
    issue = record["issues"][0]
    assert record["message"] == "bad --redundant-experts"
    assert (issue["path"], issue["value"], issue["allowed"]) == ("$.parallel.num_redundant_experts", 99999999992, {"maximum": 2**20 - 256})


@pytest.mark.parametrize(("groups", "par", "fallback"), [
    (8, ParallelConfig(dp_size=4, use_ep=True, all2all_backend="deepep_low_latency"), None),
    (1, ParallelConfig(dp_size=4, use_ep=True, all2all_backend="deepep_low_latency"), "expert group"),
    (8, ParallelConfig(dp_size=4, use_ep=True, all2all_backend="deepep_high_throughput"), "not deepep_high_throughput"),
    (8, ParallelConfig(dp_size=4, use_ep=True, all2all_backend="deepep_low_latency", enable_eplb=True), "EPLB"),
])
def test_round_robin_and_where_vllm_falls_back_to_linear(groups, par, fallback):
    pl = expert_placement(16, replace(par, expert_placement_strategy="round_robin"), num_expert_group=groups)
    if fallback is None:
        assert pl.strategy == "round_robin" and pl.ranks[1].physical == (1, 5, 9, 13)
    else:
        assert pl.strategy == "linear" and fallback in pl.fallback


def test_the_rank_changes_only_its_local_expert_count(catalog):
    from moe_oracle.core.normalize import normalize

    par = ParallelConfig(tp_size=3, use_ep=True)
    ck = read_checkpoint(MIXTRAL_LIKE)
    from moe_oracle.core.config import MoEConfig

    cfg = MoEConfig(device=H200, parallel=par, **ck.layers[0].kwargs)
    counts = [normalize(cfg.with_changes(parallel__ep_rank=r), Environment(), (), ()).values["num_local_experts"] for r in range(3)]
    assert counts == [3, 3, 2]
    assert normalize(cfg, Environment(), (), ()).values["num_local_experts"] == 3
    with pytest.raises(ConfigError) as info:
        ParallelConfig(tp_size=2, use_ep=True, ep_rank=2)
    assert info.value.issues[0].path == "$.parallel.ep_rank"


def test_ranks_that_would_build_different_kernels_are_reported(tmp_path):
    # A table in which the preferred kernel needs at least one local expert: ranks that hold
    # none (8 experts over 16 EP ranks) fall to another kernel.
    tables = base_tables()
    slow = tables["kernels/slow.yaml"]["entries"][0]
    slow["constraints"].append({"id": "slow.needs_local_experts", "field": "num_local_experts", "min": 1, "reason": "shape_unsupported", "hint": "a rank with no experts"})
    oracle = Oracle(load(tmp_path, tables), Environment())
    plan = build_plan(read_checkpoint(MIXTRAL_LIKE), oracle, device=Device("cuda", capability=90), parallel=ParallelConfig(tp_size=16, use_ep=True))
    g = plan.moe_groups()[0]
    assert not g.ranks_agree and not plan.ranks_agree
    by_count = {c.local_experts: (c.ranks, c.decision.kernel) for c in g.rank_classes}
    assert by_count == {1: (tuple(range(8)), "slow"), 0: (tuple(range(8, 16)), "ref")}
    assert "RANKS DIVERGE" in plan.render_text()
    same = build_plan(read_checkpoint(MIXTRAL_LIKE), oracle, device=Device("cuda", capability=90), parallel=ParallelConfig(tp_size=8, use_ep=True))
    assert same.ranks_agree and "Every rank builds the same kernels" in same.render_text()


# ------------------------------------------------------------------ CLI


def test_cli_plan_text_groups_layers(capsys):
    assert main(["plan", "--model", "nvidia-qwen3.5-122b-a10b-nvfp4", "--gpu", "B200", "--tp", "4"]) == 0
    out = capsys.readouterr().out
    assert "layers 0–47 (48): MoE nvfp4 ->" in out
    assert "layer 48 (MTP mtp.0): MoE bf16 ->" in out and "excluded by 'mtp.layers.0*'" in out
    assert "shared experts stay unquantized" in out


def test_cli_plan_json_validates_against_the_schema(capsys):
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--dp", "8", "--ep", "--all2all", "deepep_low_latency", "--eplb", "--redundant-experts", "8", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert list(load_schemas().for_kind("plan").iter_errors(record)) == []
    groups = record["groups"]
    assert [g["layers"] for g in groups] == [[0, 1, 2], list(range(3, 61)), [61]]
    assert groups[1]["selected"]["kernel"] and groups[1]["rank_classes"][0]["local_experts"] == 33
    assert record["placement"]["256"]["ranks"][7]["redundant"] == 8


def test_plan_reports_the_fp8_block_refined_to_the_tp_shard(capsys):
    # vLLM 0.29.0+ Q/fp8.py Fp8MoEMethod: Qwen3-30B-A3B-FP8 at TP8 has 768 / 8 = 96 intermediate
    # per rank, which cuts a 128 block: refine_fp8_moe_block_shape gives gcd(128, 128, 96, 2048) = 32,
    # and the selector is handed a 32x32 weight key (only TritonExperts takes it).
    assert main(["plan", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "8", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert list(load_schemas().for_kind("plan").iter_errors(record)) == []
    q = record["groups"][0]["quant"]
    assert (q["weight_block_size"], q["selector_weight_block"], record["groups"][0]["selected"]["kernel"]) == ([128, 128], [32, 32], "triton")
    assert main(["plan", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "8"]) == 0
    assert "weight block 128x128 refined to 32x32" in capsys.readouterr().out
    assert main(["plan", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["groups"][0]["quant"]["selector_weight_block"] == [128, 128]


def test_cli_plan_exit_code_1_when_a_layer_gets_no_kernel(capsys):
    assert main(["plan", "--model", "gpt-oss-20b", "--gpu", "H200", "--moe-backend", "aiter"]) == 1
    assert "NO KERNEL" in capsys.readouterr().out


def test_cli_plan_refuses_single_layer_inputs(capsys):
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--quant", "nvfp4"]) == 2
    assert "--quant" in capsys.readouterr().err


def test_cli_plan_unknown_draft_backend_names_the_flag(capsys):
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--draft-moe-backend", "trtion"]) == 2
    assert "--draft-moe-backend" in capsys.readouterr().err


_SPEC = "vllm serve deepseek-r1 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1, \"moe_backend\": \"deep_gemm\"}'"


def test_cli_plan_reads_the_draft_backend_from_the_serve_lines_speculative_config(capsys):
    """vLLM 0.33.0 SpeculativeConfig.moe_backend: the MTP layer gets it, the target keeps auto."""
    assert main(["plan", "--gpu", "H200", "--serve", _SPEC, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["deployment"]["moe_backend"], record["deployment"]["draft_moe_backend"], record["deployment"]["draft_backend_source"]) == ("auto", "deep_gemm", "speculative config")
    draft = next(g for g in record["groups"] if g["layers"] == [61])
    assert draft["selected"]["kernel"].startswith("deep_gemm")


def test_cli_plan_refuses_two_different_draft_backends(capsys):
    assert main(["plan", "--gpu", "H200", "--serve", _SPEC, "--draft-moe-backend", "triton"]) == 2
    assert "given as --draft-moe-backend triton and in --serve as --speculative-config moe_backend deep_gemm" in capsys.readouterr().err
    assert main(["plan", "--gpu", "H200", "--serve", _SPEC, "--draft-moe-backend", "deep_gemm"]) == 0  # the same: accepted


_ROUND_ROBIN = "vllm serve deepseek-ai/DeepSeek-R1 --expert-placement-strategy round_robin --enable-expert-parallel -dp 4 --all2all-backend deepep_low_latency"


def test_cli_plan_places_experts_as_the_serve_lines_placement_strategy(capsys):
    """The serve line's --expert-placement-strategy round_robin was noted and dropped: the plan
    listed linear ranks. It now places the ranks, and a --expert-placement that disagrees is refused."""
    assert main(["plan", "--gpu", "H200", "--serve", _ROUND_ROBIN, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["deployment"]["expert_placement"] == "round_robin"
    placement = record["placement"]["256"]
    assert placement["strategy"] == "round_robin" and placement["ranks"][0]["physical"][:2] == [[0, 0], [4, 4]]
    assert main(["plan", "--gpu", "H200", "--serve", _ROUND_ROBIN, "--expert-placement", "linear"]) == 2
    assert "given as --expert-placement linear and in --serve as --expert-placement-strategy round_robin" in capsys.readouterr().err
    assert main(["plan", "--gpu", "H200", "--serve", _ROUND_ROBIN, "--expert-placement", "round_robin"]) == 0  # the same: accepted


@pytest.mark.parametrize("flags", [
    ["--model", "deepseek-r1", "--tp", "8", "--expert-placement", "round_robin"],
    ["--serve", "vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --expert-placement-strategy round_robin"],
], ids=["flag", "serve"])
def test_cli_plan_notes_a_placement_strategy_without_expert_parallelism(flags, capsys):
    """Round-robin placement without EP changed nothing and was not said (an input with no effect is a note)."""
    assert main(["plan", "--gpu", "H200", *flags, "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("round_robin has no effect: without expert parallelism" in n for n in notes)


@pytest.mark.parametrize("flags", [
    ["--model", "deepseek-r1", "--draft-moe-backend", "triton"],
    ["--serve", _SPEC],
], ids=["flag", "speculative-config"])
def test_cli_plan_refuses_no_draft_with_a_draft_backend(flags, capsys):
    """--no-draft leaves the draft layers out: a draft backend would be dropped silently."""
    assert main(["plan", "--gpu", "H200", "--no-draft", *flags]) == 2
    err = capsys.readouterr().err
    assert "bad --no-draft" in err and "--no-draft leaves the MTP draft layers out" in err


# ------------------------------------------------------------------ model references (issue 9)


def test_model_directory_reads_config_json_and_the_hf_quant_config_beside_it(tmp_path, capsys):
    ckpt = tmp_path / "Nemotron-NVFP4"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(resolve_model_path("nvidia-nemotron-3-nano-30b-a3b-bf16").read_text())
    (ckpt / "hf_quant_config.json").write_text(resolve_model_path("nvidia-nemotron-3-nano-30b-a3b-nvfp4.hf_quant_config").read_text())
    assert main(["plan", "--model", str(ckpt), "--gpu", "B200", "--tp", "2", "--json"]) in (0, 1)
    record = json.loads(capsys.readouterr().out)
    assert record["model"]["quantization"]["method"] == "modelopt_fp4"
    assert {g["quant"]["scheme"] for g in record["groups"] if g["quant"]} == {"nvfp4"}
    assert main(["select", "--model", str(ckpt), "--gpu", "B200"]) in (0, 1)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as info:
        resolve_model_path(str(empty))
    assert "no config.json" in info.value.issues[0].message


def test_example_names_match_case_and_separator_insensitively():
    assert resolve_model_path("DeepSeek_R1").name == "deepseek-r1.json"
    assert resolve_model_path("NVIDIA_Qwen3.5-122B-A10B-NVFP4").name == "nvidia-qwen3.5-122b-a10b-nvfp4.json"


def test_config_given_a_hugging_face_config_says_to_use_model(capsys):
    path = resolve_model_path("mixtral-8x7b-instruct-v0.1")
    assert main(["explain", "--config", str(path), "--gpu", "H200"]) == 2
    err = capsys.readouterr().err
    assert "Hugging Face config.json" in err and "--model" in err


@pytest.mark.parametrize("command", ["plan", "diff"])
def test_plan_and_diff_refuse_what_select_refuses(command, capsys):
    """EPLB whose 259 physical experts do not split over 8 EP ranks: vLLM does not start, so
    select says bad input (exit 2); plan and diff said "NO KERNEL" / "unchanged" instead."""
    flags = ["--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--ep", "--eplb", "--redundant-experts", "3"]
    assert main(["select", *flags]) == 2
    select_err = capsys.readouterr().err
    extra = ["--from", "vllm==0.31.0", "--to", "vllm==0.33.0"] if command == "diff" else []
    assert main([command, *flags, *extra]) == 2
    err = capsys.readouterr().err
    # diff plans its --from release first, and the refusal names it (select answers for the newest, 0.34.0).
    assert "do not split evenly over 8 EP ranks" in err and err == (select_err.replace("0.34.0", "0.31.0") if command == "diff" else select_err)


# --- break-test findings: speculative method, inputs with no effect, release, checkpoint quantization


def _plan_cli(argv, capsys):
    from moe_oracle.cli import main

    code = main(["plan", *argv, "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code in (0, 1) else None), out.err + out.out


@pytest.mark.parametrize("spec", [
    '{"method":"ngram","prompt_lookup_max":4,"moe_backend":"marlin"}',
    '{"method":"eagle","model":"some/eagle-head","num_speculative_tokens":2}',
], ids=["ngram", "eagle"])
def test_a_draft_that_is_not_the_checkpoints_mtp_layers_is_noted_not_planned(spec, capsys):
    code, record, _ = _plan_cli(["--serve", f"vllm serve qwen3.5-122b-a10b --speculative-config '{spec}'", "--gpu", "H200"], capsys)
    assert code == 0
    assert all(g["role"] == "target" for g in record["groups"])
    assert any(n.startswith("draft not planned:") for n in record["notes"])


def test_mtp_alias_plans_the_mtp_layers_and_no_speculative_config_plans_none(capsys):
    code, record, _ = _plan_cli(["--serve", "vllm serve qwen3.5-122b-a10b --speculative-config '{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":1}'", "--gpu", "H200"], capsys)
    assert code == 0 and any(g["role"] == "draft" for g in record["groups"])
    code, record, _ = _plan_cli(["--serve", "vllm serve qwen3.5-122b-a10b", "--gpu", "H200"], capsys)
    assert code == 0 and all(g["role"] == "target" for g in record["groups"])
    assert any("no --speculative-config" in n for n in record["notes"])


@pytest.mark.parametrize("argv", [
    ["--serve", "vllm serve qwen3.5-122b-a10b --spec-method mtp --speculative-config '{\"method\":\"mtp\"}'", "--gpu", "H200"],
    ["--serve", "vllm serve qwen3.5-122b-a10b --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'", "--no-draft", "--gpu", "H200"],
    ["--serve", "vllm serve qwen3-30b-a3b-fp8 -q fp8", "--quantization", "moe_wna16", "--gpu", "H200"],
    ["--serve", "vllm serve qwen3-30b-a3b-fp8 -q awq", "--gpu", "H200"],
    ["--serve", "vllm serve qwen3-30b-a3b-fp8 -q moe_wna16", "--gpu", "H200"],
], ids=["spec-method-twice", "no-draft-vs-mtp", "two-quantizations", "q-awq-on-fp8", "q-moe_wna16-on-fp8"])
def test_inputs_vllm_refuses_are_refused(argv, capsys):
    code, _, err = _plan_cli(argv, capsys)
    assert code == 2, err


@pytest.mark.parametrize("argv, needle", [
    (["--model", "qwen3-30b-a3b", "--draft-moe-backend", "marlin"], "has no MTP draft layers"),
    (["--serve", "vllm serve qwen3-30b-a3b --speculative-config '{\"method\":\"mtp\",\"moe_backend\":\"marlin\"}'"], "has no MTP draft layers"),
], ids=["draft-backend-no-mtp", "spec-mtp-no-mtp"])
def test_inputs_with_no_effect_are_noted(argv, needle, capsys):
    code, record, err = _plan_cli([*argv, "--gpu", "H200"], capsys)
    assert code == 0, err
    assert any(needle in n for n in record["notes"]), record["notes"]


def test_plan_refuses_online_quantization_it_does_not_model(capsys):
    """moe_wna16 over an unquantized checkpoint: vLLM has no GPTQ/AWQ document to convert (it
    fails or quantizes online); the plan used to answer for the unquantized layers with a note."""
    code, _, err = _plan_cli(["--model", "qwen3-30b-a3b", "--quantization", "moe_wna16", "--gpu", "H200"], capsys)
    assert code == 2 and "moe_wna16 on an unquantized checkpoint is not modelled" in err, err


def test_plan_names_the_release_it_is_for(capsys):
    from moe_oracle.cli import main

    code, record, _ = _plan_cli(["--model", "qwen3.5-122b-a10b", "--gpu", "H200", "--package", "vllm==0.29.0"], capsys)
    assert code == 0 and record["engine"]["version"] == "0.29.0"
    assert any("vLLM 0.29.0 SpeculativeConfig.moe_backend unset" in n for n in record["notes"])
    assert main(["plan", "--model", "qwen3.5-122b-a10b", "--gpu", "H200", "--package", "vllm==0.35.0"]) == 0
    out = capsys.readouterr().out
    assert "Answer for: vLLM 0.35.0 (declared)" in out and "WARNING: answers are for vLLM" in out


def test_a_deprecated_method_in_the_checkpoint_is_refused_without_the_allow_flag(tmp_path, capsys):
    from moe_oracle.core._resources import examples_dir

    cfg = json.loads((examples_dir() / "qwen3-30b-a3b.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fbgemm_fp8", "modules_to_not_convert": [], "activation_scale_ub": 1200.0}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, _, err = _plan_cli(["--model", str(tmp_path), "--gpu", "H200"], capsys)
    assert code == 2 and "deprecated" in err
    code, record, err = _plan_cli(["--serve", f"vllm serve {tmp_path} --allow-deprecated-quantization", "--gpu", "H200"], capsys)
    assert code == 0, err


# --- --draft-moe-backend is exact, as --speculative-config moe_backend (SpeculativeConfig.moe_backend) ----

_SPEC_MARLIN = "vllm serve deepseek-r1 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1, \"moe_backend\": \"marlin\"}'"


@pytest.mark.parametrize("value", ["Marlin", "FLASHINFER_CUTLASS", "flashinfer-cutlass"])
def test_cli_plan_draft_backend_is_matched_exactly(value, capsys):
    """vLLM's SpeculativeConfig.moe_backend (MoEBackend | None) is not lower-cased or de-dashed."""
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--draft-moe-backend", value]) == 2
    err = capsys.readouterr().err
    assert "--draft-moe-backend: vLLM 0.34.0 refuses this draft MoE backend" in err and "write it as " in err


def test_cli_plan_a_draft_flag_vllm_refuses_is_not_reported_as_a_disagreement(capsys):
    assert main(["plan", "--gpu", "H200", "--serve", _SPEC_MARLIN, "--draft-moe-backend", "Marlin"]) == 2
    err = capsys.readouterr().err
    assert "write it as marlin" in err and "given as" not in err
    assert main(["plan", "--gpu", "H200", "--serve", _SPEC_MARLIN, "--draft-moe-backend", "marlin"]) == 0


@pytest.mark.parametrize("value", ["", "bogus"])
def test_cli_plan_bad_draft_backend_names_the_flag_and_its_names(value, capsys):
    """Not '$.moe_backend' and not our internal backend ids: the names the flag accepts."""
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--draft-moe-backend", value]) == 2
    err = capsys.readouterr().err
    assert "bad --draft-moe-backend" in err and "$.moe_backend" not in err
    allowed = err.split("allowed: ", 1)[1]
    assert "flashinfer_cutlass" in allowed and "batched_deep_gemm" not in allowed and "batched_vllm_cutlass" not in allowed


def test_cli_plan_serve_draft_backend_is_checked_for_the_declared_release(capsys):
    """rdna3 is a MoEBackend name in 0.33.0, not in 0.29.0: the serve line's value is named."""
    serve = "vllm serve deepseek-r1 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1, \"moe_backend\": \"rdna3\"}'"
    assert main(["plan", "--gpu", "H200", "--package", "vllm==0.29.0", "--serve", serve]) == 2
    err = capsys.readouterr().err
    assert "--serve --speculative-config moe_backend: vLLM 0.29.0 refuses" in err and "--draft-moe-backend" not in err


def test_cli_plan_says_where_the_draft_backend_came_from(capsys):
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--draft-moe-backend", "marlin", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deployment"]["draft_backend_source"] == "--draft-moe-backend"
    assert main(["plan", "--gpu", "H200", "--serve", _SPEC_MARLIN]) == 0
    assert "draft marlin (speculative config)" in capsys.readouterr().out


def test_plan_notes_follow_what_the_serve_line_drafts_with(capsys):
    """ngram runs no draft model, so a draft moe_backend has no effect (it said "applies to that
    draft"); a line that drafts with the MTP layers is not told they are built "only when serving
    with speculative decoding"."""
    ngram = "vllm serve Qwen/Qwen3.5-122B-A10B -tp 4 --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":4,\"moe_backend\":\"marlin\"}'"
    assert main(["plan", "--gpu", "H200", "--serve", ngram]) in (0, 1)
    out = capsys.readouterr().out
    assert "moe_backend marlin has no effect: ngram builds no draft MoE layer" in out and "applies to that draft" not in out
    assert main(["plan", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3.5-122B-A10B -tp 4 --spec-method mtp --spec-tokens 1"]) in (0, 1)
    out = capsys.readouterr().out
    assert "Note: draft (MTP) layers: their moe_backend is inherited" in out and "built only when serving" not in out
    assert "the answer is for the target model" not in out


@pytest.mark.parametrize("argv", [
    ["--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "16"],
    ["--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--moe-backend", "deep_gemm", "--env", "VLLM_USE_DEEP_GEMM=0"],
], ids=["tp16", "deep-gemm-env"])
def test_a_group_without_a_kernel_shows_what_select_says_blocks_it(capsys, argv):
    """A dead-end group showed only the histogram of first reasons; it now shows select's
    Blocking lines (rule, why) for the same layer, in the text and in --json, and where select
    answers for the group's layer, that its ranked fixes are there."""
    assert main(["select", *argv, "--json"]) == 1
    blocking = json.loads(capsys.readouterr().out)["blocking"]
    assert main(["select", *argv]) == 1
    said = capsys.readouterr().out
    block = said[said.index("Blocking:"):said.index("Fixes")].splitlines()
    assert main(["plan", *argv]) == 1
    out = capsys.readouterr().out
    assert all("      " + line in out for line in block) and "moe-oracle explain with the same --model and deployment flags" in out
    assert main(["plan", *argv, "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert list(load_schemas().for_kind("plan").iter_errors(record)) == []
    assert record["groups"][0]["blocking"] == blocking
