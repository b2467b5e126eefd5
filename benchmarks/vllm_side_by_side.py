"""Our cold select against vLLM's own selection functions, side by side in one process.

    python benchmarks/vllm_side_by_side.py [--vllm-env DIR] [--release 0.33.0] [--cases N] [--repeat R]

Runs in the differential harness's environment (``moe_oracle/verify``): an interpreter where the
vLLM release is importable (its source tree first on ``PYTHONPATH``, FlashInfer at the version it
pins, then this checkout). Started from any other interpreter, the script re-executes itself there
(``--vllm-env DIR``, default ``$MOE_ORACLE_VLLM_ENV``, else ``/work/venvs``).

Per quant family it samples deployments (``verify.space.random_deployments``, direct front end)
and, for each one both sides accept as input, times:

* **vLLM**: exactly the call ``select_<family>_moe_backend(moe_config, weight_key=...,
  activation_key=...)`` of the release (vLLM P/oracle/<family>.py), whatever it returns or raises.
  Not timed: the simulation's per-state setup (platform class, package probes, env vars, clearing
  vLLM's ``functools`` caches: not vLLM's cost), building the release's ``FusedMoEConfig`` and
  quant keys (the layer does that before selecting). *first*: the first call after the setup (vLLM's
  own caches cold); *warm*: the median of the next ``--repeat`` calls (caches warm: vLLM's best case).
* **ours**: ``engine.evaluate(catalog, config, env)`` (what ``select`` runs on a memo miss: every
  check of every candidate evaluated, every failure recorded in the Decision), median of
  ``--repeat`` calls on the same deployment. Not timed: building the ``MoEConfig`` and
  ``Environment`` (the counterpart of vLLM's config objects).

Prints per family the deployments timed, how many vLLM raised for / we refused as input (both are
answers, timed as such), the medians and p90s (microseconds) and the ratio ours / vLLM warm, and the
machine load. Asserts nothing. Issue 11 target: ours <= 2x vLLM's FP8 selector.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import inspect
import logging
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("unquantized", "fp8", "mxfp8", "nvfp4", "mxfp4", "int8", "w4a8_fp8", "w4a8_int8")


def _relaunch(args: argparse.Namespace) -> int:
    """Re-execute this script in the vLLM environment's interpreter with the release on the path."""
    sys.path.insert(0, str(ROOT))
    from moe_oracle.verify.run import VllmEnv

    directory = args.vllm_env or Path(os.environ.get("MOE_ORACLE_VLLM_ENV", "/work/venvs"))
    env = VllmEnv.from_dir(directory)
    child = dict(os.environ, PYTHONPATH=env.pythonpath(args.release), PYTHONHASHSEED="0", MOE_ORACLE_SIDE_BY_SIDE_INNER="1")
    for key in [k for k in child if k.startswith("VLLM_")]:
        del child[key]
    argv = [str(env.python), str(Path(__file__).resolve()), *sys.argv[1:], "--tree", str(env.tree(args.release))]
    os.execve(argv[0], argv, child)
    return 0  # not reached


