"""Exhaustive sweep of the discrete vocabulary for a handful of real shapes, through the engine invariants.

    python benchmarks/sweep.py [--shapes N] [--jobs J] [--requests all|auto] [--all-requests] [--env default|all-on] [--no-reduce] [--cells FILE]

Axes: device (every distinct platform / capability / arch / AMX of the hardware catalog, and TPU)
x quant scheme (every named scheme) x activation (every one) x routing method (every one) x
layout: the first ``--shapes`` real shapes of ``verify.space.SHAPES`` x parallel shape (single
GPU, TP 8, EP 8 with and without EPLB, DP 8 without EP, DP 4 x TP 2 with EP through every all2all
backend, and with DeepEP low-latency + EPLB) x LoRA x request, with every package the tables read
installed at a version their ranges accept and the newest modelled vLLM release (with the versions
it pins) (``--env all-on``: every boolean environment variable the tables read set to 1, for
kernels only an opt-in enables). Request ``auto`` over the whole product; each backend id
requested over every device, scheme, layout and LoRA at silu + renormalize (``--all-requests``:
over every activation and routing method as well).

Exact, not sampled: :mod:`moe_oracle.verify.sweep` evaluates one representative per class of
combinations that provably select alike and pass or fail the invariants alike (the argument is
its module docstring; ``--no-reduce`` evaluates every combination, and
``tests/unit/test_sweep_reduction.py`` holds the two to the same answer on a slice), and counts
the combinations each class stands for.

Each evaluated config goes through the engine's own invariants that read the ranking
(``verify.sweep.check_ranking``): the winner is the first candidate without a failure,
candidates come in backend blocks (monolithic first, table order), every non-winner has a failure
or is outranked by the winner, and a requested backend wins or has a failure on each of its
candidates (``--full`` adds every one-case invariant of tests/property on every combination,
unreduced, far slower).

Prints configs/s, coverage (vocabulary combinations covered, per-cell), and the winner per
(platform, capability, scheme) cell under ``auto`` without LoRA on one GPU (plus the share of the
cell's other combinations each kernel wins, '-' for nothing), then the cells where nothing is
ever selected under ``auto`` and the kernels that never win: lint's "uncovered regions", exactly,
for these shapes and this environment.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moe_oracle.core.config import Device  # noqa: E402
from moe_oracle.core.environment import Environment  # noqa: E402
from moe_oracle.inputs.hardware import GPU_CATALOG  # noqa: E402
from moe_oracle.core.oracle import default_catalog  # noqa: E402
from moe_oracle.core.quant import SCHEMES  # noqa: E402
from moe_oracle.verify.space import SHAPES  # noqa: E402
from moe_oracle.verify.sweep import Axes, Sweep, make_config  # noqa: E402
from moe_oracle.core.vocab import Activation, All2AllBackend, Platform, RoutingMethod  # noqa: E402

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


def _axes(shapes: int, requests: str, all_requests: bool) -> Axes:
    return Axes(
        shapes=tuple(SHAPES[:shapes]), devices=tuple(_devices()), schemes=tuple(SCHEMES.values()), parallels=PARALLEL,
        requests=("auto", *(sorted(CATALOG.backends) if requests == "all" else ())),
        request_activations=tuple(Activation) if all_requests else (Activation.SILU,),
        request_routings=tuple(RoutingMethod) if all_requests else (RoutingMethod.RENORMALIZE,),
    )


_WORKER: dict[str, Any] = {}


def _work(task: tuple[dict[str, Any], list[tuple[int, int, int]]]) -> tuple[float, int, list[tuple[Any, ...]]]:
    """Run the prefixes (device, scheme, request indices) of one chunk in a worker; returns its CPU
    seconds, the configs it evaluated and one compact row per class:
    (device key, scheme, request, weight, kernel, pf, refused, broken, holds the default combination)."""
    cpu = time.process_time()
    opts, prefixes = task
    sw = _WORKER.get("sweep")
    if sw is None or _WORKER.get("opts") != opts:
        sw = _WORKER["sweep"] = Sweep(CATALOG, _ENV, _axes(opts["shapes"], opts["requests"], opts["all_requests"]), reduce=opts["reduce"], guard=False)
        _WORKER["opts"] = opts
    a = sw.axes
    before = sw.evaluated
    rows = []
    default = (a.layouts[0], False, Activation.SILU, RoutingMethod.RENORMALIZE)
    for di, si, ri in prefixes:
        dev = a.devices[di]
        for r in sw.run(dev, a.schemes[si], a.requests[ri]):
            holds = r.request == "auto" and default[0] in r.layouts and default[1] in r.loras and default[2] in r.acts and default[3] in r.routings
            rows.append(((dev.platform.value, dev.capability, dev.arch, dev.cpu_amx), r.scheme, r.request, r.weight, r.kernel, r.pf, r.refused, r.broken, holds))
            if opts["full"] and not r.refused:
                try:
                    _full_check(sw, r)
                except AssertionError as exc:
                    rows.append(((dev.platform.value, dev.capability, dev.arch, dev.cpu_amx), r.scheme, r.request, 0, None, None, False, f"--full: {exc}", False))
    return time.process_time() - cpu, sw.evaluated - before, rows


def _full_check(sw: Sweep, r: Any) -> None:
    from tests.property import invariants as inv
    from tests.property.strategies import Case

    for layout, lora, act, routing in r.members():
        config = make_config(r.device, SCHEMES[r.scheme], r.request, layout, dict(PARALLEL)[layout[1]], lora, act, routing)
        for check in inv.ENGINE_INVARIANTS.values():
            check(Case(config, _ENV))


_ENV = _environment(os.environ.get("MOE_ORACLE_SWEEP_ENV") == "all-on")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", type=int, default=5, help="how many of verify.space.SHAPES (default 5: DeepSeek-V3, Qwen3-30B-A3B, Qwen3-235B-A22B, Mixtral-8x7B, gpt-oss-120b)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    ap.add_argument("--requests", choices=("all", "auto"), default="all", help="request axis: auto and every backend id (default), or auto only")
    ap.add_argument("--all-requests", action="store_true", help="requests over every activation and routing method too")
    ap.add_argument("--env", choices=("default", "all-on"), default="default", help="environment variables at their defaults, or every boolean one the tables read set to 1 (opt-in kernels)")
    ap.add_argument("--no-reduce", action="store_true", help="evaluate every combination (no equivalence classes)")
    ap.add_argument("--full", action="store_true", help="also run every one-case invariant of tests/property on every combination (slow)")
    ap.add_argument("--cells", type=Path, help="also write the per-cell winners as JSON lines")
    args = ap.parse_args(argv)
    if args.env == "all-on" and os.environ.get("MOE_ORACLE_SWEEP_ENV") != "all-on":
        os.environ["MOE_ORACLE_SWEEP_ENV"] = "all-on"  # the workers read it at import
        os.execv(sys.executable, [sys.executable, *sys.argv])
    print(f"environment: {'every boolean variable the tables read set to 1' if args.env == 'all-on' else 'variables at their defaults'}; packages: {', '.join(f'{n} {v}' for n, v in _ENV.packages)}")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    axes = _axes(args.shapes, args.requests, args.all_requests)
    # The main process checks the part structure the classes rely on (Sweep._guard); workers skip it.
    # Only that check is wanted here: the workers build their own Sweep.
    Sweep(CATALOG, _ENV, axes, reduce=not args.no_reduce)
    n_req = len(axes.requests) - 1
    print(f"vocabulary: {len(axes.devices)} devices x {len(axes.schemes)} quant schemes x {len(axes.shapes)} shapes x {len(PARALLEL)} parallel shapes x {len(axes.loras)} LoRA"
          f" x (auto x {len(axes.activations)} activations x {len(axes.routings)} routing methods + {n_req} requests x {len(axes.request_activations)} x {len(axes.request_routings)})"
          f" = {axes.size():,} combinations; shapes {', '.join(map(str, axes.shapes))}")
    opts = dict(shapes=args.shapes, requests=args.requests, all_requests=args.all_requests, reduce=not args.no_reduce, full=args.full)
    # Interleave devices, schemes and requests so both workers get a mix of heavy (auto) and light prefixes.
    prefixes = [(di, si, ri) for ri in range(len(axes.requests)) for si in range(len(axes.schemes)) for di in range(len(axes.devices))]
    prefixes.sort(key=lambda p: (p[2] != 0, p[0], p[1]))
    chunks = [prefixes[i :: max(1, 8 * args.jobs)] for i in range(max(1, 8 * args.jobs))]
    print(f"{len(prefixes):,} prefixes (device x scheme x request) in {len(chunks)} chunks, {args.jobs} processes; set up (with the structure guard) in {time.perf_counter() - t0:.1f} s; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    t1 = time.perf_counter()
    rows: list[tuple[Any, ...]] = []
    cpu = 0.0
    evaluated = 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for done, (seconds, n, out) in enumerate(pool.map(_work, [(opts, c) for c in chunks]), start=1):
            rows += out
            cpu += seconds
            evaluated += n
            print(f"  chunk {done}/{len(chunks)}: {evaluated:,} configs evaluated, {time.perf_counter() - t1:.0f} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - t1
    covered = sum(r[3] for r in rows)
    assert covered == axes.size(), (covered, axes.size())
    broken = [r for r in rows if r[7] is not None]
    print(f"swept {covered:,} combinations ({len(rows):,} classes, {evaluated:,} configs evaluated) in {elapsed:.1f} s wall: {evaluated / elapsed:,.0f} configs/s evaluated, "
          f"{covered / elapsed:,.0f} combinations/s covered; {cpu:.0f} worker CPU s ({evaluated / cpu:,.0f} configs/s and {covered / cpu:,.0f} combinations/s per CPU second); "
          f"coverage {covered:,} / {axes.size():,} combinations (100%); invariant failures: {len(broken)} classes, {sum(r[3] for r in broken):,} combinations")
    for r in broken[:20]:
        print("  BROKEN", r[:3], r[7])

    # Per (platform, capability/arch, scheme) cell.
    cells: dict[tuple[Any, ...], Counter[str]] = defaultdict(Counter)
    default: dict[tuple[Any, ...], str] = {}
    winners: Counter[str] = Counter()
    refused = 0
    requested_wins = set()
    for dev, scheme, request, weight, kernel, pf, is_refused, _, holds in rows:
        if is_refused:
            refused += weight
            continue
        if request != "auto":
            if kernel:
                requested_wins.add(kernel)
            continue
        cell = (dev, scheme)
        cells[cell][kernel or "-"] += weight
        if kernel:
            winners[kernel] += weight
        if holds:
            default[cell] = f"{kernel} + {pf}" if kernel else "none"
    print(f"refused as input (ConfigError): {refused:,} combinations")
    print(f"\nwinner per (device, scheme) cell: {axes.shapes[0]} shape, silu, renormalize, 1 GPU, no LoRA, auto; then the share of the cell's auto combinations (all shapes, activations, routings, parallel shapes, LoRA) won by each kernel ('-': nothing eligible)")
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
    print(f"kernels that never win even when their backend is requested: {', '.join(sorted({e.id for e in CATALOG.experts} - requested_wins - set(winners))) or 'none'}")
    print(f"total {time.perf_counter() - t0:.1f} s wall, {time.process_time() - cpu0 + cpu:.0f} CPU s (main + workers); load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.cells:
        import json

        with args.cells.open("w") as f:
            for cell, counts in sorted(cells.items(), key=str):
                f.write(json.dumps({"device": cell[0], "scheme": cell[1], "default": default.get(cell), "auto_wins": dict(counts)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
