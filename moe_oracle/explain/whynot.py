""""Why not X?": the smallest, least disruptive changes to the config or environment that make
backend X (or, for a dead end, any kernel) eligible.

A best-first search over *input* edits. Each failing check of the target's candidates
proposes edits that would satisfy it (from its allowed set); an edit is applied to the
config or environment, the whole selection is re-evaluated, and the search returns up to
``n`` edit sets that leave one targeted candidate with no failure, cheapest first, none a
superset of a cheaper one. The cost of an edit is how disruptive it is for an operator
(:data:`COSTS`): a flag or environment variable (``--ep``, ``--env``, ``--moe-backend``) 1, a
package 2, a redeployment of the same GPUs (other TP/DP split, DP+EP with an all2all) 3, a
different GPU count 4, the checkpoint's numerics (quantization, dtype) 4, other hardware 5,
the model itself 8. Edit sets of equal cost are ties and are all shown. ``keep`` names input
categories (:data:`CATEGORIES`) that must not change; the model is kept unless asked.

Because every answer is re-evaluated before it is returned, applying an alternative's
``config`` and ``environment`` always makes the target eligible.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace
from itertools import chain, count
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..core.checks import Check
from ..core.config import Device, MoEConfig, ParallelConfig
from ..core.decision import Decision
from ..core.engine import evaluate
from ..core.requests import request_name, resolve_request
from ..core.errors import ConfigError, InputIssue
from ..core.environment import ABSENT, Environment
from ..inputs.hardware import GPU_CATALOG
from ..core.quant import SCHEMES
from ..core.oracle import Oracle, parse_policy
from ..core.render import alternative_lines, refusing_checks
from ..core.vocab import Activation, All2AllBackend, DType, Policy, RoutingMethod

if TYPE_CHECKING:
    from ..core.catalog import Catalog
    from ..core.decision import Row

__all__ = ["CATEGORIES", "COSTS", "Alternative", "Edit", "SearchResult", "WhyNot", "fixes", "repair", "search_eligible", "why_not"]

MAX_EXPANSIONS = 400
MAX_EDITS = 4

# How disruptive a change is for an operator; the search minimizes the sum.
COSTS = {"flag": 1, "package": 2, "redeploy": 3, "resize": 4, "numerics": 4, "hardware": 5, "model": 8}

# --keep categories -> how to recognise their edit targets.
CATEGORIES = ("device", "parallel", "quant", "packages", "env", "flags", "model")
DEFAULT_KEEP = frozenset({"model"})


def category(target: str) -> str:
    """The --keep category of an edit target.

    >>> category("parallel.use_ep"), category("packages.deep-gemm"), category("activation")
    ('parallel', 'packages', 'model')
    """
    if target == "device":
        return "device"
    if target.startswith("parallel") or target == "enable_eplb":
        return "parallel"
    if target in ("quant", "quant_method", "in_dtype"):
        return "quant"
    if target.startswith("packages."):
        return "packages"
    if target.startswith("env.") or target == "batch_invariant":
        return "env"
    if target in ("moe_backend", "lora", "max_num_tokens"):
        return "flags"
    return "model"


@dataclass(frozen=True)
class Edit:
    """One change to an input: ``target`` is a MoEConfig path (``parallel.tp_size``),
    ``device``, ``packages.<name>`` or ``env.<VAR>``."""

    target: str
    before: Any
    after: Any
    cost: int

    def describe(self) -> str:
        return f"{self.target}: {_text(self.before)} -> {_text(self.after)}"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "before": _text(self.before), "after": _text(self.after), "cost": self.cost, "flag": self.flag(), "change": self.change()}

    def flag(self) -> str | None:
        """The change as the operator types it on the moe-oracle command line (``--ep``, ``--no-ep``,
        ``--tp 4``, ``--gpu B200``, ``--env VAR=0``); None for a change no flag makes (another
        checkpoint or model: :meth:`change`)."""
        t, after = self.target, self.after
        if t == "device":
            return f"--gpu {_text(after)}"
        if t == "parallel.use_ep":
            return "--ep" if after else "--no-ep"
        if t == "parallel.tp_size":
            return f"--tp {after}"
        if t == "parallel.dp_size":
            return f"--dp {after}"
        if t == "parallel.all2all_backend":
            return f"--all2all {_text(after)}"
        if t == "parallel":
            return _preset_flag(str(after), str(self.before))
        if t == "enable_eplb":
            return "--eplb" if after else "--no-eplb"
        if t.startswith("packages."):
            return f"--without {t[9:]}" if after is ABSENT else (f"--package {t[9:]}" if str(after).startswith("installed") else f"--package {t[9:]}=={after}")
        if t.startswith("env."):
            return f"--env {t[4:]}={_text(after)}"
        if t == "batch_invariant":
            return "--batch-invariant" if after else "--no-batch-invariant --env VLLM_BATCH_INVARIANT=0"
        if t == "lora":
            return "--lora" if after else "--no-lora"
        if t == "quant":
            return f"--quant {after}"
        if t == "moe_backend":
            return f"--moe-backend {after}"
        if t == "max_num_tokens":
            return f"--max-tokens {after}"
        return None

    def change(self) -> str | None:
        """A change no moe-oracle flag makes, in words (None when :meth:`flag` makes it)."""
        if self.flag() is not None:
            return None
        t, after = self.target, self.after
        if t == "quant_method":
            return f"a {_text(after)} checkpoint (quant_method {_text(self.before)} -> {_text(after)})"
        if t == "in_dtype":
            return f"{_text(after)} activations (vllm serve --dtype {_text(after)}, or --serve '... --dtype {_text(after)}')"
        return f"another model: {t} {_text(self.before)} -> {_text(after)}"


@dataclass(frozen=True)
class Alternative:
    """One edit set that makes the target eligible, with the selection it leads to.

    Attributes:
        edits: the changes, cheapest first.
        kernel: the targeted candidate that becomes eligible.
        config, environment: the inputs with the edits applied.
        decision: the selection under them (its winner may be another kernel).
    """

    edits: tuple[Edit, ...]
    kernel: str
    config: MoEConfig
    environment: Environment
    decision: Decision

    @property
    def cost(self) -> int:
        return sum(e.cost for e in self.edits)

    def flags(self) -> str:
        """The moe-oracle flags that make the change (pasteable after the original ones), each
        flag once with the value the edits leave (:func:`_merge_flags`)."""
        return _merge_flags(f for e in self.edits if (f := e.flag()))

    def changes(self) -> list[str]:
        """Changes no flag makes (another checkpoint, another model), in words."""
        return [c for e in self.edits if (c := e.change())]

    def describe(self, *, serve: bool = False) -> str:
        """The flags, then the changes no flag makes; with ``serve`` (the deployment came from a
        ``vllm serve`` line), the flags that the serve line sets are given as its edits
        (:func:`serve_line_edits`): moe-oracle refuses one setting given both ways."""
        flags = self.flags()
        if serve:
            edits, rest = serve_line_edits(flags)
            flags = "; ".join(x for x in (f"in the vllm serve line: {edits}" if edits else "", rest) if x)
        other = "; ".join(self.changes())
        if not other:
            return flags
        return f"{flags} with {other}" if flags else other

    def outcome(self) -> str:
        winner = self.decision.kernel
        if winner == self.kernel:
            return f"{self.kernel} selected"
        backend = next((r.entry.backend for r in self.decision.rows if r.entry.id == self.kernel), self.kernel)
        view = self.decision.ranking.view
        if request_name(view, backend) == self.config.moe_backend:
            return f"{self.kernel} eligible, outranked by {winner} (--moe-backend {self.config.moe_backend} selects both; the engine takes {winner} first)"
        return f"{self.kernel} eligible, outranked by {winner} ({request_hint(view, backend, 'add')})"

    def to_dict(self) -> dict[str, Any]:
        edits, rest = serve_line_edits(self.flags())
        return {"flags": self.flags(), "serve_line": {"edits": edits, "flags": rest}, "changes": self.changes(), "cost": self.cost, "kernel": self.kernel, "winner_after": self.decision.kernel, "edits": [e.to_dict() for e in self.edits]}


@dataclass(frozen=True)
class WhyNot:
    """Answer for one backend.

    Attributes:
        backend: backend ids asked about.
        already_eligible: a candidate of the backend is eligible without change.
        kernel: the candidate the best edits make eligible (or that already is).
        edits: the cheapest edit set found; empty when already eligible.
        config, environment: inputs with the best edits applied.
        decision: the Decision under the edited inputs.
        blocking: when no edit set was found, the failures that could not be fixed.
        alternatives: every edit set found, cheapest first (the first is ``edits``).
        keep: the input categories the search left alone.
    """

    backend: tuple[str, ...]
    already_eligible: bool
    kernel: str | None
    edits: tuple[Edit, ...]
    config: MoEConfig
    environment: Environment
    decision: Decision | None
    found: bool
    blocking: tuple[str, ...] = ()
    explored: int = 0
    alternatives: tuple[Alternative, ...] = ()
    keep: frozenset[str] = DEFAULT_KEEP

    @property
    def cost(self) -> int:
        return sum(e.cost for e in self.edits)

    def render_text(self, *, serve: bool = False) -> str:
        """The why-not answer as text (``serve``: fixes as edits of the ``vllm serve`` line, see
        :meth:`Alternative.describe`)."""
        name = "/".join(self.backend)
        if self.already_eligible:
            d = self.decision
            if d is not None and d.winner is not None and d.rows[d.winner].entry.backend in self.backend:
                return f"{name} is already selected ({self.kernel})."
            if d is not None and d.refused is not None:
                rules = ", ".join(dict.fromkeys(c.rule for c in refusing_checks(d)))
                return (f"{name} is already eligible ({self.kernel}), but the engine selects {d.refused_kernel} ahead of it and then refuses the layer [{rules}]; "
                        f"{request_hint(d.ranking.view, self.backend[0], 'request')}.")
            hint = request_hint(d.ranking.view, self.backend[0], "request") if d is not None else f"request it with --moe-backend {self.backend[0]}"
            return f"{name} is already eligible ({self.kernel}) but outranked by {d.kernel if d else None}; {hint}."
        kept = f"; kept: {', '.join(sorted(self.keep))}" if self.keep else ""
        if not self.found:
            lines = [f"No change of at most {MAX_EDITS} inputs makes {name} eligible (searched {self.explored} edit set{'s' if self.explored != 1 else ''}{kept}). Blocking:"]
            lines += [f"  - {b}" for b in self.blocking]
            return "\n".join(lines)
        lines = [f"{name} becomes eligible with these changes, fewest and least disruptive first (cost: flag 1, package 2, redeployment 3, GPU count or numerics 4, hardware 5{kept}):"]
        lines += alternative_lines(self.alternatives, serve=serve)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render_text()

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": list(self.backend),
            "already_eligible": self.already_eligible,
            "found": self.found,
            "kernel": self.kernel,
            "cost": self.cost,
            "edits": [e.to_dict() for e in self.edits],
            "winner_after": self.decision.kernel if self.decision else None,
            "alternatives": [a.to_dict() for a in self.alternatives],
            "keep": sorted(self.keep),
            "blocking": list(self.blocking),
            "explored": self.explored,
        }


def request_hint(catalog: "Catalog", backend: str, verb: str) -> str:
    """How to run ``backend`` on purpose: ``--moe-backend NAME`` with a name the release accepts,
    or, where none selects it, that only the priority order reaches it."""
    name = request_name(catalog, backend)
    if name == "auto":
        return f"no --moe-backend name selects {backend}; only the priority order reaches it"
    return f"{verb} --moe-backend {name} to run it" if verb == "add" else f"{verb} it with --moe-backend {name}"


def _preset_flag(text: str, before: str = "") -> str:
    """``tp=1 dp=8 ep all2all=deepep_low_latency`` -> ``--tp 1 --dp 8 --ep --all2all deepep_low_latency``;
    with ``before``, only what differs from it (``--no-ep`` where it had EP).

    >>> _preset_flag("tp=1 dp=8 ep all2all=deepep_low_latency")
    '--tp 1 --dp 8 --ep --all2all deepep_low_latency'
    >>> _preset_flag("tp=8 dp=1", "tp=8 dp=1 ep all2all=naive")
    '--no-ep'
    """
    old = set(before.split())
    words = text.split()
    out = []
    for word in words:
        if word in old:
            continue
        key, _, value = word.partition("=")
        out.append(f"--{key} {value}" if value else f"--{key}")
    if "ep" in old and "ep" not in words:
        out.append("--no-ep")
    return " ".join(out)


def _serve_spelling() -> dict[str, str]:
    """moe-oracle flag -> the vllm serve flag that sets the same field (``deployment``'s flag
    table joined with ``serve.SERVE_FLAG_OF``); redundant experts and the draft's backend are
    JSON keys, not flags, and are left out."""
    from ..inputs.serve_apply import SERVE_TO_ARGS
    from ..inputs.serve import SERVE_FLAG_OF

    return {flag: SERVE_FLAG_OF[attr] for attr, (_, flag) in SERVE_TO_ARGS.items() if " " not in SERVE_FLAG_OF[attr]}


def serve_line_edits(flags: str) -> tuple[str, str]:
    r"""A fix's moe-oracle flags split into (the same change as ``vllm serve`` flags, the flags no
    serve flag sets: ``--gpu``, ``--package``, ``--env`` ...). Appended to the serve line, the
    edits take effect: vLLM's argparse keeps a repeated flag's last value, and a boolean turned
    off is its ``--no-`` form (argparse ``BooleanOptionalAction`` in vLLM 0.29.0-0.32.0; vLLM
    0.33.0 still accepts ``--no-enable-expert-parallel`` beside ``--disable-expert-parallel``).
    Redundant experts go through ``--eplb-config``.

    >>> serve_line_edits("--tp 1 --dp 16 --no-eplb --redundant-experts 0 --gpu B200")
    ('--tensor-parallel-size 1 --data-parallel-size 16 --no-enable-eplb --eplb-config \'{"num_redundant_experts": 0}\'', '--gpu B200')
    """
    spelling = _serve_spelling()
    edits: list[str] = []
    rest: list[str] = []
    for option in _options([flags]):
        name = option[0]
        if name in spelling:
            edits.append(" ".join([spelling[name], *option[1:]]))
        elif name.startswith("--no-") and "--" + name[5:] in spelling:
            edits.append("--no-" + spelling["--" + name[5:]][2:])
        elif name == "--redundant-experts" and len(option) == 2:
            edits.append(f"--eplb-config '{{\"num_redundant_experts\": {option[1]}}}'")
        else:
            rest.append(" ".join(option))
    return " ".join(edits), " ".join(rest)


def _options(texts: Iterable[str]) -> list[list[str]]:
    """Flag texts as options: each flag with the words that follow it."""
    options: list[list[str]] = []
    for text in texts:
        for word in text.split():
            if word.startswith("--") or not options:
                options.append([word])
            else:
                options[-1].append(word)
    return options


def _flag_key(option: list[str]) -> tuple[str, ...]:
    """What one option sets: ``--no-ep`` and ``--ep`` set the same thing, ``--package X==1`` and
    ``--without X`` the same package, ``--env VAR=1`` and ``--env VAR=0`` the same variable."""
    name = option[0]
    if name in ("--package", "--without") and len(option) > 1:
        return ("package", str(canonicalize_name(option[1].split("==")[0])))
    if name == "--env" and len(option) > 1:
        return ("env", option[1].partition("=")[0])
    return (name[5:] if name.startswith("--no-") else name[2:],)


def _merge_flags(texts: Iterable[str]) -> str:
    """Edits' flags joined, each input set once: where two edits set the same flag (a tp edit,
    then a whole redeployment), the later value stays, at the first one's place, as applying the
    edits in order leaves it.

    >>> _merge_flags(["--tp 1", "--tp 8 --dp 1"])
    '--tp 8 --dp 1'
    >>> _merge_flags(["--ep", "--dp 8", "--no-ep", "--env A=1", "--env A=0"])
    '--no-ep --dp 8 --env A=0'
    """
    options = _options(texts)
    merged: dict[tuple[str, ...], list[str]] = {}
    for option in options:
        merged[_flag_key(option)] = option  # an existing key keeps its place, takes the later value
    return " ".join(" ".join(option) for option in merged.values())


def _text(value: Any) -> str:
    if value is ABSENT:
        return "not installed"
    if isinstance(value, Device):
        if value.name:
            return value.name
        return f"{value.platform.value} {value.capability or value.arch or ''}".strip()
    if hasattr(value, "value"):
        return str(value.value)
    if hasattr(value, "name") and not isinstance(value, str):
        return str(value.name)
    return str(value)


# ----------------------------------------------------------------------------- edit generation

_PARALLEL_FIELDS = {"tp_size", "dp_size", "moe_tp_size", "ep_size", "use_ep", "all2all_backend", "all2all", "dispatch", "activation_format", "intermediate_size_per_partition", "num_local_experts"}
_DEVICE_FIELDS = {"platform", "device_capability", "gpu_arch", "cpu_arch", "cpu_amx"}
_QUANT_FIELDS = {"quant_scheme", "weight_quant", "activation_quant", "quant_family"}

State = tuple[MoEConfig, Environment]
EditGen = tuple[str, Callable[[State], State], Any, Any, int]


def _sizes(current: int) -> list[int]:
    return sorted({1, 2, 4, 8, 16, current})


def _parallel_edits(config: MoEConfig) -> Iterator[tuple[str, Callable[[MoEConfig], MoEConfig], Any, Any, int]]:
    """Parallel edits: flags first (``--ep``, ``--all2all``, cost 1), then redeployments of the same
    GPUs (another TP/DP split, DP+EP over an all2all backend: cost 3), then other GPU counts (4)."""
    p = config.parallel
    world = p.tp_size * p.dp_size
    yield "parallel.use_ep", lambda c: c.with_changes(parallel__use_ep=not c.parallel.use_ep), p.use_ep, not p.use_ep, COSTS["flag"]
    for backend in All2AllBackend:
        if backend is not p.all2all_backend:
            yield "parallel.all2all_backend", lambda c, b=backend: c.with_changes(parallel__all2all_backend=b), p.all2all_backend, backend, COSTS["flag"]
    # Whole deployments: TP only, and DP + EP over each all2all backend, same GPU count.
    ep_world = world if world > 1 else 8

    def valid(**kwargs: Any) -> ParallelConfig | None:
        try:
            return ParallelConfig(**kwargs)
        except ConfigError:  # tp * dp past the validator's limit after earlier edits: no such preset
            return None

    presets = [q for q in [valid(tp_size=world)] + [valid(dp_size=ep_world, use_ep=True, all2all_backend=b) for b in All2AllBackend] if q is not None]
    for preset in presets:
        if preset != p:
            after = f"tp={preset.tp_size} dp={preset.dp_size}" + (f" ep all2all={preset.all2all_backend.value}" if preset.use_ep else "")
            before = f"tp={p.tp_size} dp={p.dp_size}" + (f" ep all2all={p.all2all_backend.value}" if p.use_ep else "")
            cost = COSTS["redeploy"] if preset.tp_size * preset.dp_size == world else COSTS["resize"]
            yield "parallel", lambda c, pre=preset: c.with_changes(parallel__tp_size=pre.tp_size, parallel__dp_size=pre.dp_size, parallel__use_ep=pre.use_ep, parallel__all2all_backend=pre.all2all_backend), before, after, cost
    for tp in _sizes(p.tp_size):
        if tp != p.tp_size:
            yield "parallel.tp_size", lambda c, tp=tp: c.with_changes(parallel__tp_size=tp), p.tp_size, tp, COSTS["redeploy"] if tp * p.dp_size == world else COSTS["resize"]
    for dp in _sizes(p.dp_size):
        if dp != p.dp_size:
            yield "parallel.dp_size", lambda c, dp=dp: c.with_changes(parallel__dp_size=dp), p.dp_size, dp, COSTS["redeploy"] if dp * p.tp_size == world else COSTS["resize"]


def _candidate_edits(chk: Check, state: State, values: dict[str, Any], keep: frozenset[str] = frozenset()) -> Iterator[EditGen]:
    """Edits that could satisfy ``chk`` (they are verified by re-evaluation, not trusted), none
    in a kept category."""
    config, env = state
    fields: Iterable[str] = chk.fields_read if chk.deny or chk.condition else (chk.field,)
    seen: set[str] = set()
    for field in fields:
        if field in seen:
            continue
        seen.add(field)
        for edit in _edits_for_field(field, chk, config, env):
            if category(edit[0]) not in keep:
                yield edit


def _wrap_config(fn: Callable[[MoEConfig], MoEConfig]) -> Callable[[State], State]:
    return lambda s: (fn(s[0]), s[1])


def _architectures() -> list[tuple[str, Device]]:
    """One catalog device per architecture (the first name in catalog order): H100, H200, H20
    and GH200 are one candidate, not four."""
    seen: dict[tuple[Any, ...], tuple[str, Device]] = {}
    for name, hw in GPU_CATALOG.items():
        d = hw.device
        seen.setdefault((d.platform, d.capability, d.arch, d.cpu_amx), (name, d))
    return list(seen.values())


def _edits_for_field(field: str, chk: Check, config: MoEConfig, env: Environment) -> Iterator[EditGen]:
    if field in _DEVICE_FIELDS:
        here = config.device
        for _name, device in _architectures():
            if (device.platform, device.capability, device.arch, device.cpu_amx) != (here.platform, here.capability, here.arch, here.cpu_amx):
                yield "device", (lambda s, d=device: (replace(s[0], device=d), s[1])), config.device, device, COSTS["hardware"]
        return
    if field.startswith("packages."):
        name = field[9:]
        current = env.package(name)
        spec = None
        if chk.predicate is not None and chk.predicate.field == field:
            spec = dict(chk.predicate.spec).get("version")
        for version in _versions_for(spec):
            shown = version if spec else "installed (any version)"
            yield field, (lambda s, v=version: (s[0], s[1].with_package(name, v))), current, shown, COSTS["package"]
        if current not in (None, ABSENT):
            yield field, (lambda s: (s[0], s[1].with_package(name, None))), current, ABSENT, COSTS["package"]
        return
    if field.startswith("env."):
        var = field[4:]
        options = _allowed_values(chk, field) or ["1", "0"]
        for value in options:
            raw = ("1" if value else "0") if isinstance(value, bool) else str(value)
            yield field, (lambda s, r=raw: (s[0], s[1].with_env(var, r))), env.env_value(var), raw, COSTS["flag"]
        return
    if field in _PARALLEL_FIELDS:
        for target, fn, before, after, cost in _parallel_edits(config):
            yield target, _wrap_config(fn), before, after, cost
        return
    if field in _QUANT_FIELDS:
        for name, scheme in SCHEMES.items():
            if scheme != config.quant:
                yield "quant", _wrap_config(lambda c, q=scheme: replace(c, quant=q)), config.quant.name, name, COSTS["numerics"]
        return
    flag, numerics, model = COSTS["flag"], COSTS["numerics"], COSTS["model"]
    simple = {
        "lora": (lambda c, v: replace(c, lora=v), [True, False], flag),
        "enable_eplb": (lambda c, v: c.with_changes(parallel__enable_eplb=v), [True, False], flag),
        "moe_backend": (lambda c, v: replace(c, moe_backend=v), _allowed_values(chk, field) or [], flag),
        "quant_method": (lambda c, v: replace(c, quant_method=v), _allowed_values(chk, field) or [], numerics),
        "in_dtype": (lambda c, v: replace(c, in_dtype=DType(v)), [d.value for d in DType], numerics),
        "router_logits_dtype": (lambda c, v: replace(c, router_logits_dtype=DType(v)), [d.value for d in DType], model),
        "activation": (lambda c, v: replace(c, activation=Activation(v)), [a.value for a in Activation], model),
        "is_gated": (lambda c, v: replace(c, activation=Activation(v)), [a.value for a in Activation], model),
        "routing_method": (lambda c, v: replace(c, routing_method=RoutingMethod(v)), [r.value for r in RoutingMethod], model),
        "has_bias": (lambda c, v: replace(c, has_bias=v), [True, False], model),
        "swiglu_clamp": (lambda c, v: replace(c, swiglu_limit=None if not v else 7.0), [True, False], model),
    }
    if field == "batch_invariant":
        # The flag and VLLM_BATCH_INVARIANT both turn it on: one edit sets both.
        for value in (True, False):
            raw = "1" if value else None
            yield "batch_invariant", (lambda s, v=value, r=raw: (replace(s[0], batch_invariant=v), s[1].with_env("VLLM_BATCH_INVARIANT", r))), config.batch_invariant, value, flag
        return
    if field in simple:
        setter, options, cost = simple[field]
        attr = {"enable_eplb": None, "is_gated": "activation", "swiglu_clamp": "swiglu_limit"}.get(field, field)
        before = getattr(config, attr) if attr else config.parallel.enable_eplb
        for value in options:
            if value == "auto" and field == "moe_backend":
                continue
            yield field, _wrap_config(lambda c, v=value, f=setter: f(c, v)), before, value, cost
        return
    numeric = {"max_num_tokens": flag, "num_experts": model, "top_k": model, "hidden_size": model, "intermediate_size": model}
    if field in numeric:
        current = getattr(config, field)
        for value in _numeric_candidates(chk, field, current):
            yield field, _wrap_config(lambda c, v=value: replace(c, **{field: v})), current, value, numeric[field]


def _allowed_values(chk: Check, field: str) -> list[Any] | None:
    preds = [chk.predicate] if chk.predicate is not None and chk.predicate.field == field else []
    preds += [p for p in chk.condition if p.field == field]
    for pred in preds:
        spec = dict(pred.spec)
        if "in" in spec:
            return list(spec["in"])
    return None


def _numeric_candidates(chk: Check, field: str, current: Any) -> list[int]:
    out: set[int] = set()
    for pred in ([chk.predicate] if chk.predicate is not None else []) + list(chk.condition):
        if pred.field != field:
            continue
        spec = dict(pred.spec)
        for bound in ("max", "min"):
            # A table may say `max: .nan` or `.inf` (no candidate); an int bound is always finite.
            if bound in spec and (isinstance(spec[bound], int) or math.isfinite(spec[bound])):
                out.add(int(spec[bound]))
        if "multiple_of" in spec and isinstance(current, int):
            m = int(spec["multiple_of"])
            out.add(max(m, (current // m) * m))
            out.add(-(-current // m) * m)
        if "in" in spec:
            out.update(v for v in spec["in"] if isinstance(v, int))
    return sorted(v for v in out if v >= 1 and v != current)


def _versions_for(spec: str | None) -> list[str]:
    """A few concrete versions that satisfy ``spec`` (its own bounds first)."""
    if not spec:
        return ["1.0.0"]
    sset = SpecifierSet(spec)
    candidates = []
    for s in sset:
        try:
            v = Version(s.version.replace(".*", ""))
        except InvalidVersion:  # arbitrary equality (===abc) names no PEP 440 version
            continue
        candidates += [str(v), f"{v.major}.{v.minor}.{v.micro + 1}", f"{v.major}.{v.minor + 1}.0", f"{v.major + 1}.0.0"]
    good = [c for c in dict.fromkeys(candidates) if Version(c) in sset]
    return good[:3] or ["99.0.0"]


# ----------------------------------------------------------------------------- search


def _target_failures(decision: Decision, target: Callable[["Row"], bool], *, selected: bool = False) -> tuple[list[Check] | None, str | None]:
    """Failing checks of the least-failing targeted candidate, or (None, kernel) if one is eligible.

    ``selected``: a layer the engine refuses after selecting a kernel (``Decision.refused``) has
    none: the failures to fix are that kernel's, whatever is eligible behind it.
    """
    if selected and decision.refused is not None:
        return list(decision.rows[decision.refused].failures), None
    best: list[Check] | None = None
    for row in decision.rows:
        if not target(row):
            continue
        if not row.failures:
            return None, row.entry.id
        if best is None or len(row.failures) < len(best):
            best = list(row.failures)
    return best or [], None


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`search_eligible`: the best edit set (``edits``) and every one found."""

    found: bool
    kernel: str | None
    edits: tuple[Edit, ...]
    config: MoEConfig
    environment: Environment
    decision: Decision | None
    blocking: tuple[str, ...]
    explored: int
    alternatives: tuple[Alternative, ...] = ()


