"""A long-lived Oracle across table reloads: a table set that fails validation is rejected whole
and the oracle keeps serving the tables it had; a good reload never serves a stale decision."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, note
from hypothesis import strategies as st

from moe_oracle.core.loading import load_catalog
from moe_oracle.core.engine import evaluate
from moe_oracle.core.errors import ConfigError, TableError
from moe_oracle.core.oracle import Oracle
from tests.fuzz.hostile import assert_typed_error
from tests.fuzz.table_inputs import table_dirs_under, write_shipped, PATHS, SHIPPED, bad_tables
from tests.property import tally
from tests.property.profiles import budget
from tests.property.strategies import CATALOG, Case, cases, note_case, plausible_cases


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A copy of the shipped tables, and an oracle that loaded it."""
    root = tmp_path_factory.mktemp("good")
    write_shipped(root)
    return root


_dirs = table_dirs_under


def _copy_with(root: Path, changes: dict[str, bytes]) -> Path:
    target = Path(tempfile.mkdtemp(prefix="moe-oracle-reload-")) / "tables"
    shutil.copytree(root, target)
    for path, raw in changes.items():
        (target / path).write_bytes(raw)
    return target


# Edits that no table set survives: each is rejected by the schema or the semantic checks.
_SURELY_BAD = {
    "garbage": lambda raw: b"\x00\xff\xfe garbage",
    "unknown kind": lambda raw: raw.replace(b"kind: ", b"kind: not_a_kind_", 1),
    "missing required key": lambda raw: raw.replace(b"kind: ", b"kinds: ", 1),
    "YAML tag": lambda raw: b"kind: !!python/object/apply:os.system ['true']\n",
    "huge integer": lambda raw: raw.replace(b"kind: ", b"x: " + b"9" * 5000 + b"\nkind: ", 1),
}


@st.composite
def failing_edits(draw: st.DrawFn) -> tuple[str, dict[str, bytes]]:
    """A change to the table set that must fail: a surely-bad edit, or a hostile edit that happens to fail."""
    if draw(st.booleans()):
        path = draw(st.sampled_from(PATHS))
        name = draw(st.sampled_from(sorted(_SURELY_BAD)))
        tally.bump("bad inputs: tables")
        return f"{path}: {name}", {path: _SURELY_BAD[name](SHIPPED[path])}
    path, bad = draw(bad_tables())
    return f"{path}: {bad.description}", {path: bad.raw}


def _answer(oracle: Oracle, case) -> object:  # noqa: ANN001 - a strategies.Case
    """The Decision record, or the bad-input error an environment value the engine refuses raises."""
    try:
        return oracle.select(case.config, case.env, strict=False).to_dict()
    except ConfigError as exc:
        return ("ConfigError", str(exc))


@budget(0.08)
@given(st.lists(cases(), min_size=1, max_size=3), failing_edits())
def test_a_failed_reload_keeps_serving_the_old_tables(good, group, edit):
    how, changes = edit
    note(how)
    for case in group:
        note_case(case)
    oracle = Oracle(load_catalog(_dirs(good)))
    catalog, tables_hash = oracle.catalog, oracle.catalog.tables_hash
    before = [_answer(oracle, c) for c in group]
    bad = _copy_with(good, changes)
    try:
        oracle.reload(_dirs(bad))
    except TableError as exc:
        assert_typed_error(exc, TableError)
    else:
        # The hostile edit happened to be harmless (a comment, a BOM): nothing to check.
        return
    finally:
        shutil.rmtree(bad.parent)
    assert oracle.catalog is catalog and oracle.catalog.tables_hash == tables_hash
    assert [_answer(oracle, c) for c in group] == before
    oracle.clear_memo()
    assert [_answer(oracle, c) for c in group] == before


def _without_winner(root: Path, case: Case, kernel: str) -> dict[str, bytes]:
    """The kernel's table with ``kernel`` moved off the case's platform (to another one)."""
    for path, raw in SHIPPED.items():
        doc = yaml.safe_load(raw)
        if doc.get("kind") != "experts":
            continue
        for entry in doc["entries"]:
            if entry["id"] == kernel:
                platform = case.config.device.platform.value
                entry["platforms"] = {p: {} for p in ("cuda", "rocm", "cpu", "xpu") if p != platform}
                return {path: json.dumps(doc).encode()}
    raise KeyError(kernel)


def _has_winner(case: Case) -> bool:
    """The shipped tables select a kernel for ``case`` by priority (the test then removes that winner).

    A shortcut's unchecked kernel wins even off its platform (the engine returns it before
    checking), so moving it away would not change the answer: such cases are left out.
    """
    try:
        d = evaluate(CATALOG, case.config, case.env)
    except ConfigError:  # an environment value the engine refuses at start (e.g. 'true' for an int variable)
        return False
    return d.winner is not None and d.shortcut is None


@budget(0.08)
@given(plausible_cases(backend=st.just("auto")).filter(_has_winner))
def test_a_good_reload_never_serves_a_stale_decision(good, case):
    note_case(case)
    oracle = Oracle(load_catalog(_dirs(good)))
    first = oracle.select(case.config, case.env)
    assert oracle.select(case.config, case.env) is first  # memoized
    changed = _copy_with(good, _without_winner(good, case, first.kernel))
    try:
        new = oracle.reload(_dirs(changed))
    finally:
        shutil.rmtree(changed.parent)
    assert oracle.catalog is new and new.tables_hash != first.tables_hash
    after = oracle.select(case.config, case.env, strict=False)
    assert after.tables_hash == new.tables_hash and after.kernel != first.kernel
    assert after.to_dict() == evaluate(new, case.config, case.env).to_dict()
