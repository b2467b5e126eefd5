"""Selection speed over the full shipped catalog: prints figures, asserts nothing.

    python benchmarks/select_bench.py [--configs N] [--repeat R] [--no-cli]

Figures:
* table load: read + schema-validate + compile every shipped table (median of --repeat), the
  same with the validated-table cache warm (YAML and validation skipped, compile paid), and with
  the compiled-catalog cache warm (what every CLI call after the first pays);
* cold select: a config the oracle has not seen (memo empty), over N distinct sampled configs;
* warm select: the same config again (the oracle's memo);
* explain: selection plus the full record (``to_dict``) and the text view;
* the record alone, next to the same record deep-copied by ``marshal.loads`` (C code: a floor
  for building that many dicts in CPython), with the failures and assumptions it holds;
* cold select split by outcome: a kernel found, or nothing eligible (``Oracle.select`` raising
  ``NoEligibleKernelError``, whose message renders when read);
* CLI start to answer: ``moe-oracle select --model deepseek-r1 --gpu H200 --tp 8`` as a subprocess,
  warm (bytecode written, as ``pip install`` compiles it; the caches filled by a first call).
Targets (issue 2): warm <= 5 us, cold <= 200 us, CLI <= 0.5 s on a 2-core machine; (issue 11) a
select that finds nothing <= 1.5x one that finds something, explain <= 1 ms, CLI <= 0.25 s warm;
(issue 22) the CLI within 2.5x a bare ``python -c pass`` timed alongside it.
The side-by-side ratio against vLLM's own selector is benchmarks/vllm_side_by_side.py.
"""

from __future__ import annotations

