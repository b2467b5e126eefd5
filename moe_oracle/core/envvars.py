"""Environment variables exactly as the engine reads each one.

vLLM 0.33.0-0.34.0 ``vllm/envs.py`` parses its variables in three ways that matter for MoE
selection, and the closed list in ``rules/environment.yaml`` names the way per variable
(``parse:``):

* ``int``: ``bool(int(os.getenv(NAME, default)))`` (``VLLM_USE_DEEP_GEMM``,
  ``VLLM_MOE_USE_DEEP_GEMM``, ``VLLM_BATCH_INVARIANT``, ``VLLM_USE_FLASHINFER_MOE_INT4``).
  ``int()`` is Python's: ``" 1 "``, ``"+1"``, ``"01"`` and ``"-1"`` are accepted (``-1`` is
  true); ``"true"``, ``"yes"`` or an empty value raise ``ValueError`` the first time vLLM
  reads the variable, i.e. vLLM fails at start. We answer such a value as bad input.
* ``true_or_1``: ``os.getenv(NAME, default).lower() in ("true", "1")``
  (``VLLM_ROCM_USE_AITER``, ``VLLM_ROCM_USE_AITER_MOE``): any other value, ``"yes"``
  and ``" 1"`` included, is false, silently.
* ``str``: the raw string, where the reading code compares it as written
  (``VLLM_FP8_MOE_REQUANT``: vLLM 0.34.0 validates it ignoring case but Q/fp8.py compares
  ``== "mxfp4"``).
* ``lower``: the string lowercased, where the reading code calls ``.lower()`` first
  (``VLLM_HUMMING_MOE_GEMM_TYPE``, ``VLLM_FP8_MOE_REQUANT_ACT``).

The parse kinds are the same in every modelled release (0.29.0-0.33.0). Variables vLLM removed
(``removed:`` in the same file) are not read at all; vLLM warns ``Unknown vLLM environment
variable detected`` (vllm/platforms/interface.py ``validate_environ``; vllm/envs.py in 0.29.0).
We say so and name the replacement. From vLLM 0.34.0 ``Platform.validate_environ`` refuses
at start a variable of ``envs.removed_environment_variables`` whatever its value ("NAME has
been removed. HINT") and ``VLLM_USE_V2_MODEL_RUNNER`` with any value but ``1``
(:func:`start_refusals`, over the facts the caller reads for its release). Every message names the release the answer is for
(``release``), whose facts it states.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .errors import ConfigError, InputIssue, did_you_mean

__all__ = [
    "LAYER_SHAPING_VARS",
    "PARSE_KINDS",
    "EnvVarSpec",
    "RemovedEnvVar",
    "env_issues",
    "env_notes",
    "parse_env_value",
    "start_refusals",
]

PARSE_KINDS = ("int", "true_or_1", "str", "lower")

LAYER_SHAPING_VARS: Mapping[str, str] = {
    "VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS": (
        "with AITER on ROCm vLLM then fuses a model's shared experts into its routed MoE layer where the model class and its quantization allow it (the layer "
        "holds n_routed + n_shared experts, routes to top-k + n_shared, and every EP rank holds the shared ones; vLLM 0.29.0-0.34.0 P/utils.py "
        "resolve_layer_fused_shared_expert, P/expert_map_manager.py): not modelled, so the answer and the plan's per-rank experts are for the layer "
        "without that fusion (breakit23)"),
}
"""Variables vLLM reads that change how it builds the MoE layer itself, which moe-oracle does not
model: set true (``1`` / ``true``, any case, as vllm/envs.py reads them: :func:`parse_env_value`'s
``true_or_1``), each gets this note instead
of "not read by MoE kernel selection"."""


@dataclass(frozen=True)
class EnvVarSpec:
    """One environment variable the oracle reads (``rules/environment.yaml``).

    Attributes:
        name: variable name.
        type: ``bool`` or ``str`` (the type of the parsed value).
        default: value when unset (upstream default).
        doc: what it does, with the upstream source.
        parse: how the engine turns the raw string into the value, one of :data:`PARSE_KINDS`;
            ``None`` means ``int`` for a bool and ``str`` for a str.
        engine: engine releases the variable exists in (``None``: every release).
        choices: the values the engine accepts for a ``str`` variable, compared ignoring case as
            vLLM's ``env_with_choices`` validates them (empty: any value).
    """

    name: str
    type: str
    default: Any
    doc: str
    parse: str | None = None
    engine: Any = field(default=None, compare=False)
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.parse is None:
            object.__setattr__(self, "parse", "int" if self.type == "bool" else "str")
        if self.parse not in PARSE_KINDS:
            raise ValueError(f"{self.name}: parse must be one of {PARSE_KINDS}, got {self.parse!r}")


@dataclass(frozen=True)
class RemovedEnvVar:
    """A variable an older engine release read and this one does not.

    Attributes:
        name: variable name.
        removed_in: the first release that no longer reads it (``"0.29.0"`` or a commit).
        replacement: what to use instead, as the operator would type it.
        reference: where the fact comes from.
    """

    name: str
    removed_in: str
    replacement: str
    reference: str


def _int_value(raw: str) -> bool | None:
    try:
        return bool(int(raw))
    except ValueError:
        return None


def parse_env_value(spec: EnvVarSpec, raw: str, release: str | None = None) -> Any:
    """Typed value of ``raw`` for ``spec``, as vLLM 0.29.0-0.33.0 ``vllm/envs.py`` computes it
    (``release``: the release an error names; ``None``: "vLLM").

    >>> parse_env_value(EnvVarSpec("VLLM_USE_DEEP_GEMM", "bool", True, ""), " 0 ")
    False
    >>> parse_env_value(EnvVarSpec("VLLM_ROCM_USE_AITER", "bool", False, "", "true_or_1"), "yes")
    False

    Raises:
        ConfigError: an ``int`` variable whose value ``int()`` refuses (vLLM fails at start).
    """
    if spec.parse == "int":
        value = _int_value(raw)
        if value is None:
            raise ConfigError([_int_issue(spec, raw, f"--env {spec.name}", release)], headline=f"bad --env {spec.name}")
        return value
    if spec.parse == "true_or_1":
        return raw.lower() in ("true", "1")
    if spec.parse == "lower":
        return raw.lower()
    return raw


def _vllm(release: str | None) -> str:
    return f"vLLM {release}" if release else "vLLM"


def _int_issue(spec: EnvVarSpec, raw: str, path: str, release: str | None) -> InputIssue:
    return InputIssue(
        path,
        f"{_vllm(release)} reads {spec.name} with bool(int(...)) (vllm/envs.py), so {raw!r} makes vLLM raise ValueError at start; use 1 or 0",
        raw,
        ["0", "1"],
        keyword="env_value",
    )


def env_issues(env: Iterable[tuple[str, str]], specs: Iterable[EnvVarSpec], path: str = "--env", file: str | None = None, *, release: str | None) -> list[InputIssue]:
    """Every value the engine would refuse at start (``int`` variables that are not integers).

    ``path``: a flag (``--env``: issues name ``--env VAR``) or a JSON path
    (``$.environment.env``: issues name ``$.environment.env.VAR``); ``file``: the file it is in;
    ``release``: the engine release the answer is for (the messages name it).
    """
    by_name = {s.name: s for s in specs}
    issues = []
    for name, raw in env:
        spec = by_name.get(name)
        where = f"{path}.{name}" if path.startswith("$") else f"{path} {name}"
        if spec is not None and spec.parse == "int" and _int_value(raw) is None:
            issue = _int_issue(spec, raw, where, release)
            issues.append(InputIssue(issue.path, issue.message, issue.value, issue.allowed, file, keyword=issue.keyword))
        elif spec is not None and spec.choices and raw.lower() not in (c.lower() for c in spec.choices):
            issues.append(InputIssue(where, f"{_vllm(release)} raises ValueError when it reads {name} (vllm/envs.py env_with_choices: \"Invalid value {raw!r} for {name}\")",
                                     raw, list(spec.choices), file, keyword="env_value"))
    return issues


def start_refusals(
    env: Iterable[tuple[str, str]],
    removed: Mapping[str, str],
    value_rules: Mapping[str, Mapping[str, str]],
    *,
    origin: Mapping[str, str] | None = None,
    file: str | None = None,
    release: str | None,
) -> tuple[list[InputIssue], list[str]]:
    """(issues, notes): the variables the engine release refuses at start, and those a value
    rule accepts with only a warning.

    vLLM 0.34.0 ``Platform.validate_environ`` (vllm/platforms/interface.py, called from
    ``EngineArgs.create_engine_config`` whatever ``--fail-on-environ-validation`` says) walks the
    process's variables: a name with a value rule (``VLLM_USE_V2_MODEL_RUNNER``) raises its
    ``refusal`` unless the value is ``accepted`` (then it only warns); a name in
    ``removed_environment_variables`` (vllm/envs.py) raises ``"{name} has been removed. {hint}"``
    whatever its value. Earlier releases have neither (both mappings empty).

    ``removed``: name -> hint; ``value_rules``: name -> ``{"accepted", "refusal"}`` with
    ``refusal`` a template over ``value`` (``moe_oracle.inputs.release_facts.env_start_rules``);
    ``origin``: name -> where it was given (``--env``, ``--serve``, ``--environment F:``,
    ``$.environment.env``; default ``--env``); ``release``: the release the messages name.

    >>> issues, notes = start_refusals([("VLLM_MARLIN_INPUT_DTYPE", "fp8")], {"VLLM_MARLIN_INPUT_DTYPE": "Use humming."}, {}, release="0.34.0")
    >>> issues[0].path, issues[0].message
    ('--env VLLM_MARLIN_INPUT_DTYPE', 'vLLM 0.34.0 refuses it at start (Platform.validate_environ): VLLM_MARLIN_INPUT_DTYPE has been removed. Use humming.')
    """
    origin = origin or {}
    issues: list[InputIssue] = []
    notes: list[str] = []
    for name, value in env:
        where = origin.get(name, "--env")
        path = f"{where}.{name}" if where.startswith("$") else f"{where} {name}"
        rule = value_rules.get(name)
        if rule is not None:
            if value != rule["accepted"]:
                message = rule["refusal"].format(value=value)
                issues.append(InputIssue(path, f"{_vllm(release)} refuses it at start (Platform.validate_environ): {message}", value, [rule["accepted"]], file, keyword="env_value"))
            else:
                notes.append(f"{name}={value}: {_vllm(release)} accepts this value only with a warning at start and does not read it otherwise (Platform.validate_environ)")
            continue
        hint = removed.get(name)
        if hint is not None:
            issues.append(InputIssue(path, f"{_vllm(release)} refuses it at start (Platform.validate_environ): {name} has been removed. {hint}", value, None, file, keyword="env_value"))
    return issues, notes


def env_notes(
    env: Iterable[tuple[str, str]],
    specs: Iterable[EnvVarSpec],
    removed: Iterable[RemovedEnvVar] = (),
    engine_names: Iterable[str] | None = None,
    *,
    release: str | None,
) -> tuple[str, ...]:
    """What the user may not expect about the declared variables, one sentence each.

    * a ``true_or_1`` variable whose value is neither ``1`` nor ``true`` (any case) is false;
    * a removed variable is not read; its replacement is named;
    * a variable the engine knows but selection does not read has no effect;
    * a ``VLLM_*`` name the engine does not know is a likely typo (with a did-you-mean).

    ``engine_names``: every variable the engine release declares (``None``: not known, and
    the last two notes are not given); a removed variable that ``engine_names`` still lists
    is read by that (older) release, so it gets the "not read by selection" note instead.
    ``release``: the engine release the answer is for; the notes name it (``None``: "vLLM").
    """
    vllm = _vllm(release)
    by_name = {s.name: s for s in specs}
    gone = {r.name: r for r in removed}
    known = frozenset(engine_names) if engine_names is not None else None
    notes = []
    for name, raw in env:
        spec = by_name.get(name)
        if spec is not None:
            if spec.parse == "true_or_1" and raw.lower() not in ("true", "1", "false", "0"):
                notes.append(f"{name}={raw!r} is read as false: {vllm} turns it on only for 1 or true (any case), vllm/envs.py")
            elif spec.parse == "int" and raw.strip() not in ("0", "1") and _int_value(raw) is not None:
                notes.append(f"{name}={raw!r} is read as {bool(int(raw))} ({vllm} reads it with bool(int(...)))")
            elif spec.parse == "str" and spec.choices and raw not in spec.choices and raw.lower() in (c.lower() for c in spec.choices):
                meant = next(c for c in spec.choices if c.lower() == raw.lower())
                notes.append(f"{name}={raw!r} is not read as {meant!r}: {vllm} accepts any case but compares the value as written (vllm/envs.py env_with_choices returns it unchanged)")
            continue
        if name in gone and not (known is not None and name in known):
            r = gone[name]
            notes.append(f"{name} has no effect: the engine stopped reading it in {r.removed_in} ({vllm} only warns 'Unknown vLLM environment variable'); use {r.replacement}")
            continue
        if known is None:
            continue
        if name in known and name in LAYER_SHAPING_VARS and parse_env_value(EnvVarSpec(name, "bool", False, "", "true_or_1"), raw):
            notes.append(f"{name}={raw!r}: {LAYER_SHAPING_VARS[name]}")
        elif name in known:
            notes.append(f"{name} is read by {vllm} but not by MoE kernel selection: ignored")
        elif name.startswith("VLLM_"):
            guess = did_you_mean(name, sorted(set(by_name) | known))
            notes.append(f"{name} is not a {vllm} variable (vLLM warns and ignores it)" + (f"; did you mean {guess}?" if guess else ""))
        else:
            notes.append(f"{name} is not read by {vllm}: ignored")
    return tuple(notes)


def removed_from_tables(docs: Iterable[Mapping[str, Any]]) -> tuple[RemovedEnvVar, ...]:
    """:class:`RemovedEnvVar` records of ``removed:`` entries (already schema-valid)."""
    return tuple(RemovedEnvVar(d["name"], str(d["removed_in"]), d["replacement"], d["reference"]) for d in docs)
