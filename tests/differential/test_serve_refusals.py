"""``moe_oracle.serve.parse_serve`` refuses a flag value exactly where the release's own parser does.

For each modelled release, command lines ``vllm serve m --FLAG VALUE`` (and ``--FLAG BAD --FLAG
GOOD``: an earlier occurrence is converted too) are built from the serve facts for every
value-taking flag whose values moe_oracle checks only through the generic type/choices check
(``serve._value_rules``; the flags with a reader of their own on every occurrence are left out,
and for those whose last occurrence has one (``serve._LAST_READ``: stricter by design, e.g.
``-tp 0``, ``--hf-overrides plain``) only lines whose last value it accepts are built; flags
with an Action of their own (``action:`` in the facts, e.g. ``--lora-modules``) are left out: what
the action refuses is not modelled), with sample values per type kind (good, bad, edge: ``" 8"``, ``"8_000"``,
``"2.5K"``, ``"None"``, ``""``), and parsed twice: by the release's ``make_arg_parser`` in the
differential environment (``tools/vllm_cli_facts.py --parse``) and by ``parse_serve``. Refused
by one and not the other is a failure.

Deselected by default (marker ``differential``); needs ``$MOE_ORACLE_VLLM_ENV``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from moe_oracle.errors import ConfigError
from moe_oracle.serve import _LAST_READ, _value_rules, engine_facts, parse_serve
from moe_oracle.verify.run import RELEASES

pytestmark = pytest.mark.differential

ROOT = Path(__file__).resolve().parents[2]

# Sample words per type kind: accepted and refused ones, and edges of Python's int()/float(),
# json.loads, vLLM's human_readable_int and union_dict_and_str.
SAMPLES = {
    "int": ["8", " 8 ", "+8", "8_000", "-3", "1.5", "x", "0x10", "None", "", "\u0668"],
    "float": ["0.9", "1e-3", "nan", "inf", "1_0.5", "x", "1,5", "None", ""],
    "json": ['{"a": 1}', "[1, 2]", "1", "null", "NaN", "x", "{", "None", ""],
    "json_if_braced": ['{"a": 1}', "plain", "{bad}", ' {"a": 1}\n', "\x1c{bad}", "None", ""],
    "human_readable_int": ["8192", "8k", " 8K ", "2.5k", "2.5K", "1M", "abc", "8kk", "1e3", "auto", "-2", "None", "", "\u0668k"],
    "human_readable_int_or_auto": ["32768", "32k", "32K", "2.5K", "auto", "AUTO", "-1", "-2", "abc", "None", ""],
    "lower_underscore": ["bogus", "None"],
    "str": ["anything", "None", ""],
}


def _words(flag: dict) -> list[str]:
    kind = flag.get("type", "other")
    words = list(SAMPLES.get(kind, ()))
    for choice in (flag.get("choices") or [])[:2]:
        words += [str(choice), str(choice).upper().replace("_", "-"), f"{choice}x"]
    return words


def _lines(release: str) -> list[list[str]]:
    rules = _value_rules(release)
    lines = []
    for flag in engine_facts(release)["serve_flags"]:
        if flag["dest"] not in rules or flag["dest"] in ("config", "model") or "action" in flag:
            continue
        words = _words(flag)
        good = next((w for w in words if w.strip() and w != "None"), None)
        option = flag["options"][0]
        for word in words:
            if flag["dest"] not in _LAST_READ:
                lines.append(["m", option, word])
            if good is not None:
                lines.append(["m", option, word, option, good])
    return lines


def _ours(release: str, argv: list[str]) -> str | None:
    try:
        parse_serve(["vllm", "serve", *argv], version=release)
    except ConfigError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("release", RELEASES)
def test_serve_value_refusals_agree_with_the_releases_parser(release, tmp_path):
    directory = os.environ.get("MOE_ORACLE_VLLM_ENV")
    if not directory:
        pytest.skip("MOE_ORACLE_VLLM_ENV is not set: build it with `python -m moe_oracle.verify.setup_env --dir DIR`")
    from moe_oracle.verify.run import VllmEnv

    tree = Path(directory) / "src" / release
    env = VllmEnv.from_dir(Path(directory))
    lines = _lines(release)
    (tmp_path / "lines.json").write_text(json.dumps(lines), encoding="utf-8")
    subprocess.run([str(env.python), str(ROOT / "tools" / "vllm_cli_facts.py"), "--parse", str(tmp_path / "lines.json"), str(tmp_path / "out.json")],
                   check=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, timeout=600)
    theirs = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert len(theirs) == len(lines)
    theirs = [t["refused"] for t in theirs]
    disagree = [(argv, t, o) for argv, t in zip(lines, theirs) if (t is None) != ((o := _ours(release, argv)) is None)]
    refused = sum(t is not None for t in theirs)
    assert refused > len(lines) // 4, f"only {refused} of {len(lines)} lines refused by vLLM {release}: the sample is not testing refusals"
    assert not disagree, f"{len(disagree)} of {len(lines)} lines disagree with vLLM {release}'s parser, e.g.\n" + "\n".join(f"{a!r}: vLLM {t!r}; ours {o!r}" for a, t, o in disagree[:15])
