"""Mutation testing of the selection tier: edit the tables, see whether the tier notices.

A *mutant* is the shipped tables with one edit (:func:`mutants`): drop a CUDA SM from a kernel's
platform requirements, drop a platform, drop a supported activation, swap two adjacent backends
of a priority order, drop a shortcut, drop an environment override, drop a kernel's environment
requirement. Each mutant is compiled and put to the tier's deployments: vLLM's answers come from
a finished run (they do not depend on our tables, so they are read from its records), ours are
recomputed with the mutant. A mutant is *killed* when a deployment that agreed on the full
comparison (status, class, format, backend member, refusal stage) no longer does.

A mutant no deployment of the run kills is checked on a larger pool of deployments with our side
alone (the original tables against the mutant, on the tier's comparison): if it changes no answer there it is set aside as
*equivalent on the pool* (the pool is a sample, not the exhaustive product of the discrete axes:
an equivalent mutant may still be a real change the pool does not reach). Otherwise the pool
deployments on which the mutant answers differently are *targeted*: up to ``targeted`` of them
per mutant are put to vLLM (one batch for all mutants), and the mutant is killed when vLLM agrees
with the original tables and not with the mutant on one of them; when vLLM drives none of them
(refused at start, or not expressible in the release) the mutant is *undriven*, not scored. A targeted deployment where
vLLM agrees with neither, or with the mutant, is a disagreement of the shipped tables: it is
listed (``original_disagrees``), and the tier's own run would report it too. The score is
killed / (killed + survived).

Usage::

    python -m moe_oracle.verify.mutate --records RUN.jsonl --release 0.33.0 --sample 60 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Sequence

from ..core._resources import package_dir, table_dirs
from ..core.loading import compile_tables
from ..core.oracle import Oracle
from ..core.tables import TableFile, check_document, load_schemas, read_tables_cached
from ..inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does
from .cases import Answer, Deployment
from .ours import OurSide

__all__ = ["Mutant", "mutants", "score", "vllm_answers"]


@dataclass(frozen=True)
class Mutant:
    """One edit of the shipped tables.

    Attributes:
        kernel: the experts entry the edit touches (``None``: an order, shortcut or override).
        focus: deployment fields the edit is about (``(("capability", 103),)`` for a dropped
            SM), set on the deployments that target it (:func:`targeted_pool`).
    """

    operator: str
    description: str
    files: tuple[TableFile, ...]
    kernel: str | None = None
    focus: tuple[tuple[str, Any], ...] = ()


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


def _emit(files: tuple[TableFile, ...], path: str, data: Any, operator: str, what: str, kernel: str | None = None, focus: tuple[tuple[str, Any], ...] = ()) -> Iterator[Mutant]:
    out = _with(files, path, data, what)
    if out is not None:
        yield Mutant(operator, what, out, kernel, focus)


def _entry_mutants(files: tuple[TableFile, ...], tf: TableFile, j: int, entry: dict[str, Any]) -> Iterator[Mutant]:
    eid = entry["id"]
    platforms = entry.get("platforms") or {}
    caps = ((platforms.get("cuda") or {}).get("device_capability"))
    if isinstance(caps, list) and len(caps) > 1:
        for cap in caps:
            data = _copy(tf.data)
            data["entries"][j]["platforms"]["cuda"]["device_capability"] = [c for c in caps if c != cap]
            yield from _emit(files, tf.path, data, "drop an SM", f"{eid}: drop SM {cap}", eid, (("platform", "cuda"), ("capability", cap), ("arch", None), ("cpu_amx", None)))
    if len(platforms) > 1:
        for p in platforms:
            data = _copy(tf.data)
            del data["entries"][j]["platforms"][p]
            yield from _emit(files, tf.path, data, "drop a platform", f"{eid}: drop platform {p}", eid)
    acts = (entry.get("supports") or {}).get("activation")
    if isinstance(acts, list) and len(acts) > 1:
        for a in acts:
            data = _copy(tf.data)
            data["entries"][j]["supports"]["activation"] = [x for x in acts if x != a]
            yield from _emit(files, tf.path, data, "drop an activation", f"{eid}: drop activation {a}", eid, (("activation", a),))
    for var in entry.get("env") or {}:
        data = _copy(tf.data)
        del data["entries"][j]["env"][var]
        if not data["entries"][j]["env"]:
            del data["entries"][j]["env"]
        yield from _emit(files, tf.path, data, "drop an env effect", f"{eid}: drop env {var}", eid)


def _ours(oracle: Oracle, release: str) -> OurSide:
    return OurSide(release, oracle)


def targeted_pool(mutant: Mutant, release: str, side: OurSide, per_kernel: int = 4, seed: int = 0) -> list[Deployment]:
    """Deployments aimed at ``mutant``: ones our original tables answer with its kernel (the
    guided sampler, :func:`moe_oracle.verify.guided.guided_deployments`), each also with the
    mutant's focus fields set (the dropped SM, activation). ``[]`` for an edit of no one kernel."""
    if mutant.kernel is None:
        return []
    from .guided import guided_deployments

    found, _unreached = guided_deployments(release, per_kernel=per_kernel, seed=seed, kernels=[mutant.kernel], side=side, pool=400)
    out = list(found)
    if mutant.focus:
        for dep in found:
            try:
                out.append(replace(dep, **dict(mutant.focus)))
            except (TypeError, ValueError):
                continue  # the focus makes no valid deployment of this one
    return out