import argparse
import marshal
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moe_oracle import Oracle  # noqa: E402
from moe_oracle.core.loading import load_catalog  # noqa: E402
from moe_oracle.core.engine import evaluate  # noqa: E402
from moe_oracle.core.decision import NoEligibleKernelError  # noqa: E402
from moe_oracle.tools.sampling import sample_configs  # noqa: E402
from moe_oracle.core.tables import cache_dir  # noqa: E402


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} us"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=2000, help="distinct configs for cold/explain timing")
    ap.add_argument("--repeat", type=int, default=5, help="repeats of the table load and CLI runs")
    ap.add_argument("--no-cli", action="store_true", help="skip the subprocess CLI timing")
    args = ap.parse_args(argv)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")

    loads = []
    os.environ["MOE_ORACLE_NO_CACHE"] = "1"
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        catalog = load_catalog()
        loads.append(time.perf_counter() - t0)
    del os.environ["MOE_ORACLE_NO_CACHE"]
    load_catalog()  # fill the validated-table and compiled-catalog caches
    location = cache_dir()
    cached = []
    compiled = []
    for _ in range(args.repeat):
        for entry in location.glob("catalog-*.pickle") if location is not None else ():
            entry.unlink()  # the validated-table cache alone: YAML and validation skipped, compile paid
        t0 = time.perf_counter()
        load_catalog()
        cached.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        load_catalog()
        compiled.append(time.perf_counter() - t0)
    n_checks = sum(len(e.checks) for e in catalog.experts) + sum(len(p.checks) for p in catalog.prepare_finalize)
    print(f"catalog: {len(catalog.experts)} experts kernels in {len(catalog.backends)} backends, {len(catalog.prepare_finalize)} prepare/finalize, "
          f"{len(catalog.orders)} priority orders, {len(catalog.adjustments)} adjustments, {n_checks} compiled checks, {len(catalog.files)} table files")
    print(f"table load (YAML + schema validation + compile): median {statistics.median(loads) * 1e3:.1f} ms over {args.repeat}")
    print(f"table load (validated-table cache hit + compile): median {statistics.median(cached) * 1e3:.1f} ms over {args.repeat}")
    print(f"table load (compiled-catalog cache hit):          median {statistics.median(compiled) * 1e3:.1f} ms over {args.repeat}")

    samples = list(sample_configs(args.configs, 7, catalog))
    first_cfg, first_env = samples[0]
    t0 = time.perf_counter()
    evaluate(catalog, first_cfg, first_env)
    print(f"first select after load:     {_us(time.perf_counter() - t0)}")

    cold = []
    found: list[float] = []
    none: list[float] = []
    for cfg, env in samples:
        oracle = Oracle(catalog, env)
        t0 = time.perf_counter()
        try:
            oracle.select(cfg)  # strict: raises when nothing is eligible (the error renders when read)
            found.append(time.perf_counter() - t0)
        except NoEligibleKernelError:
            none.append(time.perf_counter() - t0)
        cold.append(time.perf_counter() - t0)
    cold.sort()
    print(f"cold select (memo miss):     median {_us(statistics.median(cold))}, p90 {_us(cold[int(len(cold) * 0.9)])}, max {_us(cold[-1])} over {len(cold)} configs")
    if found and none:
        f_m, n_m = statistics.median(found), statistics.median(none)
        print(f"  finds a kernel:            median {_us(f_m)} over {len(found)}; finds nothing (raises NoEligibleKernelError): median {_us(n_m)} over {len(none)}: {n_m / f_m:.2f}x (target <= 1.5x)")

    oracle = Oracle(catalog, first_env)
    oracle.select(first_cfg, strict=False)
    n = 200_000
    t0 = time.perf_counter()
    for _ in range(n):
        oracle.select(first_cfg, strict=False)
    print(f"warm select (same config):   {_us((time.perf_counter() - t0) / n)} per call over {n}")

    twin = first_cfg.with_changes()  # equal but a different object: hashes and compares fields
    hash(twin)
    t0 = time.perf_counter()
    for _ in range(n):
        oracle.select(twin, strict=False)
    print(f"warm select (equal copy):    {_us((time.perf_counter() - t0) / n)} per call over {n}")

    # Two passes over the same configs, each a fresh evaluation and record: the first also builds
    # the per-check record templates (failure and assumption dicts, allowed values as JSON) of
    # every check it is the first to report; the second is a process's steady state.
    for label in ("first pass (per-check templates built on first use)", "steady state (second pass, fresh Decisions)"):
        explain = []
        for cfg, env in samples[:500]:
            t0 = time.perf_counter()
            d = evaluate(catalog, cfg, env)
            d.to_dict()
            d.render_text()
            explain.append(time.perf_counter() - t0)
        explain.sort()
        print(f"explain (select + record + text), {label}: median {_us(statistics.median(explain))}, p90 {_us(explain[int(len(explain) * 0.9)])} over {len(explain)} configs (target <= 1 ms)")

    # What the record alone costs, and a floor for building it in CPython: the same record
    # deep-copied by marshal.loads (C code, no per-config logic). Every failure of every candidate
    # and every assumption is in the record, so its size is the configs' own.
    built, floor, failures, assumptions = [], [], [], []
    for cfg, env in samples[:500]:
        d = evaluate(catalog, cfg, env)
        d.rows  # the ranking materialized, as explain's text view needs it anyway
        t0 = time.perf_counter()
        record = d.to_dict()
        built.append(time.perf_counter() - t0)
        blob = marshal.dumps(record)
        t0 = time.perf_counter()
        marshal.loads(blob)
        floor.append(time.perf_counter() - t0)
        failures.append(sum(len(c["failures"]) for c in record["candidates"]))
        assumptions.append(sum(len(c["assumptions"]) for c in record["candidates"]))
    print(f"the record (to_dict, rows materialized): median {_us(statistics.median(built))}; the same record deep-copied by marshal.loads (C): median {_us(statistics.median(floor))}; "
          f"per record median {statistics.median(failures):.0f} failures, {statistics.median(assumptions):.0f} assumptions over {len(built)} configs")

    if not args.no_cli:
        # The console script installed beside this interpreter (a venv's bin/); a version
        # manager's shim elsewhere on PATH would add its own start-up to ours.
        beside = Path(sys.executable).with_name("moe-oracle")
        cmd = [str(beside)] if beside.is_file() else [sys.executable, "-m", "moe_oracle.cli"]
        cmd += ["select", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"]
        runs = []
        cpus = []
        bare = []
        bare_cpus = []
        out = ""
        # Warm, as after `pip install` (which compiles the bytecode): bytecode written, the
        # compiled-catalog cache filled by the first call.
        child_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(cmd, capture_output=True, text=True, check=False, env=child_env)
        # The peer, interleaved with ours so both see the same machine: the interpreter alone.
        peer = [sys.executable, "-c", "pass"]
        for _ in range(args.repeat):
            before = os.times()
            t0 = time.perf_counter()
            subprocess.run(peer, capture_output=True, text=True, check=False, env=child_env)
            bare.append(time.perf_counter() - t0)
            after = os.times()
            bare_cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
            before = os.times()
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=child_env)
            runs.append(time.perf_counter() - t0)
            after = os.times()
            cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
            out = proc.stdout.strip()
        print(f"CLI start to answer:         median {statistics.median(runs):.3f} s over {args.repeat}, CPU (user+sys) median {statistics.median(cpus):.3f} s ({' '.join(cmd[-7:])} -> {out}) (target <= 0.25 s warm)")
        print(f"bare interpreter (python -c pass), interleaved: median {statistics.median(bare):.3f} s, CPU {statistics.median(bare_cpus):.3f} s; "
              f"select / bare = {statistics.median(runs) / statistics.median(bare):.2f}x wall, {statistics.median(cpus) / max(statistics.median(bare_cpus), 1e-9):.2f}x CPU (target <= 2.5x, issue 22)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