def _key(edits: Iterable[Edit]) -> frozenset[str]:
    return frozenset(f"{e.target}={_text(e.after)}" for e in edits)


def search_eligible(
    catalog: "Catalog",
    config: MoEConfig,
    env: Environment,
    target: Callable[["Row"], bool],
    *,
    max_expansions: int = MAX_EXPANSIONS,
    n: int = 1,
    keep: frozenset[str] = frozenset(),
    policy: Policy = Policy.FAITHFUL,
    selected: bool = False,
    admissible: Callable[[MoEConfig, Environment], bool] | None = None,
) -> SearchResult:
    """Up to ``n`` cheapest edit sets (each at most :data:`MAX_EDITS` edits, none in a ``keep``
    category, none a superset of a cheaper one) after which a row matching ``target`` has no
    failure under ``policy``, cheapest first (ties in the order found).

    ``admissible`` (config, environment) -> whether the engine starts with them at all: edited
    inputs it refuses are no answer, though the search goes on through them (a later edit may
    make them admissible). The CLI passes the platform's quantization check
    (:func:`moe_oracle.inputs.quant_checks.platform_admits`): no fix moves a checkpoint to a GPU whose
    platform vLLM refuses its method on.

    ``selected`` (a dead end's fixes): the layer must also not be refused after selection, and
    the request may be dropped or changed: ``moe_backend`` back to auto where the name maps to
    no kernel, or to the backend of an eligible candidate the refused kernel outranks."""
    tie = count()
    frontier: list[tuple[int, int, int, tuple[Edit, ...], State]] = [(0, 0, next(tie), (), (config, env))]
    seen: set[frozenset[str]] = set()
    explored = 0
    blocking: tuple[str, ...] = ()
    found: list[Alternative] = []
    while frontier and explored < max_expansions and len(found) < n:
        cost, _, _, edits, state = heapq.heappop(frontier)
        if any(_key(a.edits) <= _key(edits) for a in found):
            continue  # contains a cheaper answer: not a different way
        explored += 1
        try:
            decision = evaluate(catalog, state[0], state[1], policy=policy)
        except Exception:  # noqa: BLE001 - an edit produced an invalid config; skip it
            continue
        failing, kernel = _target_failures(decision, target, selected=selected)
        if failing is None:
            if not edits:
                return SearchResult(True, kernel, (), state[0], state[1], decision, (), explored)
            assert kernel is not None
            if admissible is not None and not admissible(*state):
                continue  # the engine would not start with these inputs: no fix
            if decision.winner is not None and any(w.code == "unchecked" for w in decision.warnings):
                continue  # the engine selects a kernel whose unchecked check fails when it is built: no fix
            alt = Alternative(edits, kernel, state[0], state[1], decision)
            # Another way to the same inputs (a preset that only drops --ep, as --no-ep did) is no new fix.
            if not any((a.config == alt.config and a.environment.fingerprint == alt.environment.fingerprint) or a.describe() == alt.describe() for a in found):
                found.append(alt)
            continue
        if not edits:
            blocking = tuple(f"{c.code.value}: {c.field} [{c.rule}]" for c in failing)
        if len(edits) >= MAX_EDITS or not failing:
            continue
        values = dict(decision.normalized.values)
        proposals = _candidate_edits(failing[0], state, values, keep)
        if selected and "flags" not in keep:
            proposals = chain(_request_edits(catalog, decision, target, state), proposals)
        for name, apply, before, after, edit_cost in proposals:
            earlier = next((e for e in edits if e.target == name), None)
            # A package edit may be revised: installing it can satisfy a presence check and then
            # fail its version range (installed 1.0.0, needs >=2.9). Other targets are edited once.
            if earlier is not None and not name.startswith("packages."):
                continue
            try:
                new_state = apply(state)
            except Exception:  # noqa: BLE001 - e.g. a ParallelConfig the edit made invalid
                continue
            kept = tuple(e for e in edits if e is not earlier)
            if earlier is not None:
                before = earlier.before
            new_edits = kept + (Edit(name, before, after, edit_cost),)
            key = _key(new_edits)
            if key in seen:
                continue
            seen.add(key)
            base = cost - (earlier.cost if earlier is not None else 0)
            heapq.heappush(frontier, (base + edit_cost, len(new_edits), next(tie), new_edits, new_state))
    if found:
        best = found[0]
        return SearchResult(True, best.kernel, best.edits, best.config, best.environment, best.decision, (), explored, tuple(found))
    return SearchResult(False, None, (), config, env, None, blocking, explored)


