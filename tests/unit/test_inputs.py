"""MoEConfig files: schema validation, aliases, replayable documents."""

from __future__ import annotations

import pytest
import yaml

from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.files import config_document, config_from_document, load_config_file

GOOD = {
    "model": {"num_experts": 64, "top_k": 4, "hidden_size": 1024, "intermediate_size": 512, "activation": "silu", "quant": "fp8_block"},
    "device": {"gpu": "B200"},
    "parallel": {"tp_size": 2, "all2all_backend": "naive"},
    "max_num_tokens": 4096,
    "environment": {"packages": {"fastpkg": "1.3"}, "absent": ["deep-ep"], "env": {"VLLM_BATCH_INVARIANT": "0"}},
}


def write(tmp_path, doc, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


def test_good_file_loads_with_alias_warning_and_environment(tmp_path, small_catalog):
    loaded = load_config_file(write(tmp_path, GOOD), small_catalog)
    c = loaded.config
    assert (c.device.capability, c.parallel.tp_size, c.parallel.all2all_backend.value, c.quant.name, c.max_num_tokens) == (100, 2, "allgather_reducescatter", "fp8_block", 4096)
    warning = c.source_of("parallel.all2all_backend")
    assert warning is not None and warning.evidence.startswith("warning:") and "removed" in warning.evidence
    assert loaded.environment.package("fastpkg") == "1.3"


def test_schema_errors_name_the_file_and_path(tmp_path, small_catalog):
    doc = {**GOOD, "model": {**GOOD["model"], "activation": "slu", "top_k": "4"}, "extra": 1}
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, doc), small_catalog)
    paths = {i.path for i in info.value.issues}
    assert paths == {"$.extra", "$.model.activation", "$.model.top_k"}
    by_path = {i.path: i for i in info.value.issues}
    assert by_path["$.model.activation"].suggestion() == "silu" and by_path["$.extra"].keyword == "additionalProperties"
    assert all(i.file.endswith("cfg.yaml") for i in info.value.issues)


@pytest.mark.parametrize("model", ["qwen3", 7, ["qwen3"]], ids=["string", "number", "list"])
def test_a_model_that_is_not_a_mapping_is_said_once(tmp_path, small_catalog, model):
    # The schema's type check and its if/else branch both fail a non-object model: one problem.
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, {**GOOD, "model": model}), small_catalog)
    said = [(i.path, i.message) for i in info.value.issues]
    assert said.count(("$.model", f"{model!r} is not of type 'object'")) == 1, said
    assert len(said) == len(set(said)), said


@pytest.mark.parametrize(("quant", "path", "allowed"), [
    ("fp8_blok", "$.model.quant", "schemes"),
    (7, "$.model.quant", "schemes"),
    (["fp8_block"], "$.model.quant", "schemes"),
    (None, "$.model.quant", "schemes"),
    ({"weight": "fp9", "activation": None}, "$.model.quant.weight", "keys"),
    ({"weight": "fp8_static_block128", "activation": "fp8_dynamc_group128"}, "$.model.quant.activation", "keys"),
], ids=["misspelt-name", "number", "list", "null", "bad-weight-key", "bad-activation-key"])
def test_a_bad_quant_in_a_file_lists_what_is_allowed_as_the_flag_does(tmp_path, small_catalog, quant, path, allowed):
    from moe_oracle.inputs.files import parse_quant
    from moe_oracle.core.quant import QUANT_KEYS, SCHEME_ALIASES, SCHEMES

    names = [*SCHEMES, *SCHEME_ALIASES]  # --quant and a file both take a reference alias (FP8-Blk)
    with pytest.raises(ConfigError) as flag:
        parse_quant("fp8_blok")
    assert flag.value.issues[0].allowed == names
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, {**GOOD, "model": {**GOOD["model"], "quant": quant}}), small_catalog)
    (issue,) = info.value.issues
    assert issue.file.endswith("cfg.yaml") and issue.path == path
    assert issue.allowed == (names if allowed == "schemes" else list(QUANT_KEYS))


