"""Loader and compiler errors: every problem named with file, entry id and JSON path."""

from __future__ import annotations

import copy

import pytest

from moe_oracle.core.loading import load_catalog
from moe_oracle.core.errors import TableError
from tests.tables_fixture import base_tables, write_tables


def issues_for(tmp_path, mutate=None, raw: dict[str, bytes] | None = None):
    tables = base_tables()
    if mutate:
        mutate(tables)
    dirs = write_tables(tmp_path, tables)
    for rel, data in (raw or {}).items():
        (tmp_path / rel).write_bytes(data)
    with pytest.raises(TableError) as info:
        load_catalog(dirs)
    return info.value.issues


def test_malformed_yaml_names_file_line_and_column(tmp_path):
    issues = issues_for(tmp_path, raw={"kernels/fast.yaml": b"kind: experts\nentries: [\n  - id: x\n"})
    assert len(issues) == 1
    issue = issues[0]
    assert issue.file == "kernels/fast.yaml" and issue.keyword == "yaml"
    assert "line" in issue.path


def test_yaml_tags_that_would_construct_objects_are_rejected(tmp_path):
    issues = issues_for(tmp_path, raw={"kernels/fast.yaml": b"kind: !!python/object/apply:os.system ['true']\n"})
    assert issues[0].keyword == "yaml" and "python/object" in issues[0].message


def test_a_repeated_mapping_key_is_refused_naming_file_key_and_line(tmp_path):
    issues = issues_for(tmp_path, raw={"rules/dup.yaml": b"kind: shortcuts\nshortcuts: []\nkind: shortcuts\n"})
    issue = next(i for i in issues if i.file == "rules/dup.yaml")
    assert issue.keyword == "yaml" and issue.path == "$ (line 3, column 1)"
    assert "duplicate key 'kind' (first at line 1)" in issue.message


def test_merge_keys_may_be_overridden_but_nested_repeats_are_refused():
    import yaml

    from moe_oracle.core.tables import safe_load

    assert safe_load("base: &b {x: 1, y: 2}\nother: {<<: *b, x: 3}\n")["other"] == {"x": 3, "y": 2}
    with pytest.raises(yaml.YAMLError, match="duplicate key 'x'"):
        safe_load("outer:\n  - {x: 1, x: 2}\n")


def test_shipped_yaml_documents_repeat_no_key():
    from moe_oracle.core._resources import package_dir
    from moe_oracle.core.tables import safe_load

    paths = sorted(package_dir().rglob("*.yaml"))
    assert paths
    for path in paths:
        safe_load(path.read_text(encoding="utf-8"))  # raises naming the file's line on a repeated key


def test_non_utf8_and_empty_files(tmp_path):
    issues = issues_for(tmp_path, raw={"kernels/fast.yaml": b"kind: \xff\xfe\n", "kernels/slow.yaml": b""})
    by_file = {i.file: i for i in issues}
    assert by_file["kernels/fast.yaml"].keyword == "encoding"
    assert by_file["kernels/slow.yaml"].keyword == "type" and by_file["kernels/slow.yaml"].value == "empty file"


def test_unknown_enum_value_has_path_entry_and_did_you_mean(tmp_path):
    def mutate(t):
        t["kernels/fast.yaml"]["entries"][1]["supports"]["activation"] = ["slu"]

    issues = issues_for(tmp_path, mutate)
    (issue,) = issues
    assert (issue.file, issue.entry, issue.path) == ("kernels/fast.yaml", "fast", "$.entries[1].supports.activation")
    assert issue.value == "slu" and issue.suggestion() == "silu"
    assert "silu" in issue.allowed


def test_schema_errors_are_all_reported_at_once_with_json_paths(tmp_path):
    def mutate(t):
        del t["kernels/fast.yaml"]["entries"][0]["features"]
        t["kernels/slow.yaml"]["entries"][0]["interface"] = "monolitic"

    issues = issues_for(tmp_path, mutate)
    found = {(i.file, i.entry, i.path, i.keyword) for i in issues}
    assert ("kernels/fast.yaml", "fast_monolithic", "$.entries[0]", "required") in found
    assert ("kernels/slow.yaml", "slow", "$.entries[0].interface", "enum") in found
    slow = next(i for i in issues if i.entry == "slow")
    assert slow.suggestion() == "monolithic"


def test_duplicate_ids_name_both_files(tmp_path):
    def mutate(t):
        t["kernels/slow.yaml"]["entries"][0]["id"] = "fast"

    issues = issues_for(tmp_path, mutate)
    assert any("duplicate id" in i.message and "kernels/fast.yaml" in i.message and i.file == "kernels/slow.yaml" for i in issues)