def _request_edits(catalog: "Catalog", decision: Decision, target: Callable[["Row"], bool], state: State) -> Iterator[EditGen]:
    """``moe_backend`` edits a dead end's request suggests: ``auto`` where the name maps to no
    kernel of this layer (the engine raises), and, where the engine selects a kernel and then
    refuses the layer, the backend of each eligible targeted candidate ranked after it."""
    config = state[0]
    current = config.moe_backend
    if decision.requested == () and current != "auto":
        yield "moe_backend", _wrap_config(lambda c: replace(c, moe_backend="auto")), current, "auto", COSTS["flag"]
    if decision.refused is None:
        return
    asked: list[str] = []
    for row in decision.rows[decision.refused + 1:]:
        if not row.failures and target(row):
            name = request_name(catalog, row.entry.backend)
            if name not in asked and name not in ("auto", current):
                asked.append(name)
    for name in asked:
        yield "moe_backend", _wrap_config(lambda c, v=name: replace(c, moe_backend=v)), current, name, COSTS["flag"]


def repair(catalog: "Catalog", config: MoEConfig, env: Environment, target: Callable[["Row"], bool], *, max_rounds: int = 16, policy: Policy = Policy.FAITHFUL) -> SearchResult:
    """Greedy repair: fix the target's first failing check with its cheapest working edit, repeat.

    Among the edits that fix the check, the one leaving the fewest failures wins. Not minimal
    (that is :func:`search_eligible`'s job) but reaches far-away configs in few rounds; lint
    uses it to show that a kernel can be eligible at all.
    """
    state: State = (config, env)
    edits: tuple[Edit, ...] = ()
    explored = 0
    visited = {(config, env.fingerprint)}
    for _ in range(max_rounds):
        decision = evaluate(catalog, state[0], state[1], policy=policy)
        explored += 1
        failing, kernel = _target_failures(decision, target)
        if failing is None:
            return SearchResult(True, kernel, edits, state[0], state[1], decision, (), explored)
        if not failing:
            break
        chk = failing[0]
        best: tuple[int, int, State, Edit] | None = None
        for name, apply, before, after, edit_cost in _candidate_edits(chk, state, dict(decision.normalized.values)):
            try:
                new_state = apply(state)
                if (new_state[0], new_state[1].fingerprint) in visited:
                    continue  # never undo an earlier repair: that oscillates
                trial = evaluate(catalog, new_state[0], new_state[1], policy=policy)
            except Exception:  # noqa: BLE001 - an edit produced an invalid config; try the next
                continue
            explored += 1
            still, _ = _target_failures(trial, target)
            remaining = 0 if still is None else len(still)
            if still is not None and any(c.rule == chk.rule for c in still):
                continue
            if best is None or (remaining, edit_cost) < best[:2]:
                best = (remaining, edit_cost, new_state, Edit(name, before, after, edit_cost))
        if best is None:
            return SearchResult(False, None, edits, state[0], state[1], None, (f"{chk.code.value}: {chk.field} [{chk.rule}]",), explored)
        state, edits = best[2], edits + (best[3],)
        visited.add((state[0], state[1].fingerprint))
    return SearchResult(False, None, edits, state[0], state[1], None, (), explored)


