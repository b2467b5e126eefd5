"""The release kit: the mechanical steps for a vLLM release the tables have never seen.

    python -m moe_oracle.verify.new_release X.Y.Z [--vllm-env DIR] [--cases N] [--seed S] [--log FILE]

Steps, each timed and logged (a step that fails is recorded and the kit goes on where it can):

1. **wheel**: ``pip download --no-deps vllm==X.Y.Z`` (the environment's interpreter), its
   ``Requires-Dist: flashinfer-python==P`` pin and build date (the newest entry of the wheel);
2. **flashinfer**: whether the index serves the pin (``pip download``); if not, the nearest served
   version above it (else below) is its documented substitute (``pip index versions``);
3. **register**: the release is appended to ``rules/engine.yaml`` (``verified: false``, its pin,
   the substitute) — the harness's release list and pins are read from there
   (:mod:`moe_oracle.verify.releases`);
4. **environment**: its source tree and FlashInfer go into the differential environment
   (:mod:`moe_oracle.verify.setup_env`); ``setup.json`` records any substitution;
5. **facts**: ``tools/vllm_cli_facts.py`` writes ``engine_facts/vllm-X.Y.Z.yaml`` and
   ``tools/vllm_release_values.py`` regenerates ``engine_facts/vllm-release-values.yaml`` (removed
   environment variables included) from every tree of the environment;
6. **selection tier**: the harness (:func:`moe_oracle.verify.run.verify`) with the current tables
   answering for the new release (each ``engine:`` range admits it as it admits the previous
   one, so the tables stand in with the previous release's facts);
7. **serve tier**: ``tests/differential/test_serve_refusals.py`` for the new release (the
   release's own parser against ``moe_oracle.inputs.serve``);
8. **report**: the disagreements grouped by cause (:func:`group_disagreements`), each group next
   to the functions of vLLM's selection, quantization, config and platform modules whose bodies
   changed between the previous modelled release and this one (:mod:`.source_diff`), then what
   the facts files say changed (flags, choices, variables, methods).

What it cannot do alone is listed at the end of the log: modelling the changes (tables, Python
modules), marking the release ``verified``, and checking a FlashInfer substitute
(``python -m moe_oracle.verify.flashinfer_substitute``).

Exit codes: 0 done (disagreements are reported, not failures), 2 bad input, 1 a step failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from packaging.version import InvalidVersion, Version

from ..core._resources import package_dir
from ..inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does
from .source_diff import TreeDiff, diff_trees

__all__ = ["Cause", "group_disagreements", "main", "wheel_facts"]

REPO = package_dir().parent
FACTS_DIR = package_dir() / "engine_facts"


# ---------------------------------------------------------------------------- causes


@dataclass
class Cause:
    """One group of disagreements with the same shape.

    Attributes:
        kind: ``format`` (same class, another activation format), ``kernel`` (both select, other
            classes), ``vllm_refuses`` / ``ours_refuses`` (one side selects, the other refuses),
            ``status`` (anything else).
        key: the shape (what each side answered, without the deployment).
        count: deployments in the group; families: count per quant family.
        examples: up to three deployment keys (replay with ``moe-oracle verify --replay``).
        classes: the vLLM experts classes involved (to find the functions that changed).
    """

    kind: str
    key: str
    count: int = 0
    families: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    classes: set[str] = field(default_factory=set)


def _short(detail: str) -> str:
    """The stable part of an error text: the exception type and its first words, numbers masked.

    >>> _short("ValueError: EPLB currently only supports even distribution of experts across ranks. Got 130 experts")
    'ValueError: EPLB currently only supports even distribution of experts across'
    """
    text = re.sub(r"\d+", "N", detail.split("\n")[0])
    text = re.sub(r"'[^']*'", "'…'", text)
    return " ".join(text.split()[:10])


def group_disagreements(records: Iterable[dict[str, Any]]) -> list[Cause]:
    """Group disagreement records (``Record.to_dict()``) by the shape of the two answers, largest first."""
    groups: dict[tuple[str, str], Cause] = {}
    for rec in records:
        v, o = rec["vllm"], rec["ours"]
        if v["status"] == "ok" and o["status"] == "ok":
            if v["experts"] == o["experts"]:
                kind, key = "format", f"{v['experts']}: vLLM {v['activation_format']}, ours {o['activation_format']}"
            else:
                kind, key = "kernel", f"vLLM {v['experts']} ({v['activation_format']}), ours {o['experts']} ({o['activation_format']})"
        elif v["status"] == "ok":
            kind, key = "ours_refuses", f"vLLM {v['experts']}, ours {o['status']}: {_short(o['detail'])}"
        elif o["status"] == "ok":
            kind, key = "vllm_refuses", f"vLLM {v['status']}: {_short(v['detail'])}, ours {o['experts']}"
        else:
            kind, key = "status", f"vLLM {v['status']} {_short(v['detail'])}, ours {o['status']} {_short(o['detail'])}"
        cause = groups.setdefault((kind, key), Cause(kind, key))
        cause.count += 1
        cause.families[rec["case"]["family"]] += 1
        if len(cause.examples) < 3:
            cause.examples.append(rec.get("key") or _case_key(rec["case"]))
        for side in (v, o):
            if side.get("experts"):
                cause.classes.add(side["experts"])
    return sorted(groups.values(), key=lambda c: -c.count)


def _case_key(case: dict[str, Any]) -> str:
    from .cases import Deployment

    return Deployment.from_dict(case).key()


def related_functions(cause: Cause, diff: TreeDiff, limit: int = 8) -> list[str]:
    """Changed functions that name one of the cause's classes (their methods, or a body that mentions them)."""
    out = []
    for f in diff.functions:
        top = f.name.split(".")[0]
        if top in cause.classes or any(c in f.name for c in cause.classes):
            out.append(f"{f.kind} {f.path.removeprefix('vllm/model_executor/layers/')}::{f.name}")
    return out[:limit]


