"""Exhaustive sweep of the discrete vocabulary for a handful of real shapes, through the engine invariants.

    python benchmarks/sweep.py [--shapes N] [--jobs J] [--requests all|auto] [--cells FILE]

Axes: device (every distinct platform / capability / arch / AMX of the hardware catalog, and TPU)
x quant scheme (every named scheme) x activation x routing method x parallel shape (single GPU,
TP 8, EP 8 with and without EPLB, DP 8 without EP, DP 4 x TP 2 with EP through every all2all
backend, and with DeepEP low-latency + EPLB) x LoRA x request for the first
``--shapes`` real shapes of ``verify.space.SHAPES``, with every package the tables read installed
at a version their ranges accept and the newest modelled vLLM release (with the versions it pins) (``--env all-on``: every
boolean environment variable the tables read set to 1, for kernels only an opt-in enables). Request ``auto`` over the
whole product; each backend id requested over every device, scheme, parallel shape and LoRA at
silu + renormalize (``--all-requests``: over every activation and routing class as well).

Exact, not sampled: values of an axis that every predicate of the catalog (checks, conditions,
priority orders, adjustments, opt-ins, overrides, shortcuts, known-bad rules) answers alike, on
every field the value determines, select identically; the sweep evaluates one representative per
such class and counts the combinations each stands for. The per-class representatives are
printed.

Each evaluated config goes through the engine's own invariants that read the ranking: the winner
is the first candidate without a failure, candidates come in backend blocks (monolithic first,
table order), every non-winner has a failure or is outranked by the winner, and a requested
backend wins or has a failure on each of its candidates (``--full`` adds every one-case invariant
of tests/property, far slower).

Prints configs/s, coverage (vocabulary combinations covered, per-cell), and the winner per
(platform, capability, scheme) cell under ``auto`` without LoRA on one GPU (plus how many of the
cell's other combinations select something else or nothing), then the cells where nothing is ever
selected under ``auto`` and the kernels that never win: lint's "uncovered regions", exactly, for
these shapes and this environment.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moe_oracle.config import Device, MoEConfig, ParallelConfig  # noqa: E402
from moe_oracle.engine import evaluate  # noqa: E402
from moe_oracle.environment import Environment  # noqa: E402
from moe_oracle.errors import ConfigError  # noqa: E402
from moe_oracle.hardware import GPU_CATALOG  # noqa: E402
from moe_oracle.normalize import normalize  # noqa: E402
from moe_oracle.oracle import default_catalog  # noqa: E402
from moe_oracle.quant import SCHEMES  # noqa: E402
from moe_oracle.verify.space import SHAPES  # noqa: E402
from moe_oracle.vocab import Activation, All2AllBackend, Platform, RoutingMethod  # noqa: E402

CATALOG = default_catalog()

PARALLEL: tuple[tuple[str, dict[str, Any]], ...] = (
    ("1 GPU", dict(tp_size=1, dp_size=1)),
    ("TP8", dict(tp_size=8, dp_size=1)),
    ("EP8", dict(tp_size=8, dp_size=1, use_ep=True)),
    ("EP8+EPLB", dict(tp_size=8, dp_size=1, use_ep=True, enable_eplb=True)),
    ("DP8", dict(tp_size=1, dp_size=8)),
    *((f"DP4xTP2 EP {a.value}", dict(tp_size=2, dp_size=4, use_ep=True, all2all_backend=a)) for a in All2AllBackend),
    ("DP4xTP2 EP deepep_low_latency+EPLB", dict(tp_size=2, dp_size=4, use_ep=True, all2all_backend=All2AllBackend.DEEPEP_LOW_LATENCY, enable_eplb=True)),
)
"""Parallel shapes: (label, ParallelConfig keywords)."""


def _devices() -> list[Device]:
    seen: dict[tuple[Any, ...], Device] = {}
    for hw in GPU_CATALOG.values():
        d = hw.device
        seen.setdefault((d.platform, d.capability, d.arch, d.cpu_amx), Device(d.platform, d.capability, d.arch, d.cpu_amx))
    out = sorted(seen.values(), key=lambda d: (d.platform.value, d.capability or 0, d.arch or "", bool(d.cpu_amx)))
    if not any(d.platform is Platform.TPU for d in out):
        out.append(Device(Platform.TPU))
    return out


def _environment(env_on: bool = False) -> Environment:
    """Every package the tables read installed at a version every range of it accepts (the newest vLLM modelled);
    with ``env_on``, every boolean environment variable the tables read set to 1 (opt-in kernels such as AITER's)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    specs: dict[str, list[SpecifierSet]] = defaultdict(list)
    for owner in (*CATALOG.experts, *CATALOG.prepare_finalize):
        for chk in owner.checks:
            for pred in (chk.predicate, *chk.condition):
                if pred is not None and pred.field.startswith("packages."):
                    for key, arg in pred.spec:
                        if key == "version":
                            specs[pred.field[9:]].append(SpecifierSet(arg))
    packages = []
    for name in CATALOG.package_names:
        if name == CATALOG.engine.name or name in CATALOG.engine.pinned_names:
            continue  # the engine release (newest modelled, assumed) and the versions it pins
        bounds = [s.version.replace(".*", "") for ss in specs[name] for s in ss]
        candidates = [*bounds, "1.0.0", "2.9.0", "99.0.0"]
        version = next((v for v in candidates if _parses(v) and all(Version(v) in ss for ss in specs[name])), "99.0.0")
        packages.append((name, version))
    variables = tuple((v.name, "1") for v in CATALOG.env_vars if v.type == "bool") if env_on else ()
    return Environment(tuple(packages), frozenset(), False, variables)


def _parses(v: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        Version(v)
    except InvalidVersion:
        return False
    return True


def _predicates() -> list[Any]:
    out = []
    for view_owner in (*CATALOG.experts, *CATALOG.prepare_finalize):
        for chk in view_owner.checks:
            out += [p for p in (chk.predicate, *chk.condition) if p is not None]
    for group in (CATALOG.orders, CATALOG.adjustments, CATALOG.opt_in, CATALOG.overrides, CATALOG.shortcuts):
        for rule in group:
            out += list(rule.when)
    for kb in CATALOG.known_bad:
        out += [p for p in (kb.check.predicate, *kb.check.condition) if p is not None]
    return out


def _classes(values: Sequence[Any], fields_of: Any, base: MoEConfig, env: Environment) -> list[tuple[Any, list[Any]]]:
    """Group ``values`` of one axis by the answers of every catalog predicate on the fields they set.

    ``fields_of(value) -> MoEConfig`` applies a value to ``base``; two values are one class when their
    normalized fields differ only where no predicate can tell them apart.
    """
    preds = _predicates()
    groups: dict[tuple[Any, ...], list[Any]] = {}
    reference = normalize(base, env, CATALOG.package_names, CATALOG.env_vars).values
    for value in values:
        got = normalize(fields_of(value), env, CATALOG.package_names, CATALOG.env_vars).values
        changed = sorted(k for k in got if got[k] != reference[k] or k in _AXIS_FIELDS)
        signature = tuple((k, tuple(p.test(got[k]) if got[k] is not None else None for p in preds if p.field == k)) for k in changed)
        groups.setdefault(signature, []).append(value)
    return [(members[0], members) for members in groups.values()]


# Fields an axis value may set; compared by predicate answers only.
_AXIS_FIELDS = frozenset({"activation", "is_gated", "routing_method", "quant_scheme", "weight_quant", "activation_quant", "quant_family", "moe_backend"})


def _config(shape: tuple[int, int, int, int], device: Device, scheme: Any, activation: Activation, routing: RoutingMethod, parallel: dict[str, Any], lora: bool, request: str) -> MoEConfig:
    e, k, h, i = shape
    limit = 7.0 if activation in (Activation.SWIGLUOAI, Activation.SWIGLUOAI_UNINTERLEAVE) else None
    return MoEConfig(num_experts=e, top_k=k, hidden_size=h, intermediate_size=i, device=device, activation=activation, routing_method=routing, quant=scheme,
                     swiglu_limit=limit, parallel=ParallelConfig(**parallel), lora=lora, moe_backend=request)


def _check(d: Any) -> None:
    """The engine invariants that read the ranking (see the module docstring); raises AssertionError.

    Rows are materialized from the failure bits (``Ranking.row``) only where needed: every candidate
    ranked above the winner, the winner, and the requested backend's candidates when none wins.
    """
    r = d.ranking
    view = r.view
    n = len(r.fixed) if r.fixed is not None else len(r.order)
    if d.shortcut is None:
        stop = d.winner if d.winner is not None else n
        for pos in range(stop):
            assert r.row(pos).failures, f"{r.entry(pos).id} ranked {pos + 1} has no failure but {d.kernel} won"
        backends = [r.entry(pos).backend for pos in range(n)]
        blocks = [b for k, b in enumerate(backends) if k == 0 or backends[k - 1] != b]
        assert len(blocks) == len(set(blocks)) and blocks == [b for b in d.backend_order if b in set(blocks)], blocks
        keys = [view.rank_key[r.index(pos)] for pos in range(n)]
        for b in blocks:
            mine = [k for k, bb in zip(keys, backends) if bb == b]
            assert mine == sorted(mine), f"{b}: not monolithic-first in table order"
    if d.winner is not None:
        assert not r.row(d.winner).failures, f"winner {d.kernel} has failures"
    if d.requested and d.shortcut is None:
        if d.winner is not None:
            assert r.entry(d.winner).backend in d.requested, f"{d.kernel} won, {d.requested} requested"
        else:
            assert all(r.row(pos).failures for pos in range(n) if r.entry(pos).backend in d.requested)


def _build(key: tuple[Any, ...]) -> MoEConfig:
    shape, dev, scheme, act, routing, plabel, lora, request = key
    return _config(shape, Device(*dev), SCHEMES[scheme], Activation(act), RoutingMethod(routing), _PARALLEL_BY_LABEL[plabel], lora, request)


_PARALLEL_BY_LABEL = dict(PARALLEL)


def _work(chunk: list[tuple[Any, ...]]) -> tuple[float, list[tuple[Any, ...]], list[str]]:
    """Evaluate and check the configs of ``chunk`` (keys: built here, in the worker); returns the CPU seconds it took."""
    cpu = time.process_time()
    full = os.environ.get("MOE_ORACLE_SWEEP_FULL") == "1"
    if full:
        from tests.property import invariants as inv
        from tests.property.strategies import Case
    env = _ENV
    out = []
    broken = []
    for key in chunk:
        config = _build(key)
        try:
            d = evaluate(CATALOG, config, env)
        except ConfigError as exc:
            out.append((key, "refused", None))
            continue
        try:
            _check(d)
            if full:
                for check in inv.ENGINE_INVARIANTS.values():
                    check(Case(config, env))
        except AssertionError as exc:
            broken.append(f"{key}: {exc}")
        out.append((key, d.kernel, d.prepare_finalize))
    return time.process_time() - cpu, out, broken


_ENV = _environment(os.environ.get("MOE_ORACLE_SWEEP_ENV") == "all-on")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", type=int, default=3, help="how many of verify.space.SHAPES (default 3: DeepSeek-V3, Qwen3-30B-A3B, Qwen3-235B-A22B)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    ap.add_argument("--requests", choices=("all", "auto"), default="all", help="request axis: auto and every backend id (default), or auto only")
    ap.add_argument("--all-requests", action="store_true", help="requests over every activation and routing class too (16x the configs)")
    ap.add_argument("--env", choices=("default", "all-on"), default="default", help="environment variables at their defaults, or every boolean one the tables read set to 1 (opt-in kernels)")
    ap.add_argument("--full", action="store_true", help="also run every one-case invariant of tests/property on each config (slow)")
    ap.add_argument("--cells", type=Path, help="also write the per-cell winners as JSON lines")
    args = ap.parse_args(argv)
    if args.env == "all-on" and os.environ.get("MOE_ORACLE_SWEEP_ENV") != "all-on":
        os.environ["MOE_ORACLE_SWEEP_ENV"] = "all-on"  # the workers read it at import
        os.execv(sys.executable, [sys.executable, *sys.argv])
    print(f"environment: {'every boolean variable the tables read set to 1' if args.env == 'all-on' else 'variables at their defaults'}; packages: {', '.join(f'{n} {v}' for n, v in _ENV.packages)}")
    if args.full:
        os.environ["MOE_ORACLE_SWEEP_FULL"] = "1"
    t0 = time.perf_counter()
    env = _ENV
    shapes = SHAPES[: args.shapes]
    devices = _devices()
    base = _config(shapes[0], devices[0], SCHEMES["unquantized"], Activation.SILU, RoutingMethod.RENORMALIZE, {}, False, "auto")
    from dataclasses import replace

    acts = _classes(list(Activation), lambda a: replace(base, activation=a, swiglu_limit=7.0 if a in (Activation.SWIGLUOAI, Activation.SWIGLUOAI_UNINTERLEAVE) else None), base, env)
    routings = _classes(list(RoutingMethod), lambda r: replace(base, routing_method=r), base, env)
    schemes = list(SCHEMES.values())
    assert all(SCHEMES[s.name] is s for s in schemes)  # keys carry the scheme by name
    requests = ["auto"] + (sorted(CATALOG.backends) if args.requests == "all" else [])
    print(f"vocabulary: {len(devices)} devices x {len(schemes)} quant schemes x {len(Activation)} activations ({len(acts)} classes) x {len(RoutingMethod)} routing methods ({len(routings)} classes)"
          f" x {len(PARALLEL)} parallel shapes x 2 LoRA x {len(requests)} requests x {len(shapes)} shapes")
    print("activation classes:", "; ".join("=".join(m.value for m in members) for _, members in acts))
    print("routing classes:   ", "; ".join("=".join(m.value for m in members) for _, members in routings))
    weight = {a: len(m) for a, m in acts} | {r: len(m) for r, m in routings}
    jobs = []
    silu = next(a for a, members in acts if Activation.SILU in members)
    renorm = next(r for r, members in routings if RoutingMethod.RENORMALIZE in members)
    for shape, device, scheme, (act, _), (routing, _), (plabel, par), lora, request in itertools.product(
        shapes, devices, schemes, acts, routings, PARALLEL, (False, True), requests
    ):
        if request != "auto" and not args.all_requests and (act is not silu or routing is not renorm):
            continue  # requests: every device, scheme, parallel shape and LoRA, at silu + renormalize
        jobs.append((shape, (device.platform.value, device.capability, device.arch, device.cpu_amx), scheme.name, act.value, routing.value, plabel, lora, request))
    covered = sum(weight[Activation(k[3])] * weight[RoutingMethod(k[4])] for k in jobs)
    print(f"evaluating {len(jobs):,} configs standing for {covered:,} vocabulary combinations, {args.jobs} processes, set up in {time.perf_counter() - t0:.1f} s; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    t1 = time.perf_counter()
    chunks = [jobs[i : i + 5000] for i in range(0, len(jobs), 5000)]
    results: list[tuple[Any, ...]] = []
    broken: list[str] = []
    cpu = 0.0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for done, (seconds, out, bad) in enumerate(pool.map(_work, chunks), start=1):
            results += out
            broken += bad
            cpu += seconds
            if done % 40 == 0:
                print(f"  {len(results):,} configs, {time.perf_counter() - t1:.0f} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - t1
    print(f"swept {len(results):,} configs in {elapsed:.1f} s: {len(results) / elapsed:,.0f} configs/s wall ({covered / elapsed:,.0f} vocabulary combinations/s); "
          f"{len(results) / cpu:,.0f} configs/s per worker CPU second ({cpu:.0f} CPU s in all); invariant failures: {len(broken)}")
    for line in broken[:20]:
        print("  BROKEN", line)

    # Per (platform, capability/arch, scheme) cell.
    cells: dict[tuple[Any, ...], Counter[str]] = defaultdict(Counter)
    default: dict[tuple[Any, ...], str] = {}
    winners: Counter[str] = Counter()
    refused = 0
    for key, kernel, pf in results:
        shape, dev, scheme, act, routing, plabel, lora, request = key
        if kernel == "refused":
            refused += 1
            continue
        cell = (dev, scheme)
        w = weight[Activation(act)] * weight[RoutingMethod(routing)]
        if request == "auto":
            cells[cell][kernel or "-"] += w
            if kernel:
                winners[kernel] += w
            if shape == shapes[0] and act == "silu" and routing == RoutingMethod.RENORMALIZE.value and plabel == "1 GPU" and not lora:
                default[cell] = f"{kernel} + {pf}" if kernel else "none"
    print(f"refused as input (ConfigError): {refused}")
    print(f"\nwinner per (device, scheme) cell: {shapes[0]} shape, silu, renormalize, 1 GPU, no LoRA, auto; then the share of the cell's auto combinations (all shapes, activations, routings, parallel shapes, LoRA) won by each kernel ('-': nothing eligible)")
    by_device: dict[Any, list[Any]] = defaultdict(list)
    for cell in sorted(cells, key=lambda c: (str(c[0]), c[1])):
        by_device[cell[0]].append(cell)
    uncovered = []
    for dev, cell_list in by_device.items():
        plat, cap, arch, amx = dev
        print(f"\n{plat} {cap if cap is not None else (arch or '')}{' amx' if amx else ''}")
        for cell in cell_list:
            counts = cells[cell]
            total = sum(counts.values())
            shares = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in counts.most_common(4))
            more = f", +{len(counts) - 4} more" if len(counts) > 4 else ""
            print(f"  {cell[1]:<22} {default.get(cell, '?'):<48} [{shares}{more}]")
            if set(counts) == {"-"}:
                uncovered.append(cell)
    print(f"\ncells where nothing is ever selected under auto ({len(uncovered)} of {len(cells)}):")
    for dev, scheme in uncovered:
        print(f"  {dev[0]} {dev[1] if dev[1] is not None else (dev[2] or '')}{' amx' if dev[3] else ''}: {scheme}")
    never = sorted({e.id for e in CATALOG.experts} - set(winners))
    print(f"\nkernels that win somewhere under auto: {len(winners)} of {len(CATALOG.experts)}; never under auto here: {', '.join(never) or 'none'}")
    requested_wins = {kernel for key, kernel, _ in results if key[7] != "auto" and kernel not in (None, "refused")}
    print(f"kernels that never win even when their backend is requested: {', '.join(sorted({e.id for e in CATALOG.experts} - requested_wins - set(winners))) or 'none'}")
    print(f"total {time.perf_counter() - t0:.1f} s; load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.cells:
        import json

        with args.cells.open("w") as f:
            for cell, counts in sorted(cells.items(), key=str):
                f.write(json.dumps({"device": cell[0], "scheme": cell[1], "default": default.get(cell), "auto_wins": dict(counts)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
