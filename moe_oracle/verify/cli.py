"""``moe-oracle verify``: compare our answers with real vLLM releases' selection code."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..inputs.paths import refuse_special_file, user_path  # the path flags expand a leading ~ as every moe-oracle path does

# The harness itself (cases, run, space: ~12 ms of imports) is imported where it runs, not when
# every moe-oracle command registers `verify` on its parser.
if TYPE_CHECKING:
    from .cases import Deployment
    from .run import Report, VllmEnv

__all__ = ["add_parser", "run"]

_EPILOG = """\
The vLLM environment (--vllm-env DIR, or $MOE_ORACLE_VLLM_ENV) is made once with
  python -m moe_oracle.verify.setup_env --dir DIR        (about 2 GB; CPU only)
It holds an interpreter with CPU torch, and each release's source tree.

examples:
  moe-oracle verify --vllm-env ~/.cache/moe-oracle/vllm --release 0.33.0 --cases 20000
  moe-oracle verify --all-releases --cases 5000 --family fp8 --out /tmp/disagreements
  moe-oracle verify --replay /tmp/disagreements/0.33.0-fp8-0a1b2c3d4e5f.json

exit codes: 0 every disagreement is a reviewed divergence (and agreement >= --min-agreement),
1 otherwise, 2 bad input or no vLLM environment."""


def _user_file(text: str) -> "Path":
    """argparse type of a file flag (``--replay``, ``--divergences``): :func:`user_path`, and a
    path that exists but is no regular file (a directory, a pipe, a device) refused as every
    moe-oracle file flag refuses it (:func:`~moe_oracle.inputs.paths.refuse_special_file`)."""
    from ..core.errors import ConfigError

    path = user_path(text)
    try:
        refuse_special_file(path, "FILE", text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.issues[0].message) from None
    return path


def add_parser(sub: Any, *, arguments: bool = True) -> None:
    """Register ``verify`` on the CLI's subparsers; its arguments only when ``arguments`` (see
    :func:`moe_oracle.cli.build_parser`)."""
    p = sub.add_parser(
        "verify",
        help="compare our answers with real vLLM releases (differential testing)",
        description="Run vLLM's own selection code (its quantization front ends, oracles and experts classes) on simulated machines and compare with our tables. Every disagreement not listed in the reviewed divergences is reported.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if not arguments:
        return
    from .run import RELEASES
    from .frontends import FRONT_ENDS
    from .space import FAMILY_SCHEMES

    p.add_argument("--vllm-env", type=user_path, metavar="DIR", help="the vLLM environment (default: $MOE_ORACLE_VLLM_ENV)")
    p.add_argument("--release", action="append", choices=RELEASES, metavar="X.Y.Z", help=f"vLLM release to compare with (repeatable; one of {', '.join(RELEASES)}; default {RELEASES[-1]})")
    p.add_argument("--all-releases", action="store_true", help="every release the tables model")
    p.add_argument("--cases", type=_count(0), default=2000, metavar="N", help="random deployments to sample (default 2000; 0 with --exhaustive: only its product)")
    p.add_argument("--seed", type=int, default=0, help="sampler seed (default 0)")
    p.add_argument("--family", action="append", choices=sorted(FAMILY_SCHEMES), metavar="F", help=f"restrict to quant families (repeatable): {', '.join(sorted(FAMILY_SCHEMES))}")
    p.add_argument("--front-end", action="append", choices=FRONT_ENDS, metavar="NAME", help=f"restrict to deployments driven through these quantization front ends (repeatable): {', '.join(FRONT_ENDS)}")
    p.add_argument("--exhaustive", action="store_true", help="also the product of the discrete axes for three real shapes")
    p.add_argument("--replay", type=_user_file, action="append", metavar="FILE", help="replay disagreement files instead of sampling")
    p.add_argument("--out", type=user_path, metavar="DIR", help="write each unexplained disagreement as a JSON file here")
    p.add_argument("--jobs", type=_count(1), default=max(1, os.cpu_count() or 1), metavar="N", help="worker processes per release (default: CPU count)")
    p.add_argument("--min-agreement", type=_fraction, default=0.0, metavar="X", help="also fail when a release agrees on less than this fraction, from 0 to 1 (e.g. 0.995)")
    p.add_argument("--divergences", type=_user_file, metavar="FILE", help="reviewed divergences (default: the shipped list)")
    p.add_argument("--tables", type=user_path, action="append", metavar="DIR", help="table directories (default: shipped)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _count(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``minimum`` (argparse reports the flag and the value)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    return parse


def _fraction(text: str) -> float:
    """An argparse ``type``: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 1, got {text}")
    return value


def _environment(args: argparse.Namespace, releases: Sequence[str]) -> "VllmEnv":
    """The vLLM environment the flag or ``$MOE_ORACLE_VLLM_ENV`` names, with a tree for each of
    ``releases``.

    Raises:
        ConfigError: none named, or it lacks the interpreter or a release's tree; the issue names
            where the directory came from and the ``setup_env`` command that repairs it.
    """
    from ..core.errors import ConfigError, InputIssue
    from .run import VllmEnv, setup_command

    given = os.environ.get("MOE_ORACLE_VLLM_ENV") if args.vllm_env is None else None
    where = "--vllm-env" if args.vllm_env is not None or not given else "MOE_ORACLE_VLLM_ENV"
    directory = args.vllm_env if args.vllm_env is not None else (user_path(given) if given else None)
    if directory is None:
        raise ConfigError([InputIssue("--vllm-env", f"no vLLM environment: pass --vllm-env DIR or set MOE_ORACLE_VLLM_ENV; make one with `{setup_command(Path('DIR'))}` (see --help)")])
    try:
        return VllmEnv.from_dir(directory, releases)
    except FileNotFoundError as exc:
        raise ConfigError([InputIssue(where, str(exc), str(directory))], headline=f"bad {where}") from None