def test_rule_naming_an_unknown_backend_or_kernel(tmp_path):
    def mutate(t):
        t["rules/priority.yaml"]["orders"][0]["backends"].append("fats")
        t["rules/known_bad.yaml"]["entries"][0]["kernels"] = ["no_such_kernel"]

    issues = issues_for(tmp_path, mutate)
    unknown_backend = next(i for i in issues if i.value == "fats")
    assert unknown_backend.path == "$.orders[0].backends[3]" and unknown_backend.suggestion() == "fast"
    assert any(i.value == "no_such_kernel" and i.file == "rules/known_bad.yaml" for i in issues)


def test_misplaced_table_kind(tmp_path):
    def mutate(t):
        t["kernels/rules_here.yaml"] = copy.deepcopy(t["rules/aliases.yaml"])

    issues = issues_for(tmp_path, mutate)
    assert any(i.file == "kernels/rules_here.yaml" and i.path == "$.kind" and i.allowed == ["experts"] for i in issues)


def test_numeric_keyword_on_an_enum_field_and_undeclared_env_var(tmp_path):
    def mutate(t):
        t["kernels/slow.yaml"]["entries"][0]["constraints"].append({"id": "slow.bad", "field": "activation", "min": 3, "reason": "shape_unsupported", "hint": "x"})
        t["kernels/fast.yaml"]["entries"][1]["env"] = {"VLLM_NOT_DECLARED": [True]}

    issues = issues_for(tmp_path, mutate)
    messages = " | ".join(i.message for i in issues)
    assert "min only applies to numeric fields" in messages
    assert "not declared in rules/environment.yaml" in messages


def test_kernel_with_no_matching_prepare_finalize_is_an_error(tmp_path):
    def mutate(t):
        t["prepare_finalize/pf.yaml"]["entries"] = [e for e in t["prepare_finalize/pf.yaml"]["entries"] if e["interface"] != "monolithic"]

    issues = issues_for(tmp_path, mutate)
    assert any(i.entry == "fast_monolithic" and "no prepare/finalize pairs" in i.message for i in issues)


def test_valid_tables_load_and_hash_is_content_based(tmp_path):
    a = load_catalog(write_tables(tmp_path / "a"))
    b = load_catalog(write_tables(tmp_path / "b"))
    assert a.tables_hash == b.tables_hash
    t = base_tables()
    t["kernels/slow.yaml"]["entries"][0]["constraints"][0]["max"] = 256
    c = load_catalog(write_tables(tmp_path / "c", t))
    assert c.tables_hash != a.tables_hash


def test_validated_table_cache_hit_miss_and_corruption(tmp_path, monkeypatch):
    from moe_oracle.core import tables

    cache = tmp_path / "cache"
    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(cache))
    dirs = write_tables(tmp_path / "t")
    first = load_catalog(dirs)
    entries = list(cache.glob("tables-*.json"))
    assert len(entries) == 1
    calls = []
    monkeypatch.setattr(tables, "read_tables", lambda *a, **k: calls.append(a) or ([], []))
    for compiled in cache.glob("catalog-*.pickle"):
        compiled.unlink()  # this test is about the validated-table (JSON) cache beneath it
    second = load_catalog(dirs)  # answered from the cache: read_tables is not called
    assert calls == [] and second.tables_hash == first.tables_hash
    monkeypatch.undo()
    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(cache))
    for compiled in cache.glob("catalog-*.pickle"):
        compiled.unlink()
    entries[0].write_text("{not json")
    assert load_catalog(dirs).tables_hash == first.tables_hash  # corrupt entry: full path
    (tmp_path / "t" / "kernels" / "fast.yaml").write_text("kind: experts\n")
    with pytest.raises(TableError):
        load_catalog(dirs)  # changed bytes miss the cache and are validated


def test_compiled_catalog_cache_hit_and_every_miss(tmp_path, monkeypatch):
    from moe_oracle.core import catalog_cache
    from moe_oracle.core.compile import tableset as compile_pkg
    from moe_oracle.core.engine import evaluate
    from moe_oracle.tools.sampling import sample_configs

    cache = tmp_path / "cache"
    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(cache))
    dirs = write_tables(tmp_path / "t")
    first = load_catalog(dirs)
    (entry,) = cache.glob("catalog-*.pickle")
    compiles = []
    real = compile_pkg.compile_set
    monkeypatch.setattr(compile_pkg, "compile_set", lambda *a, **k: compiles.append(1) or real(*a, **k))
    second = load_catalog(dirs)
    assert compiles == [] and second is not first  # unpickled, not compiled
    for cfg, env in sample_configs(40, 3, first):
        assert evaluate(second, cfg, env).to_dict() == evaluate(first, cfg, env).to_dict()
    entry.write_bytes(entry.read_bytes()[:-10])  # damaged: fails its digest, compiled afresh
    assert load_catalog(dirs).tables_hash == first.tables_hash and compiles == [1]
    monkeypatch.setattr(catalog_cache, "code_fingerprint", lambda: "other code")
    load_catalog(dirs)  # another compiler: a miss
    assert compiles == [1, 1]
    t = base_tables()
    t["kernels/slow.yaml"]["entries"][0]["constraints"][0]["max"] = 256
    changed = load_catalog(write_tables(tmp_path / "c", t))  # other table bytes: a miss
    assert compiles == [1, 1, 1] and changed.tables_hash != first.tables_hash
    monkeypatch.setenv("MOE_ORACLE_NO_CACHE", "1")
    load_catalog(dirs)
    assert compiles == [1, 1, 1, 1]


