"""Machine-facing outputs (issue 9): self-contained schemas, `python -m moe_oracle`, `moe-oracle codes`,
`matrix` filters and width, quiet progress off a terminal.

Before issue 9 the published schemas referred to each other by $id (plain jsonschema.validate
raised Unresolvable), `python -m moe_oracle` had no __main__, `codes` did not exist, and
`matrix` took no filter and printed 1938-column Markdown rows.
"""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import yaml

from moe_oracle.core._resources import package_dir, schema_dir
from moe_oracle.cli import main
from moe_oracle.core.codes import CODE_DOCS
from moe_oracle.tools.schemagen import bundled_schemas
from moe_oracle.core.vocab import ReasonCode


def _bundled(name: str) -> dict:
    return json.loads((schema_dir() / "bundled" / f"{name}.schema.json").read_text(encoding="utf-8"))


def test_bundled_schemas_are_generated_from_the_sources():
    generated = bundled_schemas(schema_dir())
    committed = {p.name: p.read_text(encoding="utf-8") for p in (schema_dir() / "bundled").glob("*.schema.json")}
    assert set(generated) == set(committed) and all(json.loads(generated[k]) == json.loads(committed[k]) for k in generated), "run: python -m moe_oracle.tools.schemagen"


def test_a_decision_validates_with_plain_jsonschema_validate(capsys):
    assert main(["explain", "--model", "deepseek-r1", "--gpu", "B200", "--dp", "8", "--ep", "--all2all", "deepep_low_latency", "--json"]) == 0
    jsonschema.validate(json.loads(capsys.readouterr().out), _bundled("decision"))


def test_the_shipped_tables_validate_with_plain_jsonschema_validate():
    for path in sorted((package_dir() / "kernels").glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), _bundled("experts"))
    for path in sorted((package_dir() / "rules").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        jsonschema.validate(doc, _bundled(doc["kind"]))


def test_python_dash_m():
    out = subprocess.run([sys.executable, "-m", "moe_oracle", "select", "--model", "qwen3-30b-a3b", "--gpu", "H200"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "[" in out.stdout


def test_every_reason_code_is_explained(capsys):
    assert set(CODE_DOCS) == set(ReasonCode)
    assert main(["codes"]) == 0
    out = capsys.readouterr().out
    assert all(f"\n{code.value}\n" in out for code in ReasonCode)


def test_every_warning_code_is_explained(capsys):
    """The decision schema's warning codes (known_bad, unchecked, engine_release) each have a block in `codes`."""
    import json

    from moe_oracle.core._resources import schema_dir
    from moe_oracle.core.codes import WARNING_DOCS

    schema = json.loads((schema_dir() / "decision.schema.json").read_text(encoding="utf-8"))
    enum = set(schema["properties"]["warnings"]["items"]["properties"]["code"]["enum"])
    assert enum >= {"known_bad", "unchecked", "engine_release"} and set(WARNING_DOCS) == enum
    assert main(["codes"]) == 0
    out = capsys.readouterr().out
    assert "Warning codes" in out and all(f"\n{code}\n" in out for code in enum)


def test_matrix_filters_give_one_column_per_gpu_name(capsys):
    assert main(["matrix", "--gpu", "NVIDIA H200,B200", "--gpu", "MI325X", "--quant", "FP8-Blk", "--backend", "deep_gemm"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("fp8_block"))
    assert header.split()[1:] == ["H200", "B200", "MI325X"]
    rows = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert rows and all(r.startswith("deep_gemm") for r in rows)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_matrix_fits_the_width(width, capsys):
    assert main(["matrix", "--width", str(width)]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()[2:]) <= width


def test_matrix_markdown_keeps_the_page_format(capsys):
    assert main(["matrix", "--markdown", "--gpu", "H200"]) == 0
    assert "| kernel | backend | interface | H200 |" in capsys.readouterr().out


@pytest.mark.parametrize("form", [[], ["--markdown"], ["--html", "PAGE"]])
def test_matrix_filters_that_leave_no_kernel_say_so(form, tmp_path, capsys):
    """No kernel of the backend runs the scheme anywhere: a sentence, exit 0 (was a ValueError from max() in the text form)."""
    form = [str(tmp_path / "m.html") if f == "PAGE" else f for f in form]
    assert main(["matrix", "--backend", "deep_gemm", "--quant", "unquantized", *form]) == 0
    out = capsys.readouterr().out if "--html" not in form else (tmp_path / "m.html").read_text(encoding="utf-8")
    assert "No kernel supports the selected schemes on the selected devices." in out
    assert "| kernel |" not in out


def test_matrix_bad_filter_is_bad_input(capsys):
    assert main(["matrix", "--gpu", "MI330X"]) == 2
    assert capsys.readouterr().err.startswith("moe-oracle: error: bad --gpu")


def test_run_draws_no_progress_bar_off_a_terminal(monkeypatch, capsys):
    """`run` passes progress=False when stderr is not a terminal (a log or a pipe)."""
    seen = {}

    def fake_run_layer(config, decision, **kwargs):
        seen.update(kwargs)
        raise SystemExit(0)

    import moe_oracle.runtime.runner as runner

    monkeypatch.setattr(runner, "run_layer", fake_run_layer)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with pytest.raises(SystemExit):
        main(["run", "--model", "qwen3-30b-a3b", "--max-experts", "4", "--tokens", "2"])
    assert seen["progress"] is False