def _cases(args: argparse.Namespace) -> list[Deployment]:
    """The deployments to compare: the replayed files, else the sample (and the exhaustive product).

    Raises:
        ConfigError: a ``--replay`` file that cannot be read or is not a deployment record.
    """
    from ..core.errors import ConfigError, InputIssue
    from .cases import Deployment
    from .space import exhaustive_deployments, random_deployments

    if args.replay:
        out = []
        for path in args.replay:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
                out.append(Deployment.from_dict(doc.get("case", doc)))
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                raise ConfigError([InputIssue("--replay", f"not a disagreement or deployment file: {exc}", str(path))]) from None
        return out
    try:
        cases = random_deployments(args.cases, args.seed, args.family, args.front_end) if args.cases else []
    except ValueError as exc:
        raise ConfigError([InputIssue("--front-end", str(exc), args.front_end)]) from None
    if args.exhaustive:
        cases += list(exhaustive_deployments(families=args.family, front_ends=args.front_end))
    return cases


def _print_text(report: Report, replay: bool) -> None:
    for rel in report.releases:
        s = rel.summary()
        print(f"vLLM {rel.release}: {s['agree']}/{s['compared']} agree ({100 * s['agreement']:.2f} %); {sum(s['reviewed_divergences'].values())} reviewed divergences, {s['unexplained']} unexplained; {s['not_driven']} not driven ({s['not_driven_at_start']} refused at start-up by a part the tier does not build)")
        for fam, f in s["by_family"].items():
            print(f"  {fam:12s} {f['agree']:6d}/{f['compared']:<6d} {100 * f['agreement']:6.2f} %")
        pf = s["prepare_finalize"]
        print(f"  prepare/finalize: {pf['same']}/{pf['compared']} same class ({100 * pf['agreement']:.2f} %) of {pf['both_select']} both selecting "
              f"({pf['no_method']} without a quant method to ask with, {sum(pf['not_asked'].values())} not asked {pf['not_asked']}); full comparison {100 * s['full_agreement']:.2f} %")
        for fam, f in pf["by_family"].items():
            print(f"    P/F {fam:12s} {f['agree']:6d}/{f['compared']:<6d} {100 * f['agreement']:6.2f} %")
        for div, n in pf["reviewed_divergences"].items():
            print(f"    P/F reviewed divergence ({n}): {div}")
        for pair, n in list(pf["pairs"].items())[:8]:
            print(f"    P/F differs ({n}): vLLM {pair.replace('|', ' | ours ')}")
        t = s["timings"]
        print(f"  time: {t.get('wall_s')} s wall (import {t.get('import_s')} s, vLLM {t.get('vllm_s')} s, ours {t.get('ours_s')} s, summed over workers)")
        shown = rel.unexplained if replay else rel.unexplained[:10]
        for rec in shown:
            v, o = rec.vllm, rec.ours
            pf = f" (P/F vLLM {v.prepare_finalize} | ours {o.prepare_finalize})" if not v.same_pf(o) else ""
            print(f"  - {rec.case.key()} {rec.case.family}/{rec.case.front_end} {rec.case.platform} {rec.case.capability or rec.case.arch or ''}: vLLM {v.status} {v.experts or v.detail[:80]} | ours {o.status} {o.experts or o.detail[:80]}{pf}")
            if replay:
                print(json.dumps(rec.case.to_dict()))
                for w in rec.why:
                    print(f"      ours on {w['kernel']} (rank {w['rank']}, {w['status']}): " + ("; ".join(w["failures"]) or "no failure"))
        if len(rel.unexplained) > len(shown):
            print(f"  ... {len(rel.unexplained) - len(shown)} more (--out DIR writes each as a file)")


def run(args: argparse.Namespace) -> int:
    """Run ``verify``; returns the exit code.

    The arguments are checked first (argparse's types, then what no type can say: nothing to
    compare), then the environment, then the cases are built.

    Raises:
        ConfigError: bad arguments, environment or replay files (``main`` prints it, as the
            ``{error, message, issues}`` record with ``--json``, and exits 2).
    """
    from ..core.errors import ConfigError, InputIssue
    from .run import RELEASES, verify, write_disagreements

    if args.cases == 0 and not args.exhaustive and not args.replay:
        raise ConfigError([InputIssue("--cases", "0 random deployments and no --exhaustive or --replay: nothing to compare", 0, {"minimum": 1})])
    releases = list(RELEASES) if args.all_releases else (args.release or [RELEASES[-1]])
    env = _environment(args, releases)
    cases = _cases(args)
    progress = None if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    report = verify(env, releases, cases, divergences_path=args.divergences, jobs=args.jobs, tables=args.tables, progress=progress)
    if args.out:
        write_disagreements(report, args.out)
    if args.json:
        print(json.dumps(report.summary(), indent=1))
    else:
        _print_text(report, bool(args.replay))
    failed = any(r.unexplained or r.agreement < args.min_agreement for r in report.releases)
    return 1 if failed else 0
