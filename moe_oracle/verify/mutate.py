"""Mutation testing of the selection tier: edit the tables, see whether the tier notices.

A *mutant* is the shipped tables with one edit (:func:`mutants`): drop a CUDA SM from a kernel's
platform requirements, drop a platform, drop a supported activation, swap two adjacent backends
of a priority order, drop a shortcut, drop an environment override, drop a kernel's environment
requirement. Each mutant is compiled and put to the tier's deployments: vLLM's answers come from
a finished run (they do not depend on our tables, so they are read from its records), ours are
recomputed with the mutant. A mutant is *killed* when a deployment that agreed on the full
comparison (status, class, format, backend member, refusal stage) no longer does.

A mutant no deployment of the run kills is checked on a larger pool of deployments with our side
alone (the original tables against the mutant): if it changes no answer there it is set aside as
*equivalent on the pool* (the pool is a sample, not the exhaustive product of the discrete axes:
an equivalent mutant may still be a real change the pool does not reach). The score is
killed / (killed + survived).

Usage::

    python -m moe_oracle.verify.mutate --records RUN.jsonl --release 0.33.0 --sample 60 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..core._resources import package_dir, table_dirs
from ..core.loading import compile_tables
from ..core.oracle import Oracle
from ..core.tables import TableFile, check_document, load_schemas, read_tables_cached
from .cases import Answer, Deployment
from .ours import OurSide

__all__ = ["Mutant", "mutants", "score"]


@dataclass(frozen=True)
class Mutant:
    """One edit of the shipped tables."""

    operator: str
    description: str
    files: tuple[TableFile, ...]


def _shipped() -> tuple[TableFile, ...]:
    files, issues = read_tables_cached(list(table_dirs()), load_schemas(), package_dir())
    if issues:
        raise RuntimeError(f"the shipped tables do not load: {issues[:3]}")
    return tuple(files)


def _copy(data: Any) -> Any:
    return json.loads(json.dumps(data))


def _with(files: tuple[TableFile, ...], path: str, data: Any, what: str) -> tuple[TableFile, ...] | None:
    schemas = load_schemas()
    out = []
    for tf in files:
        if tf.path == path:
            if check_document(data, path, path.split("/")[0], schemas):
                return None  # the edit makes the file schema-invalid: not a mutant
            out.append(TableFile(tf.path, tf.kind, data, f"mutated:{what}"))
        else:
            out.append(tf)
    return tuple(out)


def mutants(files: tuple[TableFile, ...] | None = None) -> Iterator[Mutant]:
    """Every single-edit mutant of ``files`` (default: the shipped tables), in a fixed order."""
    files = files or _shipped()
    for tf in files:
        if tf.kind == "experts":
            for j, entry in enumerate(tf.data["entries"]):
                yield from _entry_mutants(files, tf, j, entry)
        if tf.kind == "priority":
            for k, order in enumerate(tf.data.get("orders") or ()):
                backends = order.get("backends") or []
                for i in range(len(backends) - 1):
                    data = _copy(tf.data)
                    b = data["orders"][k]["backends"]
                    b[i], b[i + 1] = b[i + 1], b[i]
                    yield from _emit(files, tf.path, data, "swap adjacent backends", f"{order['id']}: swap {backends[i]} and {backends[i + 1]}")
        for key, operator in (("shortcuts", "drop a shortcut"), ("overrides", "drop an env effect")):
            if tf.kind in (key, key.rstrip("s")) or (isinstance(tf.data, dict) and key in tf.data and tf.kind != "experts"):
                for i, item in enumerate(tf.data.get(key) or ()):
                    data = _copy(tf.data)
                    del data[key][i]
                    yield from _emit(files, tf.path, data, operator, f"drop {item.get('id', i)}")


def _emit(files: tuple[TableFile, ...], path: str, data: Any, operator: str, what: str) -> Iterator[Mutant]:
    out = _with(files, path, data, what)
    if out is not None:
        yield Mutant(operator, what, out)


def _entry_mutants(files: tuple[TableFile, ...], tf: TableFile, j: int, entry: dict[str, Any]) -> Iterator[Mutant]:
    eid = entry["id"]
    platforms = entry.get("platforms") or {}
    caps = ((platforms.get("cuda") or {}).get("device_capability"))
    if isinstance(caps, list) and len(caps) > 1:
        for cap in caps:
            data = _copy(tf.data)
            data["entries"][j]["platforms"]["cuda"]["device_capability"] = [c for c in caps if c != cap]
            yield from _emit(files, tf.path, data, "drop an SM", f"{eid}: drop SM {cap}")
    if len(platforms) > 1:
        for p in platforms:
            data = _copy(tf.data)
            del data["entries"][j]["platforms"][p]
            yield from _emit(files, tf.path, data, "drop a platform", f"{eid}: drop platform {p}")
    acts = (entry.get("supports") or {}).get("activation")
    if isinstance(acts, list) and len(acts) > 1:
        for a in acts:
            data = _copy(tf.data)
            data["entries"][j]["supports"]["activation"] = [x for x in acts if x != a]
            yield from _emit(files, tf.path, data, "drop an activation", f"{eid}: drop activation {a}")
    for var in entry.get("env") or {}:
        data = _copy(tf.data)
        del data["entries"][j]["env"][var]
        if not data["entries"][j]["env"]:
            del data["entries"][j]["env"]
        yield from _emit(files, tf.path, data, "drop an env effect", f"{eid}: drop env {var}")


def _ours(oracle: Oracle, release: str) -> OurSide:
    return OurSide(release, oracle)


def score(
    records: Sequence[dict[str, Any]],
    release: str,
    sample: Sequence[Mutant],
    pool: Sequence[Deployment] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every mutant of ``sample`` over ``records`` (a run's JSON records: ``case``, ``vllm``)."""
    base = OurSide(release)
    cases = [(Deployment.from_dict(r["case"]), Answer.from_dict(r["vllm"])) for r in records if r["vllm"]["status"] != "unsupported"]
    agreeing = [(d, v) for d, v in cases if (lambda o: v.agrees(o) and v.same_stage(o))(base.answer(d))]
    pool_base = [(d, base.answer(d)) for d in pool]
    out: dict[str, Any] = {"killed": [], "survived": [], "equivalent": [], "invalid": []}
    for m in sample:
        t0 = time.perf_counter()
        try:
            side = _ours(Oracle(compile_tables(m.files)), release)
        except Exception as exc:  # noqa: BLE001 - a mutant the compiler refuses is no mutant
            out["invalid"].append(f"{m.operator}: {m.description}: {type(exc).__name__}")
            continue
        killer = next((d for d, v in agreeing if not (lambda o: v.agrees(o) and v.same_stage(o))(side.answer(d))), None)
        if killer is not None:
            verdict = "killed"
        elif any(side.answer(d) != a for d, a in pool_base):
            verdict = "survived"
        else:
            verdict = "equivalent"
        out[verdict].append(f"{m.operator}: {m.description}")
        if progress:
            progress(f"{verdict:10s} {m.operator}: {m.description} ({time.perf_counter() - t0:.1f} s)")
    decided = len(out["killed"]) + len(out["survived"])
    out["score"] = round(len(out["killed"]) / decided, 4) if decided else None
    out["counts"] = {k: len(v) for k, v in out.items() if isinstance(v, list)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m moe_oracle.verify.mutate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=Path, required=True, help="JSON lines of a run's records (case, vllm, ours)")
    parser.add_argument("--release", required=True)
    parser.add_argument("--sample", type=int, default=0, help="mutants to draw (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", type=int, default=0, help="random deployments (ours only) for the equivalence check")
    parser.add_argument("--out", type=Path, help="write the result as JSON")
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    every = list(mutants())
    chosen = random.Random(args.seed).sample(every, min(args.sample, len(every))) if args.sample else every
    from .space import random_deployments

    pool = random_deployments(args.pool, seed=args.seed + 1000) if args.pool else ()
    print(f"{len(every)} mutants; running {len(chosen)} over {len(records)} deployments (pool {len(pool)})", flush=True)
    t0 = time.perf_counter()
    result = score(records, args.release, chosen, pool, progress=lambda s: print(s, flush=True))
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps({k: result[k] for k in ("score", "counts", "seconds")}))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