def _agrees(theirs: Answer, ours: Answer) -> bool:
    return theirs.agrees(ours) and theirs.same_stage(ours)


def score(
    records: Sequence[dict[str, Any]],
    release: str,
    sample: Sequence[Mutant],
    pool: Sequence[Deployment] = (),
    progress: Callable[[str], None] | None = None,
    *,
    ask_vllm: Callable[[Sequence[Deployment]], Sequence[Answer]] | None = None,
    targeted: int = 4,
    aim: bool = True,
) -> dict[str, Any]:
    """Run every mutant of ``sample`` over ``records`` (a run's JSON records: ``case``, ``vllm``).

    ``ask_vllm`` (deployments -> vLLM's answers in the same order, e.g. :func:`vllm_answers`)
    puts up to ``targeted`` pool deployments per unkilled, non-equivalent mutant to vLLM; without
    it such a mutant counts as survived. ``aim``: add each mutant's :func:`targeted_pool` to the
    pool (deployments that select its kernel, with the dropped value set).
    """
    base = OurSide(release)
    cases = [(Deployment.from_dict(r["case"]), Answer.from_dict(r["vllm"])) for r in records if r["vllm"]["status"] != "unsupported"]
    agreeing = [(d, v) for d, v in cases if _agrees(v, base.answer(d))]
    pool_base = [(d, base.answer(d)) for d in pool]
    out: dict[str, Any] = {"killed": [], "survived": [], "undriven": [], "equivalent": [], "invalid": [], "original_disagrees": []}
    pending: list[tuple[str, list[tuple[Deployment, Answer, Answer]]]] = []
    for m in sample:
        t0 = time.perf_counter()
        name = f"{m.operator}: {m.description}"
        try:
            side = _ours(Oracle(compile_tables(m.files)), release)
        except Exception as exc:  # noqa: BLE001 - a mutant the compiler refuses is no mutant
            out["invalid"].append(f"{name}: {type(exc).__name__}")
            continue
        killer = next((d for d, v in agreeing if not _agrees(v, side.answer(d))), None)
        if killer is not None:
            verdict = "killed"
        else:
            aimed = [(d, base.answer(d)) for d in targeted_pool(m, release, base)] if aim else []
            differing = [(d, a, m_a) for d, a in (*aimed, *pool_base) if not _agrees(a, m_a := side.answer(d))]
            if not differing:
                verdict = "equivalent"
            elif ask_vllm is not None:
                pending.append((name, differing[:targeted]))
                verdict = "targeted"
            else:
                verdict = "survived"
        if verdict != "targeted":
            out[verdict].append(name)
        if progress:
            progress(f"{verdict:10s} {name} ({time.perf_counter() - t0:.1f} s)")
    if pending and ask_vllm is not None:
        batch = list({d.key(): d for _, rows in pending for d, _, _ in rows}.values())
        if progress:
            progress(f"asking vLLM {release} about {len(batch)} targeted deployments of {len(pending)} mutants")
        answers = {d.key(): v for d, v in zip(batch, ask_vllm(batch))}
        for name, rows in pending:
            killed = False
            driven = 0
            for d, original, mutated in rows:
                v = answers[d.key()]
                if v.status == "unsupported":
                    continue
                driven += 1
                if not _agrees(v, original):
                    out["original_disagrees"].append(f"{name}: {d.key()}")
                elif not _agrees(v, mutated):
                    killed = True
            # Every targeted deployment not driven (vLLM refuses it at start, or the release cannot
            # express it): no evidence either way, so neither killed nor survived.
            verdict = "killed" if killed else "survived" if driven else "undriven"
            out[verdict].append(name)
            if progress:
                progress(f"{verdict:10s} {name} (targeted, {len(rows)} deployments, {driven} driven)")
    decided = len(out["killed"]) + len(out["survived"])
    out["score"] = round(len(out["killed"]) / decided, 4) if decided else None
    out["counts"] = {k: len(v) for k, v in out.items() if isinstance(v, list)}
    return out


