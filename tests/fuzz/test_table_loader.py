"""Capability tables and rules: a mutated copy of the shipped tables loads, or is rejected whole
with a TableError whose issues name file, JSON path, value and what is allowed. Never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from moe_oracle.explain.whynot import why_not
from moe_oracle.core._resources import package_dir, runtime_table_dirs
from moe_oracle.core.catalog import Catalog
from moe_oracle.core.loading import compile_tables, load_catalog
from moe_oracle.core.oracle import default_catalog, default_runtime_catalog
from moe_oracle.core.engine import evaluate
from moe_oracle.core.errors import TableError
from moe_oracle.core.oracle import Oracle
from moe_oracle.core.tables import load_schemas, read_tables, read_tables_cached
from tests.fuzz.hostile import SNIPPETS, Bad, assert_typed_error, byte_edits, tree_edits
from tests.fuzz.table_inputs import table_dirs_under, write_shipped, PATHS, SHIPPED, bad_tables
from tests.property import tally
from tests.property.profiles import budget
from tests.property.strategies import plausible_cases, targeted_cases
from tests.property.table_mutations import shipped_files

SCHEMAS = load_schemas()


def _after_load(catalog: Catalog, data: st.DataObject) -> None:
    # A table set that loads must select without raising, on any config.
    for case in data.draw(st.lists(plausible_cases(), min_size=1, max_size=2), label="configs"):
        evaluate(catalog, case.config, case.env).to_dict()


def _load_with_one_file_replaced(path: str, raw: bytes) -> Catalog:
    """load_catalog's two steps (read + validate, then compile), reading only the edited file from disk."""
    directory, name = path.split("/")
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / directory
        target.mkdir()
        (target / name).write_bytes(raw)
        files, issues = read_tables([target], SCHEMAS)
    if issues:
        raise TableError(issues)
    return compile_tables([f for f in shipped_files() if f.path != path] + files)


@budget(1.5)
@given(bad_tables(), st.data())
def test_an_edited_table_file_compiles_or_raises_a_table_error(edit, data):
    path, bad = edit
    note(f"{path}: {bad.description}")
    try:
        catalog = _load_with_one_file_replaced(path, bad.raw)
    except TableError as exc:
        assert_typed_error(exc, TableError, files=PATHS)
    else:
        _after_load(catalog, data)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables")
    write_shipped(root)
    return root


_dirs = table_dirs_under


@st.composite
def bad_table_sets(draw: st.DrawFn) -> tuple[str, dict[str, bytes | None]]:
    """A whole table set with one hostile change: an edited file, or a file removed, added or renamed."""
    op = draw(st.sampled_from(("edit", "edit", "edit", "remove", "stray_copy", "wrong_dir", "rename_yml", "nested", "unknown_kind")))
    if op == "edit":
        path, bad = draw(bad_tables())
        return f"{path}: {bad.description}", {path: bad.raw}
    tally.bump("bad inputs: tables")
    path = draw(st.sampled_from(PATHS))
    directory, name = path.split("/")
    if op == "remove":
        return f"{path} removed", {path: None}
    if op == "stray_copy":
        return f"{path} copied to {directory}/copy_{name}", {f"{directory}/copy_{name}": SHIPPED[path]}
    if op == "wrong_dir":
        other = draw(st.sampled_from(sorted({"kernels", "prepare_finalize", "rules"} - {directory})))
        return f"{path} moved to {other}/", {path: None, f"{other}/{name}": SHIPPED[path]}
    if op == "rename_yml":
        return f"{path} renamed to .yml", {path: None, f"{directory}/{name[:-5]}.yml": SHIPPED[path]}
    if op == "nested":
        return f"{path} moved into {directory}/sub/", {path: None, f"{directory}/sub/{name}": SHIPPED[path]}
    kind = draw(st.sampled_from(("experts", "priority", "aliases", "mystery", "")))
    return f"{directory}/extra.yaml of kind {kind!r}", {f"{directory}/extra.yaml": f"kind: {kind}\n".encode()}


@budget(0.25)
@given(bad_table_sets(), st.data())
def test_load_catalog_on_an_edited_copy_loads_or_raises_a_table_error(pristine, change, data):
    how, files = change
    note(how)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tables"
        shutil.copytree(pristine, root)
        for path, raw in files.items():
            if raw is None:
                (root / path).unlink()
            else:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_bytes(raw)
        names = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} | {f"{p.parent.name}/{p.name}" for p in root.rglob("*") if p.is_file()}
        try:
            catalog = load_catalog(_dirs(root))
        except TableError as exc:
            assert_typed_error(exc, TableError, files=names)
        else:
            _after_load(catalog, data)


# Every hostile construct, deterministically, at three places the loader reads: a top-level
# scalar of a kernel table, a list of a rule table, and a value inside a kernel entry.
_PLACES = (
    ("kernels/triton.yaml", b"family: triton"),
    ("rules/priority.yaml", b"move: [flashinfer_trtllm, flashinfer_cutlass]"),
    ("kernels/marlin.yaml", b"runtime: external"),
)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: repr(s[:24]))
@pytest.mark.parametrize("place", _PLACES, ids=lambda p: p[0])
def test_hostile_yaml_constructs_raise_a_table_error(place, snippet):
    path, anchor = place
    key = anchor.split(b":")[0]
    raw = SHIPPED[path].replace(anchor, key + b": " + snippet, 1)
    assert raw != SHIPPED[path]
    tally.bump("bad inputs: tables")
    with pytest.raises(TableError) as info:
        _load_with_one_file_replaced(path, raw)
    assert_typed_error(info.value, TableError, files=PATHS)


