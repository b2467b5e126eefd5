"""moe_oracle.inputs.argtypes: a serve flag value converted as the release's argparse type converts it.

The human-readable integers are vLLM's own examples and edges (vllm/utils/argparse_utils.py
``human_readable_int``/``human_readable_int_or_auto``, the same in vLLM 0.29.0-0.33.0); the
differential tier (tests/differential/test_serve_refusals.py) compares with the releases' parsers.
"""

from __future__ import annotations

import pytest

from moe_oracle.inputs.argtypes import CHECKED, KINDS, allowed_text, convert, human_readable_int, human_readable_int_or_auto


@pytest.mark.parametrize(("text", "value"), [
    ("1k", 1000), ("1K", 1024), ("25.6k", 25600), ("8192", 8192), (" 2M ", 2 * 2**20), ("1g", 10**9), ("1T", 2**40),
    ("+5", 5), ("-5", -5), ("1_000", 1000), ("0.0005k", 0),
])
def test_human_readable_int_is_vllms(text, value):
    assert human_readable_int(text) == value


@pytest.mark.parametrize("text", ["abc", "1.5", "1.5K", "8kk", "1e3", "k", "", "auto", "9" * 400 + "k"])
def test_human_readable_int_refuses_what_vllm_refuses(text):
    with pytest.raises((ValueError, OverflowError)):
        human_readable_int(text)


@pytest.mark.parametrize(("text", "value"), [("auto", -1), ("AUTO", -1), (" -1 ", -1), ("-2", -2), ("32k", 32000)])
def test_human_readable_int_or_auto(text, value):
    assert human_readable_int_or_auto(text) == value


@pytest.mark.parametrize(("kind", "text", "value"), [
    ("int", " 8 ", 8), ("float", "nan", "nan"), ("json", "[1]", [1]), ("json_if_braced", "plain", "plain"),
    ("json_if_braced", ' {"a": 1}\n', {"a": 1}), ("json_if_braced", "\x1c{bad}", "\x1c{bad}"),  # \x1c is not regex's \s
    ("lower_underscore", "Flashinfer-Cutlass", "flashinfer_cutlass"), ("str", "None", "None"),
    ("dataclass_json", "notjson", "notjson"), ("other", "x", "x"),
])
def test_convert(kind, text, value):
    got = convert(kind, text)
    assert (str(got) if kind == "float" else got) == value


@pytest.mark.parametrize(("kind", "text"), [
    ("int", "1.5"), ("int", "None"), ("float", "x"), ("json", "{"), ("json", "[" * 100000), ("json_if_braced", "{bad}"),
    ("human_readable_int", "9" * 400 + "k"), ("human_readable_int_or_auto", "None"),
])
def test_convert_refuses_with_value_error(kind, text):
    with pytest.raises(ValueError):
        convert(kind, text)


@pytest.mark.parametrize("kind", KINDS)
def test_optional_type_reads_empty_and_none_as_none(kind):
    assert convert(kind, "", optional=True) is None and convert(kind, "None", optional=True) is None


def test_an_unknown_kind_is_an_error():
    with pytest.raises(KeyError, match="bogus"):
        convert("bogus", "1")


def test_every_checked_kind_that_can_fail_says_what_is_allowed():
    assert all(allowed_text(k) for k in CHECKED if k not in ("str", "lower_underscore"))