def _quiet() -> None:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("TORCHINDUCTOR_DISABLE", "1")
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vllm-env", type=Path, help="vLLM environment directory (default $MOE_ORACLE_VLLM_ENV, else /work/venvs)")
    ap.add_argument("--release", default="0.33.0", help="vLLM release (default 0.33.0)")
    ap.add_argument("--cases", type=int, default=300, help="deployments sampled per family (default 300)")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per deployment and side (default 20)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not os.environ.get("MOE_ORACLE_SIDE_BY_SIDE_INNER"):
        return _relaunch(args)

    _quiet()
    t0 = time.perf_counter()
    from moe_oracle.verify.vllm_sim import Simulation
    from moe_oracle.verify.vllm_side import VllmSide

    sim = Simulation(args.release, args.tree)
    side = VllmSide(sim)
    from moe_oracle.core.engine import evaluate
    from moe_oracle.core.errors import ConfigError
    from moe_oracle.core.oracle import default_catalog
    from moe_oracle.verify.frontends.generic import _SELECTORS
    from moe_oracle.verify.ours import config_for, environment_for
    from moe_oracle.verify.space import random_deployments

    catalog = default_catalog()
    print(f"vLLM {args.release} from {args.tree} and moe_oracle tables {catalog.tables_hash}, imported in {time.perf_counter() - t0:.1f} s")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    print(f"per family: {args.cases} sampled deployments (seed {args.seed}), {args.repeat} timed calls per deployment and side\n")
    print(f"{'family':<12} {'deps':>5} {'raise/ours':>11} | {'vLLM first':>10} {'vLLM warm':>10} {'p90':>8} | {'ours':>8} {'p90':>8} | {'ours/warm':>9} {'ours/first':>10}")
    totals: dict[str, list[float]] = {"first": [], "warm": [], "ours": []}
    fp8_ratio = None
    for family in FAMILIES:
        module, func = _SELECTORS[family]
        fn = getattr(importlib.import_module(f"vllm.model_executor.layers.fused_moe.oracle.{module}"), func)
        params = inspect.signature(fn).parameters
        first_arg = next(iter(params))
        firsts: list[float] = []
        warms: list[float] = []
        ours: list[float] = []
        raised = refused = 0
        deps = [d.__class__(**{**d.__dict__, "front_end": "direct"}) for d in random_deployments(args.cases, args.seed, [family])]
        gc.collect()
        for dep in deps:
            try:
                config, env = config_for(dep), environment_for(dep, args.release)
            except (ConfigError, ValueError):
                continue  # our config model refuses the input itself
            try:
                sim.apply(dep)
                side._model_config(dep)
                moe = side.moe_config(dep)
                kwargs = {first_arg: moe}
                if "weight_key" in params:
                    kwargs["weight_key"] = side.quant_key(dep.weight_key)
                if "activation_key" in params:
                    kwargs["activation_key"] = side.quant_key(dep.activation_key)
            except Exception:  # noqa: BLE001 - the layer factory refuses it, or a key this release lacks: not a selection
                continue
            calls = []
            failed = False
            for _ in range(args.repeat + 1):
                start = time.perf_counter_ns()
                try:
                    fn(**kwargs)
                except Exception:  # noqa: BLE001 - vLLM refusing the deployment is its answer
                    failed = True
                calls.append(time.perf_counter_ns() - start)
            raised += failed
            firsts.append(calls[0] / 1e3)
            warms.append(statistics.median(calls[1:]) / 1e3)
            mine = []
            for _ in range(args.repeat):
                start = time.perf_counter_ns()
                try:
                    evaluate(catalog, config, env)
                except ConfigError:  # an unknown backend name or an env value vLLM refuses at start: our answer
                    refused += 1
                mine.append(time.perf_counter_ns() - start)
            ours.append(statistics.median(mine) / 1e3)
        if not ours:
            print(f"{family:<12} no deployment both sides accept")
            continue
        first_m, warm_m, ours_m = statistics.median(firsts), statistics.median(warms), statistics.median(ours)
        totals["first"] += firsts
        totals["warm"] += warms
        totals["ours"] += ours
        if family == "fp8":
            fp8_ratio = ours_m / warm_m
        print(f"{family:<12} {len(ours):>5} {raised:>5}/{refused // args.repeat:<5} | {first_m:8.1f}us {warm_m:8.1f}us {_p(warms, 0.9):6.1f}us | {ours_m:6.1f}us {_p(ours, 0.9):6.1f}us | {ours_m / warm_m:8.2f}x {ours_m / first_m:9.2f}x")
    fm, wm, om = (statistics.median(totals[k]) for k in ("first", "warm", "ours"))
    print(f"{'all':<12} {len(totals['ours']):>5} {'':>11} | {fm:8.1f}us {wm:8.1f}us {_p(totals['warm'], 0.9):6.1f}us | {om:6.1f}us {_p(totals['ours'], 0.9):6.1f}us | {om / wm:8.2f}x {om / fm:9.2f}x")
    if fp8_ratio is not None:
        print(f"\nours / vLLM FP8 selector (warm): {fp8_ratio:.2f}x (target <= 2x)")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