def test_a_file_takes_the_reference_aliases_the_quant_flag_takes(tmp_path, small_catalog):
    from moe_oracle.inputs.files import parse_quant
    from moe_oracle.core.quant import SCHEME_ALIASES

    for alias, name in SCHEME_ALIASES.items():
        loaded = load_config_file(write(tmp_path, {**GOOD, "model": {**GOOD["model"], "quant": alias}}), small_catalog)
        assert loaded.config.quant.name == name == parse_quant(alias).name


def test_a_file_takes_every_spelling_the_quant_flag_takes(tmp_path, small_catalog):
    """``--quant`` reads a name ignoring case and ``-``/``_``; a file's ``model.quant`` was checked
    against the schema's enum of lower-case names first, so ``FP8_Block`` was refused there."""
    from moe_oracle.inputs.files import parse_quant
    from moe_oracle.core.quant import SCHEME_ALIASES, SCHEMES

    for given in [*SCHEMES, *SCHEME_ALIASES]:
        for spelling in (given.upper(), given.title(), given.replace("_", "-"), given.upper().replace("-", "_")):
            loaded = load_config_file(write(tmp_path, {**GOOD, "model": {**GOOD["model"], "quant": spelling}}), small_catalog)
            assert loaded.config.quant == parse_quant(spelling), spelling
    hf = {**GOOD, "model": {"hf_config": "qwen3-30b-a3b", "quant": "FP8_Block"}}  # the checkpoint's override too
    assert load_config_file(write(tmp_path, hf), small_catalog).config.quant.name == "fp8_block"


@pytest.mark.parametrize("spelling", ["FP8_Blok", "fp8-blok"])
def test_a_misspelt_quant_in_a_file_keeps_its_did_you_mean(tmp_path, small_catalog, spelling):
    doc = {**GOOD, "model": {**GOOD["model"], "quant": spelling}}
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, doc), small_catalog)
    (issue,) = info.value.issues
    assert (issue.path, issue.value, issue.suggestion()) == ("$.model.quant", spelling, "fp8_block")
    assert doc["model"]["quant"] == spelling  # the caller's document is not rewritten


def test_unknown_all2all_backend_has_did_you_mean(tmp_path, small_catalog):
    doc = {**GOOD, "parallel": {"all2all_backend": "deepep_low_latncy"}}
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, doc), small_catalog)
    assert info.value.issues[0].suggestion() == "deepep_low_latency"


def test_malformed_empty_and_hostile_files(tmp_path, small_catalog):
    for text, keyword in (("model: [\n", "yaml"), ("", "type"), ("!!python/object/apply:os.system ['echo hi']\n", "yaml"), ("- 1\n- 2\n", "type")):
        with pytest.raises(ConfigError) as info:
            load_config_file(write(tmp_path, text), small_catalog)
        assert info.value.issues[0].keyword == keyword
    deep = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ConfigError):
        load_config_file(write(tmp_path, deep), small_catalog)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"model: \xff\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(binary, small_catalog)
    assert info.value.issues[0].keyword == "encoding"


def test_hf_config_reference_and_semantic_errors(tmp_path, small_catalog):
    loaded = config_from_document({"model": {"hf_config": "qwen3-30b-a3b"}, "device": {"gpu": "H200"}}, small_catalog)
    assert loaded.config.num_experts == 128 and loaded.config.routing_method.value == "renormalize_naive"
    with pytest.raises(ConfigError) as info:
        config_from_document({"model": {**GOOD["model"], "top_k": 100}, "device": {"gpu": "B200"}}, small_catalog, file="x.yaml")
    assert info.value.issues[0].path == "$.model.top_k" and info.value.issues[0].file == "x.yaml"
    with pytest.raises(ConfigError) as info:
        config_from_document({"model": GOOD["model"], "device": {"gpu": "B2000"}}, small_catalog)
    assert info.value.issues[0].suggestion() == "B200"


def test_document_round_trip(tmp_path, small_catalog):
    loaded = load_config_file(write(tmp_path, GOOD), small_catalog)
    doc = config_document(loaded.config, loaded.environment)
    again = config_from_document(yaml.safe_load(yaml.safe_dump(doc)), small_catalog)
    strip = lambda c: c.with_changes(provenance=())  # noqa: E731
    assert strip(again.config) == strip(loaded.config)
    assert again.environment.fingerprint == loaded.environment.fingerprint


