"""Property-test throughput: configs checked per second through the invariants, and edited table sets per second.

    python benchmarks/property_bench.py [--configs N] [--tables T]

Generates N cases with the strategies of tests/property (derandomized hypothesis, so every run
times the same configs; generation is timed apart), with the test suite's collector settings
(tests/gcsettings.py), then prints:

* **one-case engine invariants** (tests/property/invariants.ENGINE_INVARIANTS: determinism, winner,
  backend blocks, non-winners, normalized values, failures sound and complete, assumptions,
  ranking, requested backend, the record's schema through the compiled validator) run together on
  each config, as ``test_every_engine_invariant_holds`` runs them: one Decision and one
  re-derivation per config shared by the invariants that only read them; determinism evaluates
  afresh (and builds a second full record). Every schema check validates the full record.
* the shared work they rest on, each part over every config (one evaluate, the record, its JSON
  round trip and schema validation, the reference model's judgement): the floor under the
  together figure;
* each of them alone over every config (each paying for its own Decision and re-derivation);
* the door invariant (printed replay file: YAML + config schema) and the invariants that need a
  second input (unread inputs, table file order, CLI/API agreement, why-not);
* the table invariants (widening, narrowing, adding a kernel) over T edited table sets: each set
  is compiled (``compile_tables``) and its 1-3 configs decided under both catalogs.

Figures are wall-clock and, because this machine is shared, also CPU time of this process (the
two agree on an idle machine). Prints figures, asserts nothing. Issue 11 targets: >= 1,000
configs/s through the one-case engine invariants, >= 100 edited table sets/s.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests import gcsettings  # noqa: E402
from tests.property import invariants as inv  # noqa: E402
from tests.property.strategies import CATALOG, backend_names, cases, changed_inputs  # noqa: E402
from tests.property.table_mutations import added_kernels, narrowings, shipped_files, widenings  # noqa: E402


def _collect(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    out: list[Any] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(value: Any) -> None:
        if len(out) < n:
            out.append(value)

    draw()
    return out


@st.composite
def _trial(draw: st.DrawFn) -> dict[str, Any]:
    case = draw(st.one_of(cases(backend=backend_names()), cases()))
    return {
        "case": case,
        "changed": draw(changed_inputs(case, inv.unread_leaves())),
        "order": draw(st.permutations(range(len(shipped_files())))),
        "backend": draw(backend_names()),
    }


@st.composite
def _table_trial(draw: st.DrawFn) -> dict[str, Any]:
    group = draw(st.lists(cases(), min_size=1, max_size=3))
    first = inv.evaluate(CATALOG, group[0].config, group[0].env)
    everyone = [e.id for e in CATALOG.experts]
    ok = sorted(inv.eligible(first)) or everyone
    rejected = sorted(c.kernel for c in first.candidates if c.failures) or everyone
    return {
        "cases": group,
        "widened": draw(widenings(draw(st.sampled_from(ok)))),
        "narrowed": draw(narrowings(draw(st.sampled_from(rejected)))),
        "added": draw(added_kernels(draw(st.sampled_from(ok)))),
    }


def _clear_shared() -> None:
    for memo in (inv._decided, inv.record, inv._values, inv._judged):
        memo.cache_clear()
    inv._LAST_COMPILED.clear()


class _Clock:
    """Wall and process CPU time of a block."""

    def __enter__(self) -> "_Clock":
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def _rate(n: int, clock: _Clock) -> str:
    return f"{n / clock.wall:9,.1f}/s wall {n / clock.cpu:9,.1f}/s CPU"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=1000, help="generated cases (default 1000)")
    ap.add_argument("--tables", type=int, default=100, help="edited table sets for the table invariants (default 100)")
    ap.add_argument("--second-input", type=int, default=60, help="cases for the slow second-input invariants (default 60)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"catalog: {len(CATALOG.experts)} experts kernels, tables {CATALOG.tables_hash}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    try:
        importlib.import_module("jsonschema_rs")  # the name is not used: whether it imports is the answer

        validator = "jsonschema_rs (compiled, bundled schema)"
    except ImportError:
        validator = "jsonschema (jsonschema_rs not installed)"
    try:
        importlib.import_module("orjson")

        validator += "; JSON round trip through orjson"
    except ImportError:
        validator += "; JSON round trip through json"
    print(f"decision-schema validator: {validator}")

    with _Clock() as gen:
        trials = _collect(_trial(), args.configs)
    n = len(trials)
    print(f"generated {n} configs (with their second inputs) in {gen.wall:.2f} s")
    for t in trials:  # once per process, outside the timing: the release views the cases name, per-check caches
        inv.evaluate(CATALOG, t["case"].config, t["case"].env).to_dict()
    gcsettings.tune()

    _clear_shared()
    names = list(inv.ENGINE_INVARIANTS)
    with _Clock() as together:
        for t in trials:
            for check in inv.ENGINE_INVARIANTS.values():
                check(t["case"])
    _clear_shared()
    print(f"\none-case engine invariants ({len(names)}) together per config: {_rate(n, together)}  ({together.cpu / n * 1e3:.2f} ms CPU per config)")

    print(f"\n{'shared work, each over every config':<34} {'ms/config (CPU)':>16}")
    def fresh() -> list[Any]:
        return [inv.evaluate(CATALOG, t["case"].config, t["case"].env) for t in trials]

    records = [d.to_dict() for d in fresh()]
    validate = inv.decision_validator()
    models = [inv._model(t["case"]) for t in trials]
    values = [m.values(t["case"].config, t["case"].env) for m, t in zip(models, trials)]
    kernels = [[c["kernel"] for c in r["candidates"]] for r in records]

    def judged(i: int) -> None:  # every kernel's failing and abstaining rules, as the invariants read them
        judgement = models[i].judge(values[i])
        for k in kernels[i]:
            judgement.failing(k), judgement.abstaining(k)

    floor: dict[str, tuple[Callable[[], Any], Callable[[int, Any], Any]]] = {
        "evaluate (one Decision)": (lambda: None, lambda i, _: inv.evaluate(CATALOG, trials[i]["case"].config, trials[i]["case"].env)),
        "Decision.candidates (the objects)": (fresh, lambda i, ds: ds[i].candidates),
        "Decision.to_dict (the record)": (fresh, lambda i, ds: ds[i].to_dict()),
        "JSON round trip of the record": (lambda: None, lambda i, _: inv._json_round_trip(records[i])),
        "schema validation of the record": (lambda: None, lambda i, _: validate(records[i])),
        "reference model (judge every kernel)": (lambda: None, lambda i, _: judged(i)),
    }
    total = 0.0
    for name, (prepare, fn) in floor.items():
        ready = prepare()  # untimed: fresh Decisions for the parts that read one
        with _Clock() as c:
            for i in range(n):
                fn(i, ready)
        total += c.cpu
        print(f"{name:<34} {c.cpu / n * 1e3:16.3f}")
    print(f"{'sum (determinism needs a second evaluate and to_dict)':<34} {total / n * 1e3:.3f} ms: at most {n / total:,.0f} configs/s before any invariant logic")
    records = values = kernels = None  # freed (not del: the timed closures name them)
    _clear_shared()

    print(f"\n{'each alone over every config':<34} {'ms/config (CPU)':>16} {'configs/s (CPU)':>16}")
    for name, check in inv.ENGINE_INVARIANTS.items():
        _clear_shared()
        with _Clock() as c:
            for t in trials:
                check(t["case"])
        print(f"{name:<34} {c.cpu / n * 1e3:16.3f} {n / c.cpu:16,.0f}")
    _clear_shared()

    workdir = Path(tempfile.mkdtemp(prefix="moe-oracle-bench-"))
    few = trials[: args.second_input]
    slow: dict[str, tuple[list[dict[str, Any]], Callable[[dict[str, Any]], None]]] = {
        "replay_round_trip (door)": (trials, lambda t: inv.check_replay_round_trip(t["case"])),
        "unread_inputs": (trials, lambda t: inv.check_unread_change(t["case"], t["changed"])),
        "file_order": (few, lambda t: inv.check_file_order(t["case"], t["order"])),
        "cli_agrees": (few, lambda t: inv.check_cli_agrees(t["case"], workdir)),
        "why_not": (few, lambda t: inv.check_why_not(t["case"], t["backend"])),
        "why_not_package_fixes": (trials, lambda t: inv.check_why_not_finds_package_fixes(t["case"], t["backend"])),
    }
    print(f"\n{'door and second-input invariants':<34} {'configs':>8} {'ms/config (CPU)':>16} {'configs/s (CPU)':>16}")
    for name, (sample, fn) in slow.items():
        _clear_shared()
        with _Clock() as c:
            for t in sample:
                fn(t)
        print(f"{name:<34} {len(sample):>8} {c.cpu / len(sample) * 1e3:16.3f} {len(sample) / c.cpu:16,.0f}")
    _clear_shared()

    with _Clock() as gen:
        tables = _collect(_table_trial(), args.tables)
    m = len(tables)
    configs = sum(len(t["cases"]) for t in tables)
    print(f"\ngenerated {m} edited table sets ({configs} configs) in {gen.wall:.2f} s")
    table_checks = {
        "widening": lambda t: inv.check_widening(t["cases"], t["widened"].files),
        "narrowing": lambda t: inv.check_narrowing(t["cases"], t["narrowed"].files),
        "added_kernel_order": lambda t: inv.check_added_kernel_keeps_order(t["cases"], t["added"].files, t["added"].new_id),
        "added_kernel_verdicts": lambda t: inv.check_added_kernel_keeps_verdicts(t["cases"], t["added"].files, t["added"].new_id),
    }
    with _Clock() as c:
        for t in tables:
            inv.compiled(t["widened"].files)
    print(f"compile_tables alone (one edited set):     {c.cpu / m * 1e3:7.2f} ms CPU per set")
    _clear_shared()
    for name, fn in table_checks.items():
        with _Clock() as c:
            for t in tables:
                fn(t)
        print(f"{name:<34} {c.cpu / m * 1e3:7.2f} ms CPU per set: {_rate(m, c)} edited table sets")
        _clear_shared()
    with _Clock() as c:
        for t in tables:
            for fn in table_checks.values():
                fn(t)
    print(f"all four per edit (3 compiled sets per edit): {m / c.cpu:,.1f} edits/s CPU = {3 * m / c.cpu:,.1f} edited table sets/s CPU ({3 * m / c.wall:,.1f}/s wall)")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