@pytest.fixture(scope="module")
def cached_copy(pristine, tmp_path_factory):
    """A private validated-table cache holding one entry for the pristine copy, and its bytes."""
    cache = tmp_path_factory.mktemp("cache")
    saved = os.environ.get("MOE_ORACLE_CACHE_DIR")
    os.environ["MOE_ORACLE_CACHE_DIR"] = str(cache)
    try:
        reference = load_catalog(_dirs(pristine))
    finally:
        _restore("MOE_ORACLE_CACHE_DIR", saved)
    (entry,) = cache.glob("tables-*.json")
    return cache, entry, entry.read_bytes(), reference


def _restore(var: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = value


@budget(0.12)
@given(st.data())
def test_a_damaged_cache_entry_is_never_trusted(pristine, cached_copy, data):
    # The validated-table cache is an optimization: a damaged entry costs speed, never correctness.
    cache, entry, raw, reference = cached_copy
    if data.draw(st.booleans(), label="edit the JSON body"):
        digest, _, body = raw.partition(b"\n")
        how, doc = data.draw(tree_edits(json.loads(body), json_only=True), label="edit")
        bad = Bad(how, digest + b"\n" + json.dumps(doc).encode())
    else:
        bad = data.draw(byte_edits(raw, json_text=True), label="edit")
    note(bad.description)
    tally.bump("bad inputs: tables")
    entry.write_bytes(bad.raw)
    saved = os.environ.get("MOE_ORACLE_CACHE_DIR")
    os.environ["MOE_ORACLE_CACHE_DIR"] = str(cache)
    try:
        catalog = load_catalog(_dirs(pristine))
    finally:
        _restore("MOE_ORACLE_CACHE_DIR", saved)
        entry.write_bytes(raw)
    assert catalog.tables_hash == reference.tables_hash
    assert catalog.experts == reference.experts and catalog.orders == reference.orders
    case = data.draw(plausible_cases(), label="config")
    assert evaluate(catalog, case.config, case.env).to_dict() == evaluate(reference, case.config, case.env).to_dict()


# Values a maintainer may legally write that the engine and why-not must still handle: every
# PEP 440 operator in a package range, and non-finite or odd numeric bounds.
_ODD_EDITS = {
    **{f"torch {spec!r}": (b'packages: {torch: ">=2.9"}', b"packages: {torch: '%s'}" % spec.encode()) for spec in
       ("===abc", "===2.9", "!=1.0.0", "<1.0.dev0", "~=2.9", "==2.*", ">=1!2.0", "==2.9+local", ">=2.9,<2.9", "")},
    **{f"hidden_size {bound}": (b"field: hidden_size\n        multiple_of: 8", b"field: hidden_size\n        " + bound.encode()) for bound in
       ("max: .nan", "max: .inf", "min: -.inf", "max: 1.0e+400", "max: 0.5", "max: -1", "multiple_of: 1000000000000000000000000000000", "min: 9999999999999999999999",
        "min: " + "9" * 400, "max: -" + "9" * 400)},
}


# Bounds the compiler rejects (a NaN bound fails every comparison; past 2**53 a float loses integers;
# a fractional bound on an integer field).
_REJECTED_BOUNDS = {f"hidden_size {b}" for b in ("max: .nan", "max: .inf", "min: -.inf", "max: 1.0e+400", "multiple_of: 1000000000000000000000000000000",
                                                 "min: 9999999999999999999999", "min: " + "9" * 400, "max: -" + "9" * 400, "max: 0.5")}


_RUNTIME_GROUPED_MM = runtime_table_dirs()[0] / "torch_grouped_mm.yaml"


@lru_cache(maxsize=None)
def _odd_catalog(name: str) -> Catalog:
    """The runtime tables (where torch_grouped_mm lives) with its table edited, on the shipped engine tables."""
    old, new = _ODD_EDITS[name]
    raw = _RUNTIME_GROUPED_MM.read_bytes()
    assert old in raw
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "kernels"
        target.mkdir()
        (target / "torch_grouped_mm.yaml").write_bytes(raw.replace(old, new, 1))
        files, issues = read_tables([target], SCHEMAS)
    if issues:
        raise TableError(issues)
    shipped, problems = read_tables_cached(list(runtime_table_dirs()), SCHEMAS, package_dir())
    assert not problems
    kept = [f for f in shipped if not f.path.endswith("kernels/torch_grouped_mm.yaml")]
    return compile_tables(kept + files, base=default_catalog().source)


@pytest.mark.parametrize("name", sorted(_REJECTED_BOUNDS))
def test_non_finite_or_huge_bounds_are_rejected_by_name(name):
    tally.bump("bad inputs: tables")
    with pytest.raises(TableError) as info:
        _odd_catalog.__wrapped__(name)
    issue = info.value.issues[0]
    assert (issue.file, issue.entry) == ("kernels/torch_grouped_mm.yaml", "torch_grouped_mm") and ("integers" in issue.message if name.endswith("0.5") else "finite" in issue.message)


@pytest.mark.parametrize("name", sorted(set(_ODD_EDITS) - _REJECTED_BOUNDS))
@budget(0.05)
@given(case=targeted_cases(kernels=("torch_grouped_mm",), catalog=default_runtime_catalog()), absent=st.booleans())
def test_odd_but_legal_table_values_select_and_answer_why_not(name, case, absent):
    tally.bump("bad inputs: tables")
    catalog = _odd_catalog(name)
    env = case.env.with_package("torch", None) if absent else case.env
    evaluate(catalog, case.config, env).to_dict()
    result = why_not(Oracle(catalog, env), case.config, "torch_grouped_mm")
    if result.found:
        assert not evaluate(catalog, result.config, result.environment).candidate(result.kernel).failures
