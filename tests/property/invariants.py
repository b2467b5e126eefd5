"""The invariants, as plain functions of generated inputs; each raises AssertionError when broken.

``tests/property/test_*.py`` state one invariant per ``@given`` test by calling one of these;
``benchmarks/property_bench.py`` times them. Engine invariants run over the real shipped
catalog (``default_catalog()``); the table invariants over recompiled mutations of its files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from collections import Counter
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from moe_oracle.explain.whynot import why_not
from moe_oracle import cli
from moe_oracle.core.catalog import Catalog
from moe_oracle.core.loading import compile_tables
from moe_oracle.core.decision import Decision
from moe_oracle.inputs.quant_checks import config_quant_method_issue, layer_gate_methods, platform_admits, verify_layer_quantization
from moe_oracle.inputs.declared import answer_release
from moe_oracle.core.engine import evaluate
from moe_oracle.core.environment import Environment
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.names import escaped
from moe_oracle.core.decision import NoEligibleKernelError
from moe_oracle.core.fields import FIELDS
from moe_oracle.inputs.files import config_from_document, load_config_file
from moe_oracle.inputs.hardware import unknown_arch, unknown_capability
from moe_oracle.inputs.sequence_parallel import with_sequence_parallel
from moe_oracle.inputs.release_facts import ENGINE_VERSION
from moe_oracle.core.oracle import Oracle, select
from moe_oracle.core.records import Status
from moe_oracle.core.refusals import refusals
from moe_oracle.core.tables import TableFile, load_schemas
from moe_oracle.core.vocab import Interface
from tests.property.reference_model import Judgement, Outcome, load_model
from tests.property.strategies import CATALOG, LEAF_PATHS, Case, release_view
from tests.property.table_mutations import shipped_files

SCHEMAS = load_schemas()
MODEL = load_model()

# Decisions and re-derivations are immutable and shared by the invariants that only read them: the
# ci profile is derandomized, so every engine invariant test draws the same examples and each config
# is selected once per session. check_deterministic evaluates afresh and compares.
SHARED = 64


@lru_cache(maxsize=SHARED)
def _decided(case: Case) -> Decision:
    return evaluate(CATALOG, case.config, case.env)


def decide(case: Case, catalog: Catalog = CATALOG) -> Decision:
    """The Decision for ``case`` (for the shipped catalog: shared; see :data:`SHARED`)."""
    if catalog is CATALOG:
        return _decided(case)
    return evaluate(catalog, case.config, case.env)


@lru_cache(maxsize=SHARED)
def record(case: Case) -> dict[str, Any]:
    """``decide(case).to_dict()``, shared: read it, never change it."""
    return decide(case).to_dict()


def same_evaluation(a: Decision, b: Decision) -> bool:
    """Every field of two Decisions is equal (the ranking's view: the same object), so their records are too."""
    for f in dataclasses.fields(Decision):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "ranking":
            if x.view is not y.view or any(getattr(x, g.name) != getattr(y, g.name) for g in dataclasses.fields(x) if g.name != "view"):
                return False
        elif f.name == "normalized":
            if dict(x.values) != dict(y.values) or dict(x.sources) != dict(y.sources):
                return False
        elif x != y:
            return False
    return True


def verdict(d: Decision) -> dict[str, Any]:
    """What a selection decided, without the echo of its inputs (provenance, sources, notes)."""
    return {
        "kernel": d.kernel,
        "prepare_finalize": d.prepare_finalize,
        "order": d.order_rule,
        "backends": list(d.backend_order),
        "demotions": [x.to_dict() for x in d.demotions],
        "requested": d.requested,
        "requested_by": d.requested_by,
        "candidates": [
            (
                c.kernel,
                c.status.value,
                c.prepare_finalize,
                c.outranked_by,
                [(f.rule, f.code.value, f.field, repr(f.observed), repr(f.allowed)) for f in c.failures],
                [(a.rule, a.field) for a in c.assumptions],
            )
            for c in d.candidates
        ],
    }


def eligible(d: Decision) -> set[str]:
    return {c.kernel for c in d.candidates if c.status is not Status.REJECTED}


# ---------------------------------------------------------------------------------- engine


def check_deterministic(case: Case) -> None:
    """Same inputs again, through a fresh Oracle (whose empty memo makes it evaluate afresh) -> an
    equal Decision and the identical record; asked again -> the same object (its memo)."""
    first = decide(case)
    oracle = Oracle(CATALOG, case.env)
    answered = oracle.explain(case.config)
    assert answered is not first
    assert same_evaluation(answered, first)
    assert answered.to_dict() == record(case)
    assert oracle.explain(case.config) is answered  # answered from the memo


def check_file_order(case: Case, order: Sequence[int]) -> None:
    """compile_tables on the table files in any order -> identical decisions."""
    files = shipped_files()
    shuffled = compile_tables([files[i] for i in order])
    assert shuffled.tables_hash == CATALOG.tables_hash
    assert decide(case, shuffled).to_dict() == decide(case).to_dict()


def check_winner_is_first_eligible(case: Case) -> None:
    """The winner is the first candidate without failures, except after a shortcut that raises
    when its kernel cannot serve the layer (vLLM ``_return_or_raise``): nothing runs then, and the
    shortcut's kernels, ranked first, are rejected (failures_complete holds the outcome to the
    tables' semantics); and except where the engine selects a kernel and then refuses the layer
    for its ``after_selection`` checks (e.g. FlashInfer's TRT-LLM routing limits), ranked ahead of
    every eligible candidate."""
    d = decide(case)
    ranked = d.candidates
    if d.shortcut is not None and d.winner is None:
        # (refused: the shortcut's kernel vLLM returns or raises for; None: a check binding every
        # kernel refuses the layer before the shortcut tries one.)
        at = d.refused if d.refused is not None else 0
        assert ranked[at].failures, f"shortcut {d.shortcut} raised, but its kernel {ranked[at].kernel} has no failure"
        return
    first = next((i for i, c in enumerate(ranked) if not c.failures), None)
    if d.winner is None and d.refused is not None:
        # Selected, then refused by an after-selection check (Decision.refused): that kernel fails
        # one, everything ranked before it fails a check that stops selection, and every eligible
        # candidate ranks after it.
        post = d.ranking.view.after_selection
        assert any(f.rule in post for f in ranked[d.refused].failures), f"{ranked[d.refused].kernel} refused the layer without an after-selection failure"
        assert all(c.failures for c in ranked[:d.refused]) and (first is None or first > d.refused), f"eligible {ranked[first].kernel} ranks before the refused {ranked[d.refused].kernel}"
        return
    assert d.winner == first, f"winner {d.kernel}, first eligible {ranked[first].kernel if first is not None else None}"
    if first is not None:
        assert ranked[first].status is Status.SELECTED and d.kernel == ranked[first].kernel
        assert all(c.status is Status.REJECTED for c in ranked[:first])


def check_backend_blocks(case: Case) -> None:
    """Candidates come in backend blocks (in backend order); inside one, monolithic first, then table order.

    Except where a shortcut selected the winner: its kernels come first, as the engine tries them
    before its priority order (ranking_follows_priority checks that order).
    """
    d = decide(case)
    if d.shortcut is not None:
        return
    table_index = {e.id: i for i, e in enumerate(release_view(case.env).experts)}  # the release's tables
    backends = [c.backend for c in d.candidates]
    blocks = [b for i, b in enumerate(backends) if i == 0 or backends[i - 1] != b]
    assert len(blocks) == len(set(blocks)), f"a backend's candidates are split: {blocks}"
    assert blocks == [b for b in d.backend_order if b in set(blocks)]
    for backend in blocks:
        mine = [c for c in d.candidates if c.backend == backend]
        keys = [(0 if c.interface is Interface.MONOLITHIC else 1, table_index[c.kernel]) for c in mine]
        assert keys == sorted(keys), f"{backend}: {[c.kernel for c in mine]} not monolithic-first in table order"


def check_non_winners_explained(case: Case) -> None:
    """Every non-winner is eligible-but-outranked by the winner (or by the kernel the engine
    selected and then refused the layer for), or rejected with >= 1 failure."""
    d = decide(case)
    for rank, c in enumerate(d.candidates):
        if rank == d.winner:
            assert c.status is Status.SELECTED and not c.failures and c.outranked_by is None
        elif c.status is Status.ELIGIBLE:
            # Outranked by the winner, or by the kernel the engine selected and then refused the layer for.
            assert not c.failures and (d.winner is not None or (d.refused is not None and rank > d.refused)) and c.outranked_by == d.outranked_by is not None
        else:
            assert c.status is Status.REJECTED and len(c.failures) >= 1 and c.outranked_by is None


@lru_cache(maxsize=SHARED)
def _values(case: Case) -> dict[str, Any]:
    """The reference model's values, derived from the case alone (shared)."""
    return MODEL.for_release(case.env).values(case.config, case.env)


def _model_view(case: Case) -> tuple[Decision, dict[str, Any]]:
    """The decision and the model's values."""
    return decide(case), _values(case)


def _model(case: Case):  # noqa: ANN202 - reference_model.Model
    return MODEL.for_release(case.env)


@lru_cache(maxsize=SHARED)
def _judged(case: Case) -> Judgement:
    """The reference model's rules of every kernel with their outcomes, under the model's values (shared)."""
    return _model(case).judge(_values(case))


def check_normalized_values(case: Case) -> None:
    """Every normalized field equals its re-derivation from the config (vLLM's rules)."""
    d = decide(case)
    got = d.normalized.values
    # The model derives every field from the config and the YAML (reference_fields.py for the
    # derived ones); every field it computes is compared, and every field the engine records
    # must be among them.
    values = _model(case).values(case.config, case.env)
    unmodelled = sorted(n for n in got if n not in values)
    assert not unmodelled, f"engine fields the reference model does not derive: {unmodelled}"
    for name, value in values.items():
        if name.startswith("_"):
            continue  # the model's own marks, not fields
        assert name in got, f"field {name} missing from the normalized values"
        assert got[name] == value and type(got[name]) is type(value), f"{name}: engine {got[name]!r}, re-derived {value!r}"


def check_failures_sound(case: Case) -> None:
    """Every failure names a rule that the declared tables contain and that really fails, with its code, field and observed value."""
    d, values = _model_view(case)
    judged = _judged(case)
    for c in d.candidates:
        if not c.failures:
            continue
        failing = {r.rule: r for r in judged.failing(c.kernel)}
        for f in c.failures:
            rule = failing.get(f.rule)
            if rule is None:  # not a failing rule: say whether it is declared at all
                declared = {r.rule: r for r in judged.rules(c.kernel)}
                assert f.rule in declared, f"{c.kernel}: failure {f.rule} is no rule the tables declare for it"
                rule = declared[f.rule]
                raise AssertionError(f"{c.kernel}: {f.rule} reported failing, but it {rule.outcome(values).value}s for {rule.observed(values)!r}")
            assert (f.code.value, f.field) == (rule.code, rule.field), f"{c.kernel}: {f.rule} reported as {f.code.value} on {f.field}, declared {rule.code} on {rule.field}"
            assert f.observed == rule.observed(values), f"{c.kernel}: {f.rule} observed {f.observed!r}, the config has {rule.observed(values)!r}"


def check_failures_complete(case: Case) -> None:
    """No short-circuit: every declared rule that fails is reported (once), except on the one
    kernel whose failures the engine waives (they are warnings): a shortcut's unchecked return, or
    a winner that fails only rules vLLM checks when it builds the kernel. The winner is the one
    the tables' selection semantics give (reference_model.Model.selection)."""
    d = decide(case)
    judged = _judged(case)
    winner, waived = _model(case).selection(judged.values, judged)
    assert d.kernel == winner, f"winner {d.kernel} (shortcut {d.shortcut}), the tables say {winner}"
    for c in d.candidates:
        expected = sorted(r.rule for r in judged.failing(c.kernel)) if c.kernel != waived else []
        got = sorted(f.rule for f in c.failures)
        if got != expected:  # as multisets: each failing rule reported exactly once
            extra, missing = Counter(got) - Counter(expected), Counter(expected) - Counter(got)
            raise AssertionError(f"{c.kernel}: reported but not declared failing {sorted(extra.elements())}, declared failing but not reported {sorted(missing.elements())}")


def check_assumptions_are_unknown_inputs(case: Case) -> None:
    """A candidate's assumptions are exactly the rules that abstain because an input is unknown."""
    d = decide(case)
    judged = _judged(case)
    for c in d.candidates:
        expected = sorted(r.rule for r in judged.abstaining(c.kernel))
        got = sorted(a.rule for a in c.assumptions)
        assert got == expected, f"{c.kernel}: assumptions {got}, declared abstaining {expected}"


def check_ranking_follows_priority(case: Case) -> None:
    """Backend order and candidate ranking follow the declared priority rules."""
    d, values = _model_view(case)
    model = _model(case)
    assert list(d.backend_order) == model.backend_order(values)
    assert [c.kernel for c in d.candidates] == model.ranking(values)


def check_requested(case: Case) -> None:
    """A requested backend is the winner, or Oracle.select raises NoEligibleKernelError naming it with its failures.

    The requested backends are the ones the family's request map gives the name (mapping order),
    else its alias's or its own; ``()`` where the family's oracle refuses the name.
    Except where a shortcut returns its kernel without reading moe_backend (before selection, or
    in place of the selected one after it): the note says so.
    """
    d, values = _model_view(case)
    expected = _model(case).request(values)[1]
    assert d.requested == expected
    if expected is None:
        return
    if d.shortcut is not None and d.winner is not None:
        assert any("is not read" in n and d.shortcut in n for n in d.notes), d.notes
        return
    if d.winner is not None:
        assert d.selected is not None and d.selected.backend in expected
        return
    try:
        Oracle(CATALOG, case.env).select(case.config)
    except NoEligibleKernelError as exc:
        assert exc.decision.requested == expected
        text = str(exc)
        assert all(b in text for b in expected), text
        refused = d.refused_kernel
        if refused is not None:
            # Selected and then refused (an after-selection check, or a shortcut that raises before
            # moe_backend is read, vLLM _return_or_raise): that kernel is the reason, named in the error;
            # a requested candidate ranked after it may be eligible (outranked by it).
            assert refused in text, f"the layer is refused for {refused}, not named in {text!r}"
        for c in d.candidates:
            if c.backend in expected:
                if refused is not None and not c.failures:
                    assert c.status is Status.ELIGIBLE and c.outranked_by == refused, f"{c.kernel}: no failure, not outranked by {refused}"
                    continue
                assert c.failures and c.kernel in text
                assert all(f.rule in text for f in c.failures), f"{c.kernel}: not every failure in {text!r}"
    else:
        raise AssertionError("Oracle.select did not raise although the requested backend is not eligible")


ENGINE_READS = frozenset({"dispatch", "moe_backend"})
"""Fields engine.evaluate reads itself: the P/F pairing (dispatch) and the request (moe_backend)."""


@lru_cache(maxsize=1)
def read_fields() -> frozenset[str]:
    """Every normalized field any check, order, adjustment, opt-in or override of the catalog reads."""
    out: set[str] = set(ENGINE_READS)
    for owner in (*CATALOG.experts, *CATALOG.prepare_finalize):
        for chk in owner.checks:
            out.update(chk.fields_read)
    for order in CATALOG.orders:
        out.update(p.field for p in order.when)
        for chk in order.excluded.values():
            out.update(chk.fields_read)
    for group in (CATALOG.adjustments, CATALOG.opt_in, CATALOG.overrides):
        for rule in group:
            out.update(p.field for p in rule.when)
    return frozenset(out)


@lru_cache(maxsize=1)
def unread_leaves() -> tuple[str, ...]:
    """MoEConfig leaves that feed no field the catalog reads (FIELDS[f].inputs)."""
    read_inputs = {i for f in read_fields() if f in FIELDS for i in FIELDS[f].inputs}

    def is_read(path: str) -> bool:
        return any(path == i or path.startswith(i + ".") or i.startswith(path + ".") for i in read_inputs)

    return tuple(p for p in LEAF_PATHS if not is_read(p))


def check_unread_change(case: Case, changed: Case) -> None:
    """Changing inputs no predicate reads leaves the decision as it was."""
    assert verdict(decide(changed)) == verdict(decide(case))


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def check_cli_agrees(case: Case, directory: Path) -> None:
    """`explain --json`, `select --json`, `select` and the Python API agree on a config file."""
    path = directory / "case.yaml"
    path.write_text(case.replay(), encoding="utf-8")
    code_e, out_e, err_e = run_cli(["explain", "--config", str(path), "--json"])
    if _unknown_device_paths(case):
        # A capability or arch the tables were not written for: bad input, as --sm / --arch.
        assert code_e == 2 and run_cli(["select", "--config", str(path)])[0] == 2, f"explain accepted an unknown device: {out_e}"
        return
    release = answer_release(CATALOG, case.env)
    if config_quant_method_issue(case.config.quant_method, release) is not None:
        # vLLM does not know the method (or moe-oracle does not model it): the file door refuses it.
        with contextlib.suppress(ConfigError):
            load_config_file(path, CATALOG)
            raise AssertionError(f"the config file door accepted quant_method {case.config.quant_method!r}")
        assert code_e == 2 and run_cli(["select", "--config", str(path)])[0] == 2, f"explain accepted quant_method {case.config.quant_method!r}: {out_e}"
        return
    loaded = load_config_file(path, CATALOG)
    if refusals(loaded.config, release=CATALOG.release(loaded.environment)) or not platform_admits(layer_gate_methods(loaded.config, release), release, loaded.config.device):
        # vLLM refuses this deployment at start (EPLB without EP, a method the platform does not
        # list, ...): bad input on every command.
        assert code_e == 2, f"explain accepted a deployment vLLM refuses: {out_e}"
        assert run_cli(["select", "--config", str(path)])[0] == 2
        return
    assert code_e in (0, 1), f"explain rejected the replay file: {err_e or out_e}"
    code_s, out_s, _ = run_cli(["select", "--config", str(path), "--json", "--full"])
    code_c, out_c, _ = run_cli(["select", "--config", str(path), "--json"])
    code_t, out_t, _ = run_cli(["select", "--config", str(path)])
    # The door derives what the model class passes as is_sequence_parallel (the API takes the config
    # as given) and notes where it stays unknown though vLLM's use_sequence_parallel_moe holds.
    config, door_note = with_sequence_parallel(loaded.config, loaded.config.architecture, release or ENGINE_VERSION)
    # The file door also notes the layer's quantization methods vLLM refuses on this platform
    # (verify_layer_quantization: awq_marlin on XPU, a deprecated method). It prints its notes with
    # what they echo escaped (core.names.escaped: an architecture name with control characters).
    door_notes = [escaped(n) for n in ([door_note] if door_note is not None else []) + verify_layer_quantization(loaded.config, release or ENGINE_VERSION, path="$.model.quant_method")]
    api = Oracle(CATALOG, loaded.environment or Environment()).explain(config)
    plain = select(config, env=loaded.environment or Environment(), strict=False)
    record = json.loads(json.dumps(api.to_dict(), default=str))

    def without_door_note(out: str) -> dict[str, Any]:
        printed = json.loads(out)
        for note in door_notes:
            assert note in printed["notes"], (note, printed["notes"])
        printed["notes"] = [n for n in printed["notes"] if n not in door_notes]
        return printed

    assert without_door_note(out_e) == record == without_door_note(out_s) == json.loads(json.dumps(plain.to_dict(), default=str))
    compact = without_door_note(out_c)
    assert {k: v for k, v in compact.items() if k not in ("blocking", "fixes")} == {k: record[k] for k in compact if k not in ("blocking", "fixes")}
    assert code_e == code_s == code_c == code_t == (0 if api.winner is not None else 1)
    if api.selected is not None:
        s = api.selected
        assert out_t.startswith(f"{s.kernel} [{s.backend}, {s.interface.value}] + {s.prepare_finalize}"), out_t
    else:
        assert out_t.startswith(("No MoE kernel is eligible", "No MoE kernel runs", "Requested backend")), out_t
    derived = replace(case.config, parallel=config.parallel) if case.config.parallel.sequence_parallel is None else case.config
    assert verdict(api) == verdict(decide(Case(derived, case.env))), "the config file door changed the selection"


@lru_cache(maxsize=1)
def decision_validator() -> Callable[[dict[str, Any]], list[str]]:
    """A validator of schemas/decision.schema.json: ``record -> error messages`` (none: valid).

    The compiled ``jsonschema_rs`` validator of the bundled schema (schemas/bundled/: the same
    schema, self-contained) when that package is installed (the test extra), else ``jsonschema``'s.
    Either way every record is validated in full.
    """
    try:
        import jsonschema_rs
    except ImportError:
        validator = SCHEMAS.for_kind("decision")
        return lambda rec: [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(rec)]
    from moe_oracle.core._resources import schema_dir

    compiled = jsonschema_rs.validator_for(json.loads((schema_dir() / "bundled" / "decision.schema.json").read_text(encoding="utf-8")))

    def errors(rec: dict[str, Any]) -> list[str]:
        if compiled.is_valid(rec):
            return []
        return [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in compiled.iter_errors(rec)]

    return errors


def _json_round_trip(rec: Any) -> Any:
    """``rec`` through JSON text and back: ``orjson`` (the test extra) when installed, else ``json``.

    Both refuse sets, non-string keys and objects they do not know; a tuple comes back a list and
    NaN (orjson writes null; json is told allow_nan=False) does not come back, so the equality
    below fails for anything that is not plain JSON.
    """
    try:
        import orjson
    except ImportError:
        return json.loads(json.dumps(rec, allow_nan=False))
    return orjson.loads(orjson.dumps(rec))


def check_decision_schema(case: Case) -> None:
    """Decision.to_dict() is plain JSON and validates against schemas/decision.schema.json."""
    rec = record(case)
    assert _json_round_trip(rec) == rec
    errors = decision_validator()(rec)
    assert not errors, errors[:5]


def check_why_not(case: Case, backend_name: str, catalog: Catalog = CATALOG) -> None:
    """Applying the why-not answer (result.config, result.environment) makes the backend eligible."""
    result = why_not(Oracle(catalog, case.env), case.config, backend_name)
    if not (result.found or result.already_eligible):
        assert result.blocking or result.explored, "no answer and no blocking reason"
        return
    d = evaluate(catalog, result.config, result.environment)
    cand = d.candidate(result.kernel)
    assert cand.backend in result.backend and not cand.failures, f"{result.kernel} still fails: {[f.rule for f in cand.failures]}"
    if result.already_eligible:
        assert not result.edits and result.config == case.config and result.environment == case.env
    else:
        assert result.edits


def _satisfying(specs: Sequence[str]) -> str | None:
    """A PEP 440 version inside every range of ``specs`` (tried from their own bounds), if one is found."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    sets = [SpecifierSet(s) for s in specs]
    candidates = ["1.0.0", "99.0.0"]
    for sset in sets:
        for spec in sset:
            try:
                v = Version(spec.version.replace(".*", ""))
            except InvalidVersion:
                continue
            candidates += [str(v), f"{v.major}.{v.minor}.{v.micro + 1}", f"{v.major}.{v.minor + 1}.0", f"{v.major + 1}.0.0"]
    return next((c for c in candidates if all(Version(c) in s for s in sets)), None)


def check_why_not_finds_package_fixes(case: Case, backend_name: str) -> None:
    """When installing packages (at most MAX_EDITS, at versions the tables accept) is all a
    candidate of the backend lacks, and the deployment then builds, why-not finds an answer."""
    from moe_oracle.explain.whynot_search import MAX_EDITS

    backends = CATALOG.backend_names[backend_name.strip().lower().replace("-", "_")]
    model = _model(case)
    values = model.values(case.config, case.env)
    for entry in CATALOG.experts:
        if entry.backend not in backends or entry.id not in model.by_id:
            continue  # another backend, or a kernel the case's release does not have
        failing = [r for r in model.rules(entry.id, values) if r.outcome(values) is Outcome.FAIL]
        packages = {r.field[9:] for r in failing}
        if not failing or not all(r.field.startswith("packages.") for r in failing) or len(packages) > MAX_EDITS:
            continue
        env = case.env
        for name in sorted(packages):
            specs = [r.spec["version"] for r in model.rules(entry.id, values) if r.field == f"packages.{name}" and "version" in (r.spec or {})]
            version = _satisfying(specs)
            if version is None:
                break
            env = env.with_package(name, version)
        else:
            after = evaluate(CATALOG, case.config, env)
            # A fix must leave a deployment vLLM builds: not one where the engine returns another
            # kernel unchecked (a shortcut) whose check then fails.
            if not after.candidate(entry.id).failures and not any(w.code == "unchecked" for w in after.warnings):
                result = why_not(Oracle(CATALOG, case.env), case.config, backend_name)
                assert result.found or result.already_eligible, f"installing {sorted(packages)} makes {entry.id} eligible, but why-not found nothing: {result.render_text()}"
                return


def _unknown_device_paths(case: Case) -> set[str]:
    """The ``device`` fields of the case's config file that the file door refuses, as ``--sm`` /
    ``--arch`` do (a capability or arch the tables were not written for; the API takes any)."""
    device = case.config.device
    paths = {"$.device.capability"} if unknown_capability(device.capability) is not None else set()
    return paths | ({"$.device.arch"} if unknown_arch(device.platform.value, device.arch) is not None else set())


def check_replay_round_trip(case: Case) -> None:
    """The printed replay file turns back into the same config and environment, or the file door
    refuses the environment values the engine refuses at start (naming each), an unknown device
    capability or arch, or else a ``quant_method`` vLLM does not know or moe-oracle does not model
    (the API takes any name)."""
    from moe_oracle.core.envvars import env_issues

    doc = yaml.safe_load(case.replay())
    unknown = _unknown_device_paths(case)
    refused = env_issues(case.env.env, CATALOG.env_vars, "$.environment.env", release=CATALOG.release(case.env).stand_in)
    method = config_quant_method_issue(case.config.quant_method, answer_release(CATALOG, case.env))
    if method is not None and not refused:  # the environment is read first
        refused = [method]
    if refused or unknown:
        try:
            config_from_document(doc, CATALOG, schemas=SCHEMAS)
        except ConfigError as exc:
            paths = {i.path for i in exc.issues}
            # The engine's refusals exactly, or (whichever the door reads first) the unknown device.
            assert paths == {i.path for i in refused} or unknown & paths, paths
            return
        raise AssertionError(f"the config file door accepted values the engine refuses: {[i.path for i in refused] + sorted(unknown)}")
    loaded = config_from_document(doc, CATALOG, schemas=SCHEMAS)
    assert replace(loaded.config, provenance=()) == replace(case.config, provenance=())
    assert not loaded.probe and loaded.environment == case.env


def check_unknown_backend_rejected(case: Case, name: str) -> None:
    """A moe_backend name the case's engine release does not accept (vLLM validates
    KernelConfig.moe_backend at start) raises ConfigError listing every name that release
    accepts, before evaluation (no engine names declared: every known name)."""
    view = release_view(case.env)
    config = replace(case.config, moe_backend=name)
    try:
        evaluate(CATALOG, config, case.env)
    except ConfigError as exc:
        (issue,) = exc.issues
        accepted = view.accepted_names if view.accepted_names is not None else {"auto", *view.backend_names}
        assert issue.path == "$.moe_backend" and set(issue.allowed) == set(accepted), (issue.path, issue.allowed)
    else:
        raise AssertionError(f"moe_backend={name!r} was accepted")


def check_refused_env_value(case: Case, name: str, raw: str) -> None:
    """An ``int`` variable whose value vLLM's ``int()`` refuses (vLLM fails at start) is bad input:
    ConfigError naming the variable and the value, from the engine and from Oracle.select alike --
    where the answer's release reads the variable. A release that does not read it (e.g.
    ``VLLM_MORI_EP_V2`` before 0.34.0) never parses it, and the value changes nothing."""
    env = case.env.with_env(name, raw)
    read = any(s.name == name and s.parse == "int" for s in CATALOG.for_release(CATALOG.release(env)).env_vars)
    for call in (lambda: evaluate(CATALOG, case.config, env), lambda: Oracle(CATALOG, env).select(case.config, strict=False)):
        try:
            call()
        except ConfigError as exc:
            assert read, f"{name}={raw!r} refused by a release that does not read it: {exc}"
            (issue,) = exc.issues
            assert name in issue.path and issue.value == raw and issue.allowed == ["0", "1"], issue
        else:
            assert not read, f"{name}={raw!r} was accepted"


# ---------------------------------------------------------------------------------- tables


_LAST_COMPILED: list[tuple[Sequence[TableFile], Catalog]] = []


def compiled(files: Sequence[TableFile]) -> Catalog:
    """``compile_tables(files)``; the same files object again (the two added-kernel invariants of
    one edit) gets the same catalog."""
    if _LAST_COMPILED and _LAST_COMPILED[0][0] is files:
        return _LAST_COMPILED[0][1]
    catalog = compile_tables(files)
    _LAST_COMPILED[:] = [(files, catalog)]
    return catalog


def eligible_under(catalog: Catalog, cases: Sequence[Case]) -> list[set[str]]:
    return [eligible(decide(c, catalog)) for c in cases]


def check_widening(cases: Sequence[Case], files: Sequence[TableFile]) -> None:
    """Widening a kernel's supported set never removes a candidate from the eligible list."""
    widened = compiled(files)
    for case, before, after in zip(cases, eligible_under(CATALOG, cases), eligible_under(widened, cases)):
        assert before <= after, f"no longer eligible after widening: {sorted(before - after)}"