def test_compiled_catalog_cache_keeps_a_bounded_number_of_entries(tmp_path):
    from moe_oracle.core import catalog_cache

    for n in range(catalog_cache._KEEP + 3):
        (tmp_path / f"catalog-{n}.pickle").write_bytes(b"x")
    catalog_cache._prune(tmp_path, keep=catalog_cache._KEEP)
    assert len(list(tmp_path.glob("catalog-*.pickle"))) == catalog_cache._KEEP


def test_non_finite_bounds_are_rejected(tmp_path):
    def mutate(t):
        t["kernels/slow.yaml"]["entries"][0]["constraints"][0]["max"] = float("nan")

    issues = issues_for(tmp_path, mutate)
    assert any("finite" in i.message and i.entry == "slow" for i in issues)


def test_compiled_catalog_cache_key_names_the_interpreter_and_packaging(monkeypatch):
    """Two environments sharing one cache directory (one editable checkout, another Python or
    packaging) never load each other's pickles: both versions are part of the code fingerprint."""
    import packaging

    from moe_oracle.core import catalog_cache

    here = catalog_cache.code_fingerprint()
    assert catalog_cache.code_fingerprint() == here
    monkeypatch.setattr(packaging, "__version__", "0.0-other")
    assert catalog_cache.code_fingerprint() != here
    monkeypatch.undo()
    monkeypatch.setattr(catalog_cache.sys, "version", "3.0.0 (another interpreter)")
    assert catalog_cache.code_fingerprint() != here


def test_an_edit_during_the_read_is_cached_under_no_key(tmp_path, monkeypatch):
    """A table edited after the cache key was computed but before it was read: the answer is for
    the bytes read, and neither cache keeps it (the tester's race: an edit landing ~1 s into a
    cold CLI call poisoned both caches under the old bytes' key)."""
    from moe_oracle.core import tables as tables_mod

    cache = tmp_path / "cache"
    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(cache))
    t = base_tables()
    dirs = write_tables(tmp_path / "t", t)
    target = tmp_path / "t" / "kernels" / "slow.yaml"
    original = target.read_bytes()
    edited = copy.deepcopy(t)
    edited["kernels/slow.yaml"]["entries"][0]["constraints"][0]["max"] = 256
    edited_bytes = (write_tables(tmp_path / "e", edited)[0].parent / "kernels" / "slow.yaml").read_bytes()
    assert edited_bytes != original
    real = tables_mod.read_tables

    def read_after_an_edit(*args, **kwargs):
        target.write_bytes(edited_bytes)  # lands between the key and the read
        return real(*args, **kwargs)

    monkeypatch.setattr(tables_mod, "read_tables", read_after_an_edit)
    during = load_catalog(dirs)
    monkeypatch.setattr(tables_mod, "read_tables", real)
    assert not list(cache.glob("catalog-*.pickle")) and not list(cache.glob("tables-*.json"))
    target.write_bytes(original)
    after = load_catalog(dirs)
    assert after.tables_hash != during.tables_hash
    monkeypatch.setenv("MOE_ORACLE_NO_CACHE", "1")
    assert load_catalog(dirs).tables_hash == after.tables_hash


def test_a_catalog_cache_entry_with_a_binary_first_line_is_a_miss(tmp_path):
    from moe_oracle.core import catalog_cache

    (tmp_path / "catalog-k.pickle").write_bytes(bytes(range(128, 256)) * 16)
    assert catalog_cache.load(tmp_path, "k") is None


def test_a_catalog_cache_load_leaves_the_collector_as_it_found_it(tmp_path):
    """The load pauses the collector and moves what it read to the oldest generation; the
    collector's switch is restored, and objects another part of the process froze stay frozen."""
    import gc

    from moe_oracle.core import catalog_cache

    catalog_cache.store(tmp_path, "k", load_catalog())
    enabled = gc.isenabled()
    try:
        for on in (True, False):
            (gc.enable if on else gc.disable)()
            assert catalog_cache.load(tmp_path, "k") is not None and gc.isenabled() is on
        gc.enable()
        held = [[n] for n in range(10)]
        gc.freeze()
        frozen = gc.get_freeze_count()
        assert catalog_cache.load(tmp_path, "k") is not None
        # Not an exact count: a frozen object still dies when its last reference goes (CI on
        # f4e20ed saw 2 fewer). An unfreeze would drop the count to 0; a freeze would add the
        # entry's ~40,000 objects.
        assert abs(gc.get_freeze_count() - frozen) < 10_000, (frozen, gc.get_freeze_count())
    finally:
        gc.unfreeze()
        (gc.enable if enabled else gc.disable)()
    del held


