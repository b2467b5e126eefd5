"""The text and compact views of a Decision (issue 9, "A dead end, explained in ten lines").

On the parent commit: `select` printed one line per candidate (66 lines for the case below, ROCm
kernels first on a CUDA box), rows were numbered by priority rank (2, 24, 25, ...), the
histogram counted only each candidate's first code without saying so, allowed lists were cut
mid-name by a 90-character slice, failures showed no hint or reference, a pairing failure said
only `dispatch = none`, `select --json` printed the whole record, and there was no render module.
"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from moe_oracle.core._resources import schema_dir
from moe_oracle.cli import main
from moe_oracle.core.config import MoEConfig, ParallelConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.hf import from_hf_config, load_hf_config
from moe_oracle.inputs.models import resolve_model_path
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.records import Status
from moe_oracle.core.blocking import blockers
from moe_oracle.core.render import code_histogram, render_dead_end, render_explain, short_value
from moe_oracle.core.vocab import ReasonCode

# TP16: the shard (48) is not a multiple of 128, and vLLM's fp8 front end cannot refine the block
# (gcd(128, 48) = 16 < 32), so create_weights refuses it. (At TP8 vLLM 0.29.0+ refines to 32x32.)
DEAD_END = ["--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "16"]


def _decision(model: str, gpu: str, **parallel):
    ck = from_hf_config(load_hf_config(resolve_model_path(model)))
    return evaluate(default_catalog(), MoEConfig(device=lookup_hardware(gpu).device, parallel=ParallelConfig(**parallel), **ck.kwargs), Environment())


def test_select_explains_a_dead_end_in_ten_lines(capsys):
    code = main(["select", *DEAD_END])
    out = capsys.readouterr().out.splitlines()
    assert code == 1 and len(out) <= 10
    assert out[0].startswith("No MoE kernel is eligible") and out[1] == "Blocking:"
    assert "intermediate_size_per_partition = 48" in out[2] and "a multiple of 128" in out[2] and "every candidate" in out[2]
    assert out[3].strip().startswith("why: ")
    fixes = [line for line in out if re.match(r"\s+\d\. ", line)]
    assert fixes and fixes[0].strip().startswith("1. --ep ")


def test_blockers_leave_other_platforms_out():
    d = _decision("qwen3-30b-a3b-fp8", "H200", tp_size=16)
    (b,) = blockers(d)
    assert (b.code, b.field, b.rejected == b.of) == (ReasonCode.SHAPE_UNALIGNED, "intermediate_size_per_partition", True)
    assert b.of < len(d.candidates)  # ROCm, CPU and other-quant kernels are not counted


def test_explain_numbers_rows_and_keeps_the_rank_apart(capsys):
    main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2"])
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\s+\d+\.\s+\d+\s", line)]
    numbers = [int(line.split(".")[0]) for line in rows]
    assert numbers == list(range(1, len(rows) + 1))


def test_the_histogram_counts_every_code_and_says_so(capsys):
    d = _decision("qwen3-30b-a3b-fp8", "H200", tp_size=16)
    counts = code_histogram(c for c in d.candidates if c.status is Status.REJECTED)
    assert counts["shape_unaligned"] == len(d.candidates)  # every candidate, not only those whose first code it is
    assert "counted under every code it fails" in render_explain(d)
    assert "by first reason" in d.summary()


def test_allowed_lists_are_cut_between_names():
    names = ["allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency", "flashinfer_nvlink_one_sided", "flashinfer_nvlink_two_sided", "mori_high_throughput"]
    text = short_value(names, 60)
    shown = text.strip("[]").split(", ")[:-1]
    assert all(name in names for name in shown) and text.endswith("more)]") and len(text) <= 60


def test_failures_carry_a_why_line_with_hint_and_reference(capsys):
    main(["explain", *DEAD_END])
    out = capsys.readouterr().out
    assert re.search(r"why: 128x128 weight blocks .* \(vLLM 0.29.0-0.34.0 Q/fp8.py", out)


def test_a_pairing_failure_says_what_is_produced_and_needed():
    # DeepEP high-throughput has no batched prepare/finalize (dispatch none does: XPU's local one).
    d = _decision("qwen3-30b-a3b-fp8", "H200", dp_size=8, use_ep=True, all2all_backend="deepep_high_throughput")
    text = render_explain(d, show_all=True)
    line = next(line for line in text.splitlines() if "pairing_incompatible" in line and "triton_batched.pairing" in line)
    assert "produces standard activations" in line and "consumes batched_experts activations" in line


def test_select_json_is_compact_and_validates(capsys):
    assert main(["select", *DEAD_END, "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert "candidates" not in record and record["blocking"][0]["field"] == "intermediate_size_per_partition"
    assert record["fixes"][0]["flags"] == "--ep"
    bundled = json.loads((schema_dir() / "bundled" / "select.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(record, bundled)
    assert main(["select", *DEAD_END, "--json", "--full"]) == 1
    assert "candidates" in json.loads(capsys.readouterr().out)


def test_decision_text_delegates_to_render():
    d = _decision("qwen3-30b-a3b-fp8", "H200", tp_size=8)
    assert d.render_text() == render_explain(d) and d.render_failure().startswith(render_dead_end(d).rsplit("\n", 1)[0])
    assert all(c.kernel in d.render_failure() for c in d.candidates)  # the exception carries the full trail
    assert str(d) == d.describe()


@pytest.mark.parametrize("flag", ["--all"])
def test_all_lists_every_candidate(flag, capsys):
    main(["explain", *DEAD_END, flag])
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\s+\d+\.\s+\d+\s", line)]
    assert len(rows) == len(default_catalog().experts)


def test_a_probed_environment_is_one_environment_line():
    # a probe's note (where the packages were read) was a second "Environment:" line
    ck = from_hf_config(load_hf_config(resolve_model_path("qwen3-30b-a3b")))
    env = Environment(probed=True, notes=("probed packages of /venv/bin/python (Python 3.11.7, prefix /venv); site-packages: /venv/lib",))
    d = evaluate(default_catalog(), MoEConfig(device=lookup_hardware("H200").device, **ck.kwargs), env)
    lines = [line for line in render_explain(d).splitlines() if line.startswith("Environment:")]
    assert len(lines) == 1 and lines[0].startswith(f"Environment: probed (fingerprint {d.environment.fingerprint}); tables ")
    assert lines[0].endswith("; probed packages of /venv/bin/python (Python 3.11.7, prefix /venv); site-packages: /venv/lib")