def check_narrowing(cases: Sequence[Case], files: Sequence[TableFile]) -> None:
    """Narrowing a kernel's supported set never adds a candidate to the eligible list."""
    narrowed = compiled(files)
    for case, before, after in zip(cases, eligible_under(CATALOG, cases), eligible_under(narrowed, cases)):
        assert after <= before, f"eligible only after narrowing: {sorted(after - before)}"


def check_added_kernel_keeps_order(cases: Sequence[Case], files: Sequence[TableFile], new_id: str) -> None:
    """Adding a kernel never changes the relative order of the others."""
    grown = compiled(files)
    for case in cases:
        before = [c.kernel for c in decide(case).candidates]
        after = [c.kernel for c in decide(case, grown).candidates if c.kernel != new_id]
        assert after == before


def check_added_kernel_keeps_verdicts(cases: Sequence[Case], files: Sequence[TableFile], new_id: str) -> None:
    """Adding a kernel never changes another candidate's failures or assumptions."""
    grown = compiled(files)

    def per_kernel(d: Decision) -> dict[str, Any]:
        # The winner's failures the engine waives (checks vLLM makes only when it builds the kernel:
        # the prepare/finalize pairing) are reported as its ``unchecked`` warnings, not as failures;
        # they are the winner's verdict all the same. A new kernel that outranks the old winner
        # moves them back into its failures (tests/property/test_table_monotonicity.py example).
        waived = sorted(w.failure.rule for w in d.warnings if w.code == "unchecked" and w.failure is not None) if d.winner is not None else []
        return {
            c.kernel: (sorted([f.rule for f in c.failures] + (waived if i == d.winner else [])), [a.rule for a in c.assumptions])
            for i, c in enumerate(d.candidates) if c.kernel != new_id
        }

    for case in cases:
        assert per_kernel(decide(case, grown)) == per_kernel(decide(case))


ENGINE_INVARIANTS: dict[str, Callable[[Case], None]] = {
    "deterministic": check_deterministic,
    "winner_is_first_eligible": check_winner_is_first_eligible,
    "backend_blocks": check_backend_blocks,
    "non_winners_explained": check_non_winners_explained,
    "normalized_values": check_normalized_values,
    "failures_sound": check_failures_sound,
    "failures_complete": check_failures_complete,
    "assumptions_are_unknown_inputs": check_assumptions_are_unknown_inputs,
    "ranking_follows_priority": check_ranking_follows_priority,
    "requested": check_requested,
    "decision_schema": check_decision_schema,
}
"""Invariants of the selection that take one case and nothing else (the benchmark runs each over every config)."""

DOOR_INVARIANTS: dict[str, Callable[[Case], None]] = {
    "replay_round_trip": check_replay_round_trip,
}
"""One-case invariants of an input door (the printed config file: YAML and the config schema), timed apart."""

__all__ = [name for name in dir() if name.startswith("check_")] + ["DOOR_INVARIANTS", "ENGINE_INVARIANTS", "decide", "decision_validator", "record", "same_evaluation", "shipped_files", "unread_leaves", "verdict"]
