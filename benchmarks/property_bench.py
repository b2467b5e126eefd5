"""Property-test throughput: configs checked per second with every invariant, and per invariant.

    python benchmarks/property_bench.py [--configs N] [--tables T]

Generates N cases with the strategies of tests/property (derandomized hypothesis, so every run
times the same configs), then times over them:

* each one-case engine invariant (tests/property/invariants.ENGINE_INVARIANTS);
* the invariants that need a second input: unread-input perturbation, table file order,
  explain/select/API agreement through the CLI, why-not (answer and package fixes);
* all of them on every config: "configs checked per second with all invariants";
* the table invariants (widening, narrowing, adding a kernel) over T edited table sets.

Generation time is reported apart. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

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
    case = draw(cases())
    return {
        "case": case,
        "changed": draw(changed_inputs(case, inv.unread_leaves())),
        "order": draw(st.permutations(range(len(shipped_files())))),
        "backend": draw(backend_names()),
    }


@st.composite
def _table_trial(draw: st.DrawFn) -> dict[str, Any]:
    group = draw(st.lists(cases(), min_size=1, max_size=3))
    first = inv.decide(group[0])
    everyone = [e.id for e in CATALOG.experts]
    ok = sorted(inv.eligible(first)) or everyone
    rejected = sorted(c.kernel for c in first.candidates if c.failures) or everyone
    return {
        "cases": group,
        "widened": draw(widenings(draw(st.sampled_from(ok)))),
        "narrowed": draw(narrowings(draw(st.sampled_from(rejected)))),
        "added": draw(added_kernels(draw(st.sampled_from(ok)))),
    }


def _time(fn: Callable[[dict[str, Any]], None], trials: list[dict[str, Any]]) -> float:
    t0 = time.perf_counter()
    for trial in trials:
        fn(trial)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=300, help="generated cases (default 300)")
    ap.add_argument("--tables", type=int, default=40, help="edited table sets for the table invariants (default 40)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    t0 = time.perf_counter()
    trials = _collect(_trial(), args.configs)
    generation = time.perf_counter() - t0
    n = len(trials)
    print(f"catalog: {len(CATALOG.experts)} experts kernels, tables {CATALOG.tables_hash}")
    print(f"generated {n} configs (with their second inputs) in {generation:.2f} s: {n / generation:,.0f} per second")

    workdir = Path(tempfile.mkdtemp(prefix="moe-oracle-bench-"))
    per: dict[str, Callable[[dict[str, Any]], None]] = {name: (lambda t, fn=fn: fn(t["case"])) for name, fn in inv.ENGINE_INVARIANTS.items()}
    per.update({
        "unread_inputs": lambda t: inv.check_unread_change(t["case"], t["changed"]),
        "file_order": lambda t: inv.check_file_order(t["case"], t["order"]),
        "cli_agrees": lambda t: inv.check_cli_agrees(t["case"], workdir),
        "why_not": lambda t: inv.check_why_not(t["case"], t["backend"]),
        "why_not_package_fixes": lambda t: inv.check_why_not_finds_package_fixes(t["case"], t["backend"]),
    })
    print(f"\n{'invariant':<34} {'total s':>9} {'per config':>12} {'configs/s':>11}")
    totals = {}
    for name, fn in per.items():
        totals[name] = seconds = _time(fn, trials)
        print(f"{name:<34} {seconds:9.2f} {seconds / n * 1e3:9.2f} ms {n / seconds:11,.0f}")
    engine = sum(totals[name] for name in inv.ENGINE_INVARIANTS)
    everything = sum(totals.values())
    print(f"\nall one-case engine invariants ({len(inv.ENGINE_INVARIANTS)}): {n / engine:,.1f} configs checked per second")
    print(f"all {len(per)} config invariants:                {n / everything:,.1f} configs checked per second")

    t0 = time.perf_counter()
    tables = _collect(_table_trial(), args.tables)
    generation = time.perf_counter() - t0
    m = len(tables)
    print(f"\ngenerated {m} edited table sets in {generation:.2f} s")
    table_checks = {
        "widening": lambda t: inv.check_widening(t["cases"], t["widened"].files),
        "narrowing": lambda t: inv.check_narrowing(t["cases"], t["narrowed"].files),
        "added_kernel_order": lambda t: inv.check_added_kernel_keeps_order(t["cases"], t["added"].files, t["added"].new_id),
        "added_kernel_verdicts": lambda t: inv.check_added_kernel_keeps_verdicts(t["cases"], t["added"].files, t["added"].new_id),
    }
    configs = sum(len(t["cases"]) for t in tables)
    for name, fn in table_checks.items():
        seconds = _time(fn, tables)
        print(f"{name:<34} {seconds:9.2f} {seconds / m * 1e3:9.2f} ms per table set ({configs / seconds:,.0f} configs/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