# ---------------------------------------------------------------------------- steps


@dataclass
class Log:
    """Timed steps and the things left to a person."""

    lines: list[str] = field(default_factory=list)
    steps: list[tuple[str, float, str]] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    failed: bool = False

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def step(self, name: str, fn: Callable[[], str]) -> str | None:
        t0 = time.perf_counter()
        self.say(f"== {name}")
        try:
            result = fn()
            status = "ok"
        except Exception as exc:  # noqa: BLE001 - a failed step is logged; the kit goes on
            result, status = None, f"failed: {type(exc).__name__}: {exc}"
            self.failed = True
            self.left.append(f"step '{name}' failed ({type(exc).__name__}: {str(exc)[:300]}): do it by hand")
        dt = time.perf_counter() - t0
        self.steps.append((name, dt, status))
        self.say(f"   {status} ({dt:.1f} s){': ' + result if result and status == 'ok' else ''}")
        return result


def _run(cmd: Sequence[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, **kw)


def wheel_facts(wheel: Path) -> tuple[str | None, str]:
    """``(flashinfer-python pin, build date)`` of a vLLM wheel: its METADATA ``Requires-Dist:
    flashinfer-python==P`` and the newest entry date of the archive (ISO)."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode("utf-8", "replace")
        date = max(i.date_time for i in zf.infolist())
    m = re.search(r"^Requires-Dist: flashinfer-python==([^\s;]+)", text, re.M)
    return (m.group(1) if m else None), f"{date[0]:04d}-{date[1]:02d}-{date[2]:02d}"


def _served(python: Path, package: str, version: str, pip_args: Sequence[str], tmp: Path) -> bool:
    proc = _run([str(python), "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", *pip_args, "-d", str(tmp), f"{package}=={version}"])
    return proc.returncode == 0


def _nearest_served(python: Path, package: str, pin: str, pip_args: Sequence[str]) -> str | None:
    """The nearest version the index serves above ``pin`` (else below), from ``pip index versions``."""
    proc = _run([str(python), "-m", "pip", "index", "versions", *pip_args, package])
    m = re.search(r"Available versions:\s*(.+)", proc.stdout)
    if not m:
        return None
    versions = []
    for v in m.group(1).split(","):
        try:
            versions.append(Version(v.strip()))
        except InvalidVersion:
            continue
    p = Version(pin)
    above = sorted(v for v in versions if v > p and not v.is_prerelease)
    below = sorted((v for v in versions if v < p and not v.is_prerelease), reverse=True)
    return str(above[0]) if above else (str(below[0]) if below else None)


def _unexpected_import_errors(errors: dict[str, str]) -> dict[str, str]:
    """The worker's import errors other than a missing optional package (``cases.PACKAGES``: those
    fail in every release, e.g. the DeepEP prepare/finalize modules without ``deep_ep``).

    >>> sorted(_unexpected_import_errors({"a": "ModuleNotFoundError: No module named 'deep_ep'", "b": "ImportError: cannot import name 'x'"}))
    ['b']
    """
    from .cases import PACKAGES

    optional = set(PACKAGES)
    out = {}
    for module, error in errors.items():
        m = re.match(r"ModuleNotFoundError: No module named '([\w.]+)'", error)
        if m and m.group(1).split(".")[0] in optional:
            continue
        out[module] = error
    return out


def _facts_changes(previous: str, release: str) -> list[str]:
    """What the regenerated facts say changed: serve flags, choices, kernel-config keys, variables, methods."""
    import yaml

    out = []
    a_path, b_path = FACTS_DIR / f"vllm-{previous}.yaml", FACTS_DIR / f"vllm-{release}.yaml"
    if a_path.exists() and b_path.exists():
        a, b = yaml.safe_load(a_path.read_text()), yaml.safe_load(b_path.read_text())
        fa = {f["dest"]: f for f in a["serve_flags"]}
        fb = {f["dest"]: f for f in b["serve_flags"]}
        if set(fb) - set(fa):
            out.append(f"serve flags added: {', '.join(sorted(set(fb) - set(fa)))}")
        if set(fa) - set(fb):
            out.append(f"serve flags removed: {', '.join(sorted(set(fa) - set(fb)))}")
        for k in sorted(set(fa) & set(fb)):
            for attr in ("choices", "keys"):
                x, y = fa[k].get(attr), fb[k].get(attr)
                if x != y:
                    if x and y:
                        out.append(f"--{k.replace('_', '-')} {attr}: + {sorted(set(map(str, y)) - set(map(str, x)))} - {sorted(set(map(str, x)) - set(map(str, y)))}")
                    else:
                        out.append(f"--{k.replace('_', '-')} {attr}: {'none' if not x else len(x)} -> {'none' if not y else len(y)}")
    values = FACTS_DIR / "vllm-release-values.yaml"
    if values.exists():
        rv = yaml.safe_load(values.read_text())["releases"]
        if previous in rv and release in rv:
            a, b = rv[previous], rv[release]
            for key in ("quantization", "env_vars", "kv_cache_dtype"):
                plus, minus = sorted(set(b[key]) - set(a[key])), sorted(set(a[key]) - set(b[key]))
                if plus or minus:
                    out.append(f"{key}: {len(a[key])} -> {len(b[key])}; + {plus}; - {minus}")
            if b.get("removed_env_vars"):
                out.append(f"removed variables refused at start: {sorted(b['removed_env_vars'])}")
            if b.get("env_value_rules"):
                out.append(f"variables checked by value at start: {sorted(b['env_value_rules'])}")
            for plat, facts in sorted(b["platforms"].items()):
                old = a["platforms"].get(plat, {})
                if facts.get("supported_quantization") != old.get("supported_quantization"):
                    out.append(f"platform {plat} supported_quantization: + {sorted(set(facts.get('supported_quantization') or []) - set(old.get('supported_quantization') or []))} - {sorted(set(old.get('supported_quantization') or []) - set(facts.get('supported_quantization') or []))}")
    return out


# ---------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.new_release", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("release", help="the new vLLM release, X.Y.Z")
    parser.add_argument("--vllm-env", type=user_path, help="the differential environment (default: $MOE_ORACLE_VLLM_ENV)")
    parser.add_argument("--cases", type=int, default=20000, help="deployments for the selection tier (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="sampler seed (default 0)")
    parser.add_argument("--jobs", type=int, default=max(1, os.cpu_count() or 1), help="worker processes (default: CPU count)")
    parser.add_argument("--previous", help="the modelled release to compare with (default: the newest one before the new release)")
    parser.add_argument("--pip-arg", action="append", default=[], metavar="ARG", help="extra argument for every pip call (repeatable)")
    parser.add_argument("--skip-serve-tier", action="store_true", help="do not run the serve tier")
    parser.add_argument("--log", type=user_path, help="also write the log here")
    parser.add_argument("--json", type=user_path, metavar="FILE", help="write the selection tier's disagreements and groups as JSON here")
    args = parser.parse_args(argv)

    if not re.fullmatch(r"\d+\.\d+\.\d+", args.release):
        print(f"new_release: error: release: {args.release!r} is not X.Y.Z", file=sys.stderr)
        return 2
    directory = args.vllm_env or (user_path(os.environ["MOE_ORACLE_VLLM_ENV"]) if os.environ.get("MOE_ORACLE_VLLM_ENV") else None)
    if directory is None:
        print("new_release: error: no differential environment: pass --vllm-env DIR or set MOE_ORACLE_VLLM_ENV (build it with python -m moe_oracle.verify.setup_env --dir DIR)", file=sys.stderr)
        return 2
    directory = directory.resolve()
    from . import setup_env
    from .releases import read_releases, register_release

    listed = read_releases()
    older = [r.version for r in listed if Version(r.version) < Version(args.release)]
    previous = args.previous or (older[-1] if older else None)
    if previous is None:
        print(f"new_release: error: no modelled release older than {args.release} to compare with", file=sys.stderr)
        return 2
    already = any(r.version == args.release for r in listed)
    log = Log()
    started = time.perf_counter()
    log.say(f"moe_oracle release kit: vLLM {args.release} (previous modelled release {previous}); environment {directory}; {datetime.now().isoformat(timespec='seconds')}")
    if already:
        log.say(f"   {args.release} is already listed in rules/engine.yaml: registration is skipped, everything else is redone")
    python = directory / "venv" / "bin" / "python"
    state: dict[str, Any] = {}

    def wheel() -> str:
        wheels = directory / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        found = sorted(wheels.glob(f"vllm-{args.release}-*.whl"))
        if not found:
            proc = _run([str(python), "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", *args.pip_arg, "-d", str(wheels), f"vllm=={args.release}"])
            if proc.returncode != 0:
                raise RuntimeError(f"pip download vllm=={args.release}: {proc.stderr.strip()[-500:]}")
            found = sorted(wheels.glob(f"vllm-{args.release}-*.whl"))
        state["wheel"] = found[-1]
        state["pin"], state["date"] = wheel_facts(found[-1])
        return f"{found[-1].name}; flashinfer-python=={state['pin']}; built {state['date']}"

    def flashinfer() -> str:
        pin = state.get("pin")
        if not pin:
            log.left.append("the wheel pins no flashinfer-python version: FlashInfer-dependent facts are unpinned for this release")
            return "no pin"
        tmp = directory / "wheels" / "fi-probe"
        tmp.mkdir(parents=True, exist_ok=True)
        if _served(python, "flashinfer-python", pin, args.pip_arg, tmp):
            return f"{pin} is served"
        near = _nearest_served(python, "flashinfer-python", pin, args.pip_arg)
        if near is None:
            raise RuntimeError(f"flashinfer-python=={pin} is not served and no other version was found")
        state["substitute"] = (near, f"vLLM {args.release} pins flashinfer-python=={pin}, which the package index does not serve; the differential environment installs the nearest served version {near}. Answers still assume the pin. Check with python -m moe_oracle.verify.flashinfer_substitute --release {args.release}.")
        log.left.append(f"flashinfer-python=={pin} is not served: {near} stands in; run python -m moe_oracle.verify.flashinfer_substitute --release {args.release} (needs the served versions on both sides of the pin in DIR/fi) and record the result in the README")
        return f"{pin} is NOT served; substitute {near}"

    def register() -> str:
        if already:
            return "already listed"
        done = register_release(args.release, date=state.get("date"), flashinfer_pin=state.get("pin"), substitute=state.get("substitute"))
        return "appended to rules/engine.yaml (verified: false)" if done else "already listed"

    def environment() -> str:
        py = setup_env._venv(directory, args.pip_arg)
        setup_env._release(directory, args.release, py, args.pip_arg, keep_wheels=True)
        installed = state["substitute"][0] if state.get("substitute") else state.get("pin")
        if installed:
            setup_env._flashinfer(directory, installed, py, args.pip_arg)
        from .releases import harness_releases

        setup_env._write_manifest(directory, [r for r in harness_releases() if (directory / "src" / r / "vllm").is_dir()])
        return f"tree {directory / 'src' / args.release}; FlashInfer {installed}"

    def facts() -> str:
        tools = REPO / "tools"
        if not (tools / "vllm_cli_facts.py").exists():
            raise FileNotFoundError(f"{tools}/vllm_cli_facts.py: the fact generators live in a source checkout")
        out = FACTS_DIR / f"vllm-{args.release}.yaml"
        proc = _run([str(python), str(tools / "vllm_cli_facts.py"), str(out)], env={**os.environ, "PYTHONPATH": str(directory / "src" / args.release)})
        if proc.returncode != 0:
            raise RuntimeError(f"vllm_cli_facts.py: {proc.stderr.strip()[-800:]}")
        proc = _run([sys.executable, str(tools / "vllm_release_values.py"), str(directory / "src"), str(FACTS_DIR / "vllm-release-values.yaml")])
        if proc.returncode != 0:
            raise RuntimeError(f"vllm_release_values.py stopped (a rule it reads changed shape; read its message and extend the tool): {proc.stderr.strip()[-800:]}")
        return f"{out.name}; vllm-release-values.yaml"

    def selection() -> str:
        from .run import VllmEnv, run_release
        from .space import random_deployments

        env = VllmEnv.from_dir(directory)
        cases = random_deployments(args.cases, args.seed)
        rep = run_release(env, args.release, cases, jobs=args.jobs)
        s = rep.summary()
        state["selection"] = rep
        lines = [f"{s['agree']}/{s['compared']} agree ({100 * s['agreement']:.2f} %), {s['not_driven']} not driven; {s['timings']}"]
        for fam, f in s["by_family"].items():
            lines.append(f"      {fam:12s} {f['agree']:6d}/{f['compared']:<6d} {100 * f['agreement']:6.2f} %")
        unexpected = _unexpected_import_errors(rep.import_errors)
        if rep.import_errors:
            lines.append(f"      modules that failed to import in the worker: {len(rep.import_errors)}, of which {len(unexpected)} not for a missing optional package: {sorted(unexpected)}")
        if unexpected:
            log.left.append(f"the harness could not import {len(unexpected)} vLLM module(s) of {args.release} for a reason other than a missing optional package ({', '.join(sorted(unexpected)[:5])}): extend moe_oracle/verify/vllm_sim.py")
        return "\n".join(lines)

    def serve_tier() -> str:
        if args.skip_serve_tier:
            return "skipped (--skip-serve-tier)"
        test = REPO / "tests" / "differential" / "test_serve_refusals.py"
        if not test.exists():
            raise FileNotFoundError(f"{test}: the serve tier lives in a source checkout")
        proc = _run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "differential", str(test), "-k", args.release],
                    env={**os.environ, "MOE_ORACLE_VLLM_ENV": str(directory)}, cwd=REPO)
        tail = "\n".join(proc.stdout.strip().splitlines()[-12:])
        state["serve_ok"] = proc.returncode == 0
        if proc.returncode != 0:
            log.left.append("the serve tier disagrees: moe_oracle.inputs.serve reads the release's flags from its facts file; read the failures above (a new flag kind or Action needs code)")
        return ("passed" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})") + "\n" + "\n".join("      " + x for x in tail.splitlines())

    def source() -> str:
        d = diff_trees(directory / "src" / previous, directory / "src" / args.release)
        state["diff"] = d
        return f"{len(d.functions)} functions changed/added/removed in {len(d.by_file())} files; {len(d.added_files)} files added, {len(d.removed_files)} removed"

    log.step("1. download the wheel", wheel)
    log.step("2. FlashInfer pin", flashinfer)
    log.step("3. register the release", register)
    log.step("4. build the environment", environment)
    log.step("5. regenerate the facts", facts)
    log.step("6. selection tier (current tables standing in)", selection)
    log.step("7. serve tier", serve_tier)
    log.step("8. per-function source diff", source)

    rep = state.get("selection")
    diff: TreeDiff | None = state.get("diff")
    groups: list[Cause] = []
    if rep is not None:
        records = [dict(r.to_dict(), key=r.case.key()) for r in rep.compared if not r.agree]
        groups = group_disagreements(records)
        log.say()
        log.say(f"== disagreements of the selection tier, grouped by cause: {len(records)} in {len(groups)} groups")
        for g in groups:
            fams = ", ".join(f"{k} {v}" for k, v in g.families.most_common())
            log.say(f"  [{g.count:5d}] {g.kind}: {g.key}")
            log.say(f"          families: {fams}; e.g. {', '.join(g.examples)}")
            if diff is not None:
                for fn in related_functions(g, diff):
                    log.say(f"          changed: {fn}")
        if args.json:
            args.json.write_text(json.dumps({"release": args.release, "summary": rep.summary(), "groups": [
                {"kind": g.kind, "key": g.key, "count": g.count, "families": dict(g.families), "examples": g.examples} for g in groups], "disagreements": records}, indent=1) + "\n")
    changes = _facts_changes(previous, args.release)
    if changes:
        log.say()
        log.say(f"== what the facts files say changed ({previous} -> {args.release})")
        for c in changes:
            log.say(f"  {c}")
    if diff is not None:
        log.say()
        log.say("== per-function diff of the selection, quantization, config and platform modules")
        for line in diff.render().splitlines():
            log.say("  " + line)

    log.left += [
        f"model the changes: the groups above and the changed functions are the map; every fact that changed gets an engine range (>={args.release}) so that the answers for {previous} and older stay as they are",
        "Python-level changes (new vocabulary, new all2all resolution, start-up checks of new/removed variables and flags) need code, not tables",
        f"when both tiers pass their thresholds on {args.release}: set verified: true for it in rules/engine.yaml and update the README's agreement table",
    ]
    total = time.perf_counter() - started
    log.say()
    log.say(f"== time: {total:.0f} s in all; " + "; ".join(f"{name.split('. ', 1)[-1]} {dt:.0f} s ({status.split(':')[0]})" for name, dt, status in log.steps))
    log.say("== left to a person:")
    for item in log.left:
        log.say(f"  - {item}")
    if args.log:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        args.log.write_text("\n".join(log.lines) + "\n", encoding="utf-8")
    return 1 if log.failed else 0


if __name__ == "__main__":
    sys.exit(main())