def _check_keep(keep: Iterable[str]) -> frozenset[str]:
    wanted = frozenset(keep)
    unknown = sorted(wanted - set(CATEGORIES))
    if unknown:
        raise ConfigError([InputIssue("--keep", "unknown input category", unknown[0], list(CATEGORIES))], headline="bad --keep")
    return wanted


def why_not(oracle: "Oracle", config: MoEConfig, backend_name: str, env: Environment | None = None, *, n: int = 3, keep: Iterable[str] = DEFAULT_KEEP, policy: Policy | str | None = None,
            admissible: Callable[[MoEConfig, Environment], bool] | None = None) -> WhyNot:
    """Up to ``n`` smallest, least disruptive changes that make ``backend_name`` eligible under ``policy``.

    >>> from moe_oracle import Device, MoEConfig, Oracle, why_not
    >>> cfg = MoEConfig(num_experts=8, top_k=2, hidden_size=4096, intermediate_size=14336, device=Device("cuda", capability=90))
    >>> why_not(Oracle.default(), cfg, "flashinfer_trtllm", n=1).found
    True

    Args:
        env: the environment to search from (default: the oracle's).
        keep: input categories (:data:`CATEGORIES`) that must not change; default: the model.
        policy: default: the oracle's.
        admissible: edited inputs the engine would start with (:func:`search_eligible`).

    Raises:
        ConfigError: ``backend_name`` is not a known backend or alias, or ``keep`` names an
            unknown category.
    """
    catalog = oracle.catalog
    env = oracle.environment if env is None else env
    policy = oracle.policy if policy is None else parse_policy(policy)
    kept = _check_keep(keep)
    backend = resolve_request(catalog, backend_name, "--backend")
    if backend is None:
        raise ConfigError([InputIssue("--backend", "why-not asks about one backend; 'auto' is the priority order itself (use explain)", backend_name, sorted(catalog.backend_names))])
    if not backend:
        # A name the engine accepts that no quant family's oracle maps to a kernel of ours
        # (vLLM refuses it, or reads it as auto): there is nothing to make eligible.
        raise ConfigError([InputIssue("--backend", "names no kernel: the engine accepts this moe_backend value, but no quant family's oracle maps it to a kernel modelled here (each refuses it or reads it as auto); ask about a backend, or a name that maps to one", backend_name, _why_not_names(catalog))])
    target = lambda row: row.entry.backend in backend  # noqa: E731
    start = evaluate(catalog, config, env, policy=policy)
    failing, kernel = _target_failures(start, target)
    if failing is None:
        return WhyNot(backend, True, kernel, (), config, env, start, True, keep=kept)
    r = search_eligible(catalog, config, env, target, n=n, keep=kept, policy=policy, admissible=admissible)
    return WhyNot(backend, False, r.kernel, r.edits, r.config, r.environment, r.decision, r.found, r.blocking, r.explored, r.alternatives, kept)


