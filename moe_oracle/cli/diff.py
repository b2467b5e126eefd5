"""``moe-oracle diff``: what changes in the kernel choice between two environments."""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from typing import Any, Callable, Iterable

from ..core.errors import ConfigError, InputIssue
from ..inputs.operator_inputs import OperatorInputs
from ..inputs.paths import SYMLINK_LOOP, not_regular_file, user_path
from .common import operator_inputs, print_json, release_warnings

__all__ = ["add_parser", "run", "parse_side", "side_notes"]

_EPILOG = """\
A side (--from / --to) is one of:
  NAME==VERSION[,NAME==VERSION...]   packages declared beside --package (vllm==0.31.0); a
                                     package both declare must have one version there
  gpu:NAME                           another device from the hardware catalog (gpu:B200)
  FILE                               an environment file (pip freeze, pip list --format=json,
                                     uv pip list or vllm collect-env output), or <(pip freeze);
                                     --package declarations override its versions
Everything else (model, deployment, --package, --env ...) is shared by both sides. A gpu:NAME
side facing packages or a FILE changes only the device: it keeps that side's packages or file
(a pipe such as <(pip freeze) can be read once, so save it to a file for this). A device
given as --gpu/--platform or a gpu:NAME side wins over an environment file's GPU (collect-env),
with a note per side naming the GPU not used. A gpu:NAME side replaces --gpu/--platform/--sm/--arch
on its side: with two gpu: sides they would have no effect, and are refused.

examples:
  moe-oracle diff --model deepseek-r1 --gpu B200 --tp 8 --from vllm==0.31.0 --to vllm==0.33.0
  moe-oracle diff --model gpt-oss-120b --tp 4 --from gpu:H200 --to gpu:B200 --json

exit codes: 0 it ran (whether or not anything changed), 2 bad input."""