def test_unknown_moe_backend_in_a_file_names_the_file(tmp_path, small_catalog):
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, {**GOOD, "moe_backend": "slwo"}), small_catalog)
    issue = info.value.issues[0]
    assert issue.file.endswith("cfg.yaml") and issue.path == "$.moe_backend" and issue.suggestion() == "slow"


@pytest.mark.parametrize(("value", "said"), [(None, "not null"), (["fp8_block"], "not a list"), (True, "not the boolean true"), (7, "not the number 7")], ids=["null", "list", "bool", "int"])
def test_a_quant_of_another_type_says_what_it_is_and_what_to_write(tmp_path, small_catalog, value, said):
    """``quant:`` left empty (YAML null) or ``[fp8_block]`` was refused as "not one of the allowed
    values" with no word of what was written (the schema's enum branch, whose value is dropped
    when it is no scalar)."""
    doc = {**GOOD, "model": {**GOOD["model"], "quant": value}}
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, doc), small_catalog)
    (issue,) = info.value.issues
    assert issue.path == "$.model.quant"
    assert f"must be a quant scheme name (or reference alias such as FP8-Blk) or a {{weight, activation}} mapping, {said}" in issue.format()
    assert "fp8_block" in issue.allowed


EMPTY_QUANT = {
    "empty-mapping": ({}, "must not be an empty mapping: it names no quant scheme"),
    "empty-string": ("", "must not be empty: it names no quant scheme"),
    "blank-string": ("  ", "must not be empty: it names no quant scheme"),
}


@pytest.mark.parametrize("hf", [False, True], ids=["fields", "hf_config"])
@pytest.mark.parametrize(("value", "said"), EMPTY_QUANT.values(), ids=EMPTY_QUANT.keys())
def test_an_empty_quant_is_refused_with_the_forms_it_takes(tmp_path, small_catalog, value, said, hf):
    """``model: {..., quant: {}}`` was read as unquantized, silently: an empty mapping names no
    scheme (``unquantized`` is the name for none, ``{weight: null}`` says it key by key)."""
    from moe_oracle.core.quant import QUANT_FORMS

    model = {"hf_config": "qwen3-30b-a3b", "quant": value} if hf else {**GOOD["model"], "quant": value}
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, {**GOOD, "model": model}), small_catalog)
    (issue,) = info.value.issues
    assert issue.path == "$.model.quant" and issue.value == value and issue.file.endswith("cfg.yaml")
    assert said in issue.message and list(issue.allowed) == list(QUANT_FORMS)


@pytest.mark.parametrize("value", [{}, "", {"wieght": "fp8_static_block128"}], ids=["empty-mapping", "empty-string", "misspelt-key"])
def test_parse_quant_refuses_what_names_no_scheme(value):
    """The Python door (``parse_quant``, which ``--quant`` and ``model.quant`` go through) read
    ``{}`` and a mapping of other keys as unquantized."""
    from moe_oracle.inputs.files import parse_quant

    with pytest.raises(ConfigError) as info:
        parse_quant(value, "$.model.quant")
    assert info.value.issues[0].path == "$.model.quant"


def test_an_explicitly_unquantized_mapping_is_still_taken():
    from moe_oracle.inputs.files import parse_quant

    assert parse_quant({"weight": None, "activation": None}).name == "unquantized" and parse_quant({"weight": None}).name == "unquantized"


@pytest.mark.parametrize("key", ["hf_config", "hf_quant_config"])
def test_a_null_checkpoint_path_says_yaml_read_it_as_null(tmp_path, small_catalog, key):
    """``hf_config: ~`` is YAML's null, not the home directory (a leading ~ is expanded only in a
    path such as ~/m/config.json); jsonschema's "None is not of type 'string'" did not say so."""
    doc = {"model": {"hf_config": "qwen3-30b-a3b", key: None}, "device": {"gpu": "H200"}}
    with pytest.raises(ConfigError) as info:
        load_config_file(write(tmp_path, doc), small_catalog)
    (issue,) = info.value.issues
    assert issue.path == f"$.model.{key}" and "None is not" not in issue.message
    assert "not null: YAML reads an empty value or a bare ~ as null" in issue.message and "'~'" in issue.message