def test_generated_file_cache_answers_the_text_parsed_and_only_that(tmp_path, monkeypatch):
    """read_generated: a hit returns what parsing gives; an entry is found by the text's sha256
    only; a damaged entry, a document JSON would change and a disabled cache all parse the YAML."""
    from moe_oracle.core import tables as tables_mod

    cache = tmp_path / "cache"
    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(cache))
    facts = tmp_path / "facts.yaml"
    facts.write_text("releases:\n  0.31.0:\n    quantization: [fp8, gptq]\n  '1': {n: 1.5, ok: true, none: null}\n")
    parses = []
    real = tables_mod.safe_load_generated
    monkeypatch.setattr(tables_mod, "safe_load_generated", lambda text: parses.append(1) or real(text))
    first = tables_mod.read_generated(facts)
    (entry,) = cache.glob("generated-*.json")
    assert tables_mod.read_generated(facts) == first == real(facts.read_text()) and parses == [1]
    facts.write_text(facts.read_text().replace("gptq", "awq"))  # another text: another key
    assert tables_mod.read_generated(facts)["releases"]["0.31.0"]["quantization"] == ["fp8", "awq"] and parses == [1, 1]
    facts.write_text(facts.read_text().replace("awq", "gptq"))
    entry.write_text(entry.read_text().replace("fp8", "fp9"))  # damaged: fails its digest
    assert tables_mod.read_generated(facts) == first and parses == [1, 1, 1]
    dated = tmp_path / "dated.yaml"
    dated.write_text("when: 2024-01-02\n7: seven\n")  # a date and an int key: not cached
    assert tables_mod.read_generated(dated) == real(dated.read_text())
    assert len(list(cache.glob("generated-*.json"))) == 2  # the two texts of facts.yaml
    assert tables_mod.read_generated(facts) == first and parses == [1, 1, 1, 1]  # the damaged entry was rewritten
    monkeypatch.setenv("MOE_ORACLE_NO_CACHE", "1")
    tables_mod.read_generated(facts)
    assert parses == [1, 1, 1, 1, 1]
    with pytest.raises(FileNotFoundError):
        tables_mod.read_generated(tmp_path / "missing.yaml")


def test_a_bad_value_in_a_constraint_is_not_blamed_on_its_valid_keys(tmp_path):
    """A constraint whose max is a string: one issue at .max, not also "Unevaluated properties ...
    ('field', 'id', 'max', ... were unexpected)" for the keys its failing subschema left unevaluated."""

    def bad_max(t):
        t["kernels/slow.yaml"]["entries"][0]["constraints"][0]["max"] = "992"

    issues = issues_for(tmp_path / "a", bad_max)
    assert [i.path.rsplit(".", 1)[-1] for i in issues] == ["max"] and "not of type 'number'" in issues[0].message

    def unknown_key(t):
        t["kernels/slow.yaml"]["entries"][0]["constraints"][0]["maximum"] = 992

    issues = issues_for(tmp_path / "b", unknown_key)
    assert len(issues) == 1 and "maximum" in f"{issues[0].path} {issues[0].message} {issues[0].value}"


@pytest.mark.parametrize("value, disabled", [("1", True), ("true", True), ("TRUE", True), ("Yes", True), ("on", True), (" 1 ", True), ("0", False), ("false", False), ("No", False), ("off", False), ("", False), (None, False)])
def test_no_cache_accepts_the_usual_truthy_spellings(monkeypatch, tmp_path, value, disabled):
    from moe_oracle.core.tables import cache_dir

    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(tmp_path))
    if value is None:
        monkeypatch.delenv("MOE_ORACLE_NO_CACHE", raising=False)
    else:
        monkeypatch.setenv("MOE_ORACLE_NO_CACHE", value)
    assert (cache_dir() is None) is disabled


def test_a_table_directory_name_too_long_is_a_table_error_not_a_traceback(tmp_path):
    """`--tables aaaa...` (5,000 characters) ended in OSError: File name too long (Path.is_dir)."""
    root = tmp_path / ("a" * 5000)
    with pytest.raises(TableError) as exc:
        load_catalog([root / "kernels", root / "prepare_finalize", root / "rules"])
    assert all(i.keyword == "io" and "cannot read the table directory" in i.message for i in exc.value.issues)