def add_parser(sub: Any, add_input_args: Callable[[argparse.ArgumentParser], None], *, arguments: bool = True) -> None:
    """Register ``diff`` on the CLI's subparsers; its arguments only when ``arguments`` (see
    :func:`moe_oracle.cli.build_parser`)."""
    p = sub.add_parser(
        "diff",
        help="what changes in the kernel choice between two environments (releases, GPUs, env files)",
        description="Select the same model and deployment under two environments and, for each layer group whose kernel changes, print the old and new kernel and the facts (rule ids, engine ranges, references) that changed it.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if not arguments:
        return
    p.add_argument("--from", dest="side_from", required=True, metavar="SIDE", help="the environment you run now (see below)")
    p.add_argument("--to", dest="side_to", required=True, metavar="SIDE", help="the environment you consider (see below)")
    add_input_args(p)


_VERSION_OPERATOR = re.compile(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*(===|==|~=|!=|<=|>=|<|>)")
"""A package name (extras allowed) followed by a PEP 440 version operator."""


def _packages(text: str) -> list[str]:
    """The requirements of a side, split at the commas that start another package (a comma
    inside one requirement's version range stays: ``vllm>=0.33,<0.34``).

    >>> _packages("vllm==0.33.0, flashinfer-python==0.7.2"), _packages("vllm>=0.33,<0.34")
    (['vllm==0.33.0', 'flashinfer-python==0.7.2'], ['vllm>=0.33,<0.34'])
    """
    return [p.strip() for p in re.split(r",(?=\s*[A-Za-z0-9])", text) if p.strip()]


def parse_side(text: str, flag: str) -> dict[str, Any]:
    """``{"packages": [...]}``, ``{"gpu": NAME}`` or ``{"environment": PATH}`` for one side.

    Raises:
        ConfigError: none of the three forms.
    """
    text = text.strip()
    if text.lower().startswith("gpu:") or text.lower().startswith("gpu="):
        name = text[4:].strip()
        if name:
            return {"gpu": name}
    elif "==" in text or " @ " in text:
        return {"packages": _packages(text)}
    elif text and _readable_file(text):
        return {"environment": text}
    elif _VERSION_OPERATOR.search(text):
        # A version range (vllm>=0.33.0): packages, which the declaration refuses naming the
        # modelled releases the range admits (core.packages.parse_requirement).
        return {"packages": _packages(text)}
    raise ConfigError(
        [InputIssue(flag, "expected NAME==VERSION[,NAME==VERSION] (vllm==0.31.0), gpu:NAME (gpu:B200), or an existing environment file (pip-freeze.txt)", text, None, suggest=_side_suggestion(text))],
        headline=f"bad {flag}",
    )


def _side_suggestion(text: str) -> str | None:
    """What a side that is none of the three forms most likely meant: ``vllm=0.33.0`` is
    ``vllm==0.33.0``, ``B200`` is ``gpu:B200``; else nothing (the forms' examples are no
    spelling of it: ``vllm>=0.33.0`` once got ``did you mean 'vllm==0.31.0'?``).

    >>> _side_suggestion("vllm=0.33.0"), _side_suggestion("b200"), _side_suggestion("vllm")
    ('vllm==0.33.0', 'gpu:B200', None)
    """
    from ..inputs.hardware import GPU_CATALOG

    pin = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=\s*([0-9][^\s,=]*)\s*", text)
    if pin:
        return f"{pin.group(1)}=={pin.group(2)}"
    gpu = {name.lower(): name for name in GPU_CATALOG}.get(text.strip().lower())
    return f"gpu:{gpu}" if gpu else None


def _readable_file(text: str) -> bool:
    """Whether ``text`` names something --environment reads: an existing path that is not a
    directory (a file, or a pipe such as bash's ``<(pip freeze)``), or a symbolic link loop
    (which the read refuses as such, not as a malformed side)."""
    try:
        path = user_path(text)
        return (path.exists() and not path.is_dir()) or not_regular_file(path) == SYMLINK_LOOP
    except (OSError, ValueError):  # a name too long, a NUL
        return False


def _with_kept_environment(specs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The sides with a lone ``gpu:NAME`` side keeping the other side's packages or environment
    file (``given_by``: the other side's flag, which its messages name), so that side changes only
    the device: ``--from freeze.txt --to gpu:B200`` answered the B200 side for the newest
    modelled release, not the file's.

    Raises:
        ConfigError: the kept file is a pipe (``<(pip freeze)``), which can be read only once.

    >>> _with_kept_environment([("vllm==0.31.0", {"packages": ["vllm==0.31.0"], "flag": "--from"}), ("gpu:B200", {"gpu": "B200", "flag": "--to"})])[1]
    ('gpu:B200', {'gpu': 'B200', 'flag': '--to', 'packages': ['vllm==0.31.0'], 'given_by': '--from'})
    """
    gpu = [i for i, (_, spec) in enumerate(specs) if "gpu" in spec]
    if len(gpu) != 1:
        return specs
    (text, spec), (other_text, other) = specs[gpu[0]], specs[1 - gpu[0]]
    kept = {key: other[key] for key in ("packages", "environment") if key in other}
    if "environment" in kept and not_regular_file(user_path(kept["environment"])):
        raise ConfigError([InputIssue(spec["flag"], f"a gpu: side keeps the other side's environment file ({other['flag']} {other_text}), which is not a regular file and can be read only once; save it to a file (pip freeze > freeze.txt) and give that", text, None)], headline=f"bad {spec['flag']}")
    out = list(specs)
    out[gpu[0]] = (text, {**spec, **kept, "given_by": other["flag"]})
    return out


def _side_inputs(given: OperatorInputs, side: dict[str, Any], catalog: Any) -> OperatorInputs:
    """The inputs of one side: ``side`` is :func:`parse_side`'s record plus the ``flag`` it was
    given by (and ``given_by``, the flag that gave packages or a file a gpu: side keeps)."""
    changes: dict[str, Any] = {}
    by = side.get("given_by", side["flag"])
    if "packages" in side:
        from ..core.packages import parse_requirement, unique_specs

        # One package at two versions is refused as for --package, naming where each came from
        # (the side's flag, not --package alone).
        known = catalog.engine.known_versions if catalog.engine is not None else None  # a range names the modelled releases it admits
        unique_specs([(parse_requirement(p, known=known), "--package") for p in given.package] + [(parse_requirement(p, by, known), by) for p in side["packages"]], by)
        changes["package"] = given.package + tuple(side["packages"])
        # Messages name the side's flag for its packages, not --package (declare_environment).
        changes["package_given_by"] = tuple(flag for _, flag in given.packages_given()) + (by,) * len(side["packages"])
    if "gpu" in side:
        # "gpu:B200", not "--to gpu:B200": a note of one side only is headed by its flag (side_notes).
        changes.update(gpu=side["gpu"], platform=None, sm=None, arch=None, gpu_given_as=f"gpu:{side['gpu']}")
    if "environment" in side:
        if given.environment:
            raise ConfigError([InputIssue("--environment", "a side given as an environment file replaces --environment; give one of them", given.environment, None)], headline="bad --environment")
        changes["environment"] = side["environment"]
    return replace(given, **changes)


def _side_built(spec: dict[str, Any], build: Callable[[], Any]) -> Any:
    """``build()`` for one side; a refusal of the side's environment file, which the inputs
    layer heads ``bad --environment`` (the flag that usually names a file), is charged to the
    side's flag (``--from``/``--to``) that gave it."""
    try:
        return build()
    except ConfigError as exc:
        if "environment" not in spec or exc.headline != "bad --environment":
            raise
        flag = spec.get("given_by", spec["flag"])
        raise ConfigError([replace(i, path=flag) if i.path == "--environment" else i for i in exc.issues], headline=f"bad {flag}") from None


def _refuse_unused_device(given: OperatorInputs, specs: list[tuple[str, dict[str, Any]]]) -> None:
    """Refuse --gpu/--platform/--sm/--arch when both sides are ``gpu:NAME``: each side's GPU
    replaces them, so they would have no effect (a setting with no effect is an error, as
    ``run --gpu`` is).

    Raises:
        ConfigError: naming the flags given and both sides.
    """
    if not all("gpu" in spec for _, spec in specs):
        return
    flags = [(flag, value) for flag, value in (("--gpu", given.gpu), ("--platform", given.platform), ("--sm", given.sm), ("--arch", given.arch)) if value is not None]
    if not flags:
        return
    sides = " and ".join(f"{spec['flag']} {text}" for text, spec in specs)
    issues = [InputIssue(flag, f"has no effect: both sides name their device ({sides}), and each side's GPU replaces it; drop {flag}, or give one side as packages or an environment file to compare on this device", value, None) for flag, value in flags]
    raise ConfigError(issues, headline=f"bad {flags[0][0]}" if len(flags) == 1 else "unused device flags")


def _plan_groups(given: OperatorInputs, catalog: Any, sides: list[tuple[str, dict[str, Any]]]) -> tuple[list[tuple[str, Any, Any]], list[str]]:
    """Per MoE layer group of the model, its config and environment on each side (``plan`` per side)."""
    from ..explain.diff import Side
    from .plan import plan_from_inputs

    inputs = [(text, spec, _side_inputs(given, spec, catalog)) for text, spec in sides]
    plans = [(text, _side_built(spec, lambda side=side: plan_from_inputs(side, catalog))) for text, spec, side in inputs]
    (label_b, before), (label_a, after) = plans
    by_layers = {tuple(layer.spec.index for layer in g.layers): g for g in after.moe_groups()}
    groups = []
    own: list[str] = []
    for g in before.moe_groups():
        other = by_layers.get(tuple(layer.spec.index for layer in g.layers))
        if g.decision is None or other is None or other.decision is None:
            own.append(f"{g.label()}: grouped differently on the two sides; compare them with explain")
            continue
        groups.append((g.label(), Side(label_b, g.decision.config, before.environment), Side(label_a, other.decision.config, after.environment)))
    return groups, side_notes(before.notes, after.notes, own)


def side_notes(before: Iterable[str], after: Iterable[str], shared: Iterable[str] = ()) -> list[str]:
    """The notes of both sides, each once: a note both sides give, and ``shared`` (the diff's
    own), as given; a note of one side only headed by that side's flag, so two notes that differ
    only in the release they name say which side each is for (a side's note names its side only
    there: its device is ``gpu:B200``, see :func:`_side_inputs`). Shared notes first, then
    ``--from``'s, then ``--to``'s, each sorted.

    >>> side_notes(["a", "MTP (vLLM 0.29.0)"], ["a", "MTP (vLLM 0.33.0)"])
    ['a', '--from: MTP (vLLM 0.29.0)', '--to: MTP (vLLM 0.33.0)']
    """
    b, a = set(before), set(after)
    return sorted((b & a) | set(shared)) + [f"--from: {n}" for n in sorted(b - a)] + [f"--to: {n}" for n in sorted(a - b)]


def run(args: argparse.Namespace, catalog: Any) -> int:
    """Run ``diff``; returns 0 (it ran, whether or not anything changed)."""
    from ..explain.diff import Side, diff_groups
    from ..inputs.deployment import build_deployment

    given = operator_inputs(args)

    specs = [(text, {**parse_side(text, flag), "flag": flag}) for flag, text in (("--from", args.side_from), ("--to", args.side_to))]
    _refuse_unused_device(given, specs)
    specs = _with_kept_environment(specs)
    if (args.model or args.serve) and not args.config and not args.quant:
        # A whole model: every MoE layer group of its plan, paired by layer indices.
        groups, notes = _plan_groups(given, catalog, specs)
    else:
        sides = []
        for text, spec in specs:
            side = _side_inputs(given, spec, catalog)
            deployment = _side_built(spec, lambda: build_deployment(side, catalog))
            sides.append((Side(text, deployment.config, deployment.environment), deployment.notes))
        (before, notes_b), (after, notes_a) = sides
        groups, notes = [("MoE layers", before, after)], side_notes(notes_b, notes_a)
    result = diff_groups(catalog, groups, policy=args.policy)
    sides_env = [(side.label, side.environment) for _, before, after in groups[:1] for side in (before, after)]
    warnings = release_warnings(catalog, sides_env)
    if args.json:
        print_json({**result.to_dict(), "notes": notes, "warnings": warnings})
    else:
        for warning in warnings:
            print(f"WARNING: {warning}")
        for note in notes:
            print(f"Note: {note}")
        print(result.render_text())
    return 0
