"""``moe_oracle.inputs.serve.parse_serve`` refuses a flag value exactly where the release's own parser does.

For each modelled release, command lines ``vllm serve m --FLAG VALUE`` (and ``--FLAG BAD --FLAG
GOOD``: an earlier occurrence is converted too) are built from the serve facts for every
value-taking flag whose values moe_oracle checks only through the generic type/choices check
(``serve_argv.value_rules``; the flags with a reader of their own on every occurrence are left out,
and for those whose last occurrence has one (``serve_argv.LAST_READ``: stricter by design, e.g.
``-tp 0``, ``--hf-overrides plain``) only lines whose last value it accepts are built; flags
with an Action of their own (``action:`` in the facts, e.g. ``--lora-modules``) are left out: what
the action refuses is not modelled), with sample values per type kind (good, bad, edge: ``" 8"``, ``"8_000"``,
``"2.5K"``, ``"None"``, ``""``), and parsed twice: by the release's ``make_arg_parser`` in the
differential environment (``tools/vllm_cli_facts.py --parse``) and by ``parse_serve``. Refused
by one and not the other is a failure.

A second test samples the shapes of a command line that vLLM's own rewriting and argparse give
meaning to, and compares the values read too (the release's namespace, ``tools/vllm_cli_facts.py
--parse``, against :class:`moe_oracle.inputs.serve.ServeArgs`): every option string's abbreviations
(the shortest unique prefix, one character less, with ``_`` and ``=`` spellings; argparse's
``allow_abbrev``), dotted JSON flags (merged dicts, concatenated lists, a value replaced by a dict,
``1K``/``08`` read by ``human_readable_int``, values that stop vLLM), and ``--config`` files
(false booleans with and without a ``--no-`` form, two files, the model in the file or not first)
under ``vllm serve`` and ``python -m vllm.entrypoints.openai.api_server``. Left out on purpose: a
positional model under the API server, which its parser accepts and its server never reads
(moe_oracle refuses it; tests/unit/test_serve.py). A ``--config`` file repeating a key is read
as vLLM's ``yaml.safe_load`` reads it, the last value kept (moe_oracle notes it).

Deselected by default (marker ``differential``); needs ``$MOE_ORACLE_VLLM_ENV``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.serve import ServeArgs, parse_serve
from moe_oracle.inputs.serve_argv import LAST_READ, value_rules
from moe_oracle.inputs.release_facts import engine_facts
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
    rules = value_rules(release)
    lines = []
    for flag in engine_facts(release)["serve_flags"]:
        if flag["dest"] not in rules or flag["dest"] in ("config", "model") or "action" in flag:
            continue
        words = _words(flag)
        good = next((w for w in words if w.strip() and w != "None"), None)
        option = flag["options"][0]
        for word in words:
            if flag["dest"] not in LAST_READ:
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


def _release_parse(release: str, lines: list, tmp_path: Path) -> list[dict]:
    """Each line parsed by the release's own parsers (``tools/vllm_cli_facts.py --parse``, run in
    ``tmp_path``): ``{"refused": None, "values": {...}}`` or ``{"refused": "..."}``."""
    directory = os.environ.get("MOE_ORACLE_VLLM_ENV")
    if not directory:
        pytest.skip("MOE_ORACLE_VLLM_ENV is not set: build it with `python -m moe_oracle.verify.setup_env --dir DIR`")
    from moe_oracle.verify.run import VllmEnv

    tree = Path(directory) / "src" / release
    env = VllmEnv.from_dir(Path(directory))
    (tmp_path / "lines.json").write_text(json.dumps(lines), encoding="utf-8")
    subprocess.run([str(env.python), str(ROOT / "tools" / "vllm_cli_facts.py"), "--parse", str(tmp_path / "lines.json"), str(tmp_path / "out.json")],
                   check=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, timeout=600)
    theirs = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert len(theirs) == len(lines)
    return theirs


@pytest.mark.parametrize("release", RELEASES)
def test_serve_value_refusals_agree_with_the_releases_parser(release, tmp_path):
    lines = _lines(release)
    theirs = [t["refused"] for t in _release_parse(release, lines, tmp_path)]
    disagree = [(argv, t, o) for argv, t in zip(lines, theirs) if (t is None) != ((o := _ours(release, argv)) is None)]
    refused = sum(t is not None for t in theirs)
    assert refused > len(lines) // 4, f"only {refused} of {len(lines)} lines refused by vLLM {release}: the sample is not testing refusals"
    assert not disagree, f"{len(disagree)} of {len(lines)} lines disagree with vLLM {release}'s parser, e.g.\n" + "\n".join(f"{a!r}: vLLM {t!r}; ours {o!r}" for a, t, o in disagree[:15])


# A value argparse accepts, per type kind, for the abbreviation lines (the flag's first choice
# where it has choices); a flag read with a stricter reader of its own gets one it accepts.
GOOD = {"int": "2", "float": "0.5", "json": "{}", "json_if_braced": '{"a": 1}', "human_readable_int": "8k",
        "human_readable_int_or_auto": "8k", "str": "x", "dataclass_json": "{}"}
GOOD_FOR = {"hf_overrides": '{"a": 1}', "eplb_config": '{"num_redundant_experts": 2}', "speculative_config": '{"method": "ngram", "num_speculative_tokens": 2}',
            "spec_tokens": "2", "kernel_config": '{"moe_backend": "triton"}', "quantization": "fp8"}
# Flags left out of the abbreviation lines: the model (rewritten before argparse under vllm serve)
# and --config (loaded before argparse), flags whose type or Action moe_oracle does not model.
SKIPPED = ("model", "config")

# ServeArgs attribute -> the release's namespace value parse_lines reports.
READ = {"model": "model", "hf_overrides": "hf_overrides", "tp": "tensor_parallel_size", "dp": "data_parallel_size", "ep": "enable_expert_parallel",
        "eplb": "enable_eplb", "redundant_experts": "num_redundant_experts", "lora": "enable_lora", "all2all": "all2all_backend",
        "max_num_batched_tokens": "max_num_batched_tokens", "dtype": "dtype"}


def _good(flag: dict) -> str | None:
    if flag["dest"] in GOOD_FOR:
        return GOOD_FOR[flag["dest"]]
    if flag.get("choices"):
        return str(flag["choices"][0])
    return GOOD.get(flag.get("type", "other"))


def _abbreviation_lines(release: str) -> list[list[str]]:
    """``m PREFIX [VALUE]`` for prefixes of every option string the release's serve parser
    registers: the shortest prefix only it starts (argparse takes it for the flag), one character
    less (ambiguous, or no flag), the string less its last character; with ``_`` for ``-`` and
    ``PREFIX=VALUE`` spellings for a value-taking flag."""
    facts = engine_facts(release)
    strings = facts["option_strings"]
    owner = {o: f for f in facts["serve_flags"] for o in [*f["options"], *f.get("negative", ())]}
    lines = []
    for string in strings:
        flag = owner.get(string)
        if flag is None or flag["dest"] in SKIPPED or "action" in flag:
            continue
        value = None if flag["value"] == "none" else _good(flag)
        if flag["value"] != "none" and value is None:
            continue
        dashes = 2 if string.startswith("--") else 1
        unique = next((n for n in range(dashes + 1, len(string)) if sum(o.startswith(string[:n]) for o in strings) == 1), None)
        prefixes = {string[:-1]} | ({string[:unique], string[:unique - 1]} if unique else set())
        for prefix in sorted(p for p in prefixes if len(p) > dashes):
            tail = [] if value is None else [value]
            lines.append(["m", prefix, *tail])
            if dashes == 2 and "-" in prefix[2:]:
                lines.append(["m", "--" + prefix[2:].replace("-", "_"), *tail])
            if value is not None:
                lines.append(["m", f"{prefix}={value}"])
    return lines


BIG = "9" * 400 + "k"
DOTTED = [
    ["--hf-overrides.text_config.moe_intermediate_size", "96", "--hf-overrides.text_config", '{"num_experts_per_tok": 4}'],
    ["--hf-overrides.text_config", '{"num_experts_per_tok": 4}', "--hf-overrides.text_config.moe_intermediate_size", "96"],
    ["--hf-overrides", '{"a": 1}', "--hf-overrides.b", "2"],
    ["--hf-overrides.b", "2", "--hf-overrides", '{"a": 1}'],
    ["--hf-overrides.a", "1", "--hf-overrides.a.b", "2"],
    ["--hf-overrides.a.b", "2", "--hf-overrides.a", "1"],
    ["--hf-overrides.a", "1", "--hf-overrides.a", "2"],
    ["--hf-overrides.l+", "x,y", "--hf-overrides.l+", "z"],
    ["--hf-overrides.l", "[1]", "--hf-overrides.l", "[2, 3]"],
    ["--hf-overrides.l", "[1]", "--hf-overrides.l+", "z"],
    ["--hf_overrides.a=1", "--hf-overrides.b=x.y"],
    ["--hf-over.a", "1", "--hf-overrides.b", "2"],
    ["--hf-overrides.b", "2", "--hf-over.a", "1"],
    ["--hf-overrides.a"],
    ["-tp", "2", "--hf-overrides.a"],
    ["--tensor-parallel-size.a", "1"],
    ["--eplb-config.num_redundant_experts", "1k", "-tp", "8", "-ep", "--enable-eplb"],
    ["--eplb-config.num_redundant_experts", "08", "-tp", "8", "-ep", "--enable-eplb"],
    ["--eplb-config.num_redundant_experts", "2.5K", "-tp", "8", "-ep", "--enable-eplb"],
    ["--eplb-config.num_redundant_experts", "1K", "--eplb-config.num_redundant_experts", "2", "-tp", "8", "-ep", "--enable-eplb"],
    ["--eplb-config.window_size", "1k", "--eplb-config.num_redundant_experts", "2", "-tp", "8", "-ep", "--enable-eplb"],
    ["--kernel-config.moe_backend", "triton"],
    ["--kernel-config.moe_backend", "triton", "--kernel-config.moe_backend", "cutlass"],
    ["--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens", "2"],
] + [["--hf-overrides.x", value] for value in
     ("96", "1K", "1k", "08", "1_000", " 8", "2.5K", "2.5k", "1e3", "NaN", "-1", "abc", "x,y", "\u0668", "1M", "00", "", BIG, "[" * 100_000)]

CONFIGS = {
    "off-no-form.yaml": "disable-log-stats: false\nenable-expert-parallel: true\n",
    "off-twin.yaml": "enable_eplb: true\nenable-eplb: false\n",
    "off-ep.yaml": "enable-expert-parallel: false\n",
    "off-underscore.yaml": "enable_expert_parallel: false\n",
    "on.yaml": "enable-expert-parallel: true\ntensor-parallel-size: 2\n",
    "model.yaml": "model: mm\ntensor-parallel-size: 2\n",
    "nested.yaml": "hf-overrides:\n  a: 1\ntensor-parallel-size: 2\n",
    "abbreviated.yaml": "tensor-parallel-si: 2\nmoe-back: triton\n",
    "not-a-mapping.yaml": "- 1\n",
    "repeated.yaml": "tensor-parallel-size: 2\nenable-expert-parallel: true\ntensor-parallel-size: 4\n",
}
CONFIG_LINES = [
    ["m", "--config", "off-no-form.yaml"], ["m", "--config", "off-twin.yaml"], ["m", "-ep", "--config", "off-ep.yaml"],
    ["m", "--config", "off-underscore.yaml"], ["m", "--config", "on.yaml", "--config", "on.yaml"], ["m", "--config", "on.yaml", "--config", "model.yaml"],
    ["--config", "on.yaml", "m"], ["--config", "model.yaml"], ["m", "--config", "model.yaml"], ["-tp", "4", "--config", "model.yaml"],
    ["m", "--config", "nested.yaml", "--hf-overrides.b", "2"], ["m", "--config", "abbreviated.yaml"],
    ["m", "--config", "not-a-mapping.yaml"], ["m", "--config", "repeated.yaml"], ["m", "--config=on.yaml"], ["m", "--config"], ["m", "--config", "missing.yaml"],
    ["--model", "m", "--config", "on.yaml"], ["--model=m", "-tp", "2"],
]
API_SERVER_LINES = [
    ["--model", "m", "--config", "off-no-form.yaml"], ["--model", "m", "--config", "off-twin.yaml"], ["--model", "m", "-ep", "--config", "off-ep.yaml"],
    ["--model", "m", "-ep", "--config", "off-underscore.yaml"], ["--config", "model.yaml"], ["--config", "on.yaml", "--model", "m"],
    ["--model", "m", "--config", "on.yaml", "--config", "on.yaml"], ["--model", "m", "--tensor-parallel-si", "2"], ["--model", "m", "--enable-e"],
    ["--model", "m", "--hf-overrides.a", "1", "--hf-overrides.a.b", "2"],
]


def _ours_read(release: str, line, base: Path) -> tuple[str | None, ServeArgs | None]:
    words = ["python", "-m", "vllm.entrypoints.openai.api_server", *line["api_server"]] if isinstance(line, dict) else ["vllm", "serve", *line]
    try:
        return None, parse_serve(words, version=release, base=base)
    except ConfigError as exc:
        return str(exc), None


@pytest.mark.parametrize("release", RELEASES)
def test_serve_line_shapes_agree_with_the_releases_parser(release, tmp_path):
    for name, text in CONFIGS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    lines = [*_abbreviation_lines(release), *(["m", *words] for words in DOTTED), *CONFIG_LINES, *({"api_server": words} for words in API_SERVER_LINES)]
    theirs = _release_parse(release, lines, tmp_path)
    disagree = []
    for line, t in zip(lines, theirs):
        refused, serve = _ours_read(release, line, tmp_path)
        if (t["refused"] is None) != (refused is None):
            disagree.append((line, t["refused"] or "accepted", refused or "accepted"))
        elif serve is not None:
            values = {attr: getattr(serve, attr) for attr in READ if getattr(serve, attr) is not None}
            if "moe_backend" in serve.given:  # --moe-backend alone (--kernel-config's is not in the namespace)
                values["moe_backend"] = serve.moe_backend
            wrong = {attr: (value, t["values"][READ.get(attr, attr)]) for attr, value in values.items() if value != t["values"][READ.get(attr, attr)]}
            if wrong:
                disagree.append((line, "accepted, with other values", {attr: {"ours": o, "vLLM": v} for attr, (o, v) in wrong.items()}))
    refused = sum(t["refused"] is not None for t in theirs)
    assert len(lines) // 5 < refused < len(lines) - len(lines) // 5, f"{refused} of {len(lines)} lines refused by vLLM {release}: the sample should hold both"
    assert not disagree, f"{len(disagree)} of {len(lines)} lines disagree with vLLM {release}'s parser, e.g.\n" + "\n".join(f"{str(a)[:200]}: vLLM {str(t)[-200:]}; ours {str(o)[:300]}" for a, t, o in disagree[:20])