def _why_not_names(catalog: "Catalog") -> list[str]:
    """The ``--backend`` values why-not answers: backend ids, aliases and the request maps' names
    that map to at least one backend."""
    names = {n for n, bs in catalog.backend_names.items() if bs}
    names.update(n for rm in catalog.request_maps for n, bs in rm.names.items() if bs)
    return sorted(names)


def fixes(catalog: "Catalog", config: MoEConfig, env: Environment, *, n: int = 3, keep: Iterable[str] = DEFAULT_KEEP, backends: Iterable[str] | None = None, policy: Policy = Policy.FAITHFUL,
          admissible: Callable[[MoEConfig, Environment], bool] | None = None) -> tuple[Alternative, ...]:
    """For a dead end: up to ``n`` edit sets after which *some* kernel is eligible under ``policy``, cheapest first.

    Why-not without naming a backend (``backends``: only candidates of these, e.g. a strict
    request; empty, a name that maps to no kernel: any candidate); the first alternatives are usually one flag (``--ep``). Returns ``()`` when
    something is already eligible or nothing was found.
    """
    wanted = frozenset(backends) if backends else None
    target = (lambda row: True) if wanted is None else (lambda row: row.entry.backend in wanted)
    r = search_eligible(catalog, config, env, target, n=n, keep=_check_keep(keep), policy=policy, selected=True, admissible=admissible)
    return r.alternatives