def vllm_answers(env: Any, release: str, jobs: int = 2) -> Callable[[Sequence[Deployment]], list[Answer]]:
    """``ask_vllm`` for :func:`score`: the release's answers for deployments, from one tier run
    (``env``: a :class:`moe_oracle.verify.run.VllmEnv`)."""
    from .run import run_release

    def ask(deployments: Sequence[Deployment]) -> list[Answer]:
        report = run_release(env, release, list(deployments), jobs=jobs)
        by_key = {r.case.key(): r.vllm for r in report.records}
        return [by_key[d.key()] for d in deployments]

    return ask


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.mutate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=user_path, required=True, help="JSON lines of a run's records (case, vllm, ours)")
    parser.add_argument("--release", required=True)
    parser.add_argument("--sample", type=int, default=0, help="mutants to draw (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", type=int, default=0, help="random deployments (ours only) for the equivalence check")
    parser.add_argument("--targeted", type=int, default=4, help="pool deployments per unkilled mutant put to vLLM (0: none)")
    parser.add_argument("--env", type=user_path, help="the differential environment (default $MOE_ORACLE_VLLM_ENV) for the targeted deployments")
    parser.add_argument("--out", type=user_path, help="write the result as JSON")
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    every = list(mutants())
    chosen = random.Random(args.seed).sample(every, min(args.sample, len(every))) if args.sample else every
    from .space import random_deployments

    pool = random_deployments(args.pool, seed=args.seed + 1000) if args.pool else ()
    print(f"{len(every)} mutants; running {len(chosen)} over {len(records)} deployments (pool {len(pool)})", flush=True)
    t0 = time.perf_counter()
    env_dir = args.env or (user_path(os.environ["MOE_ORACLE_VLLM_ENV"]) if os.environ.get("MOE_ORACLE_VLLM_ENV") else None)
    ask = None
    if args.targeted and env_dir is not None:
        from .run import VllmEnv

        ask = vllm_answers(VllmEnv.from_dir(env_dir), args.release)
    result = score(records, args.release, chosen, pool, progress=lambda s: print(s, flush=True), ask_vllm=ask, targeted=args.targeted)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps({k: result[k] for k in ("score", "counts", "seconds")}))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
