"""Why-not edits: one input change (:class:`Edit`), a re-checked set of them (:class:`Alternative`),
what each costs an operator (:data:`COSTS`) and how an edit set reads as flags and as a serve line."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable

from packaging.utils import canonicalize_name

from ..core.blocking import refusing_checks
from ..core.config import Device, MoEConfig
from ..core.decision import Decision
from ..core.engine import evaluate
from ..core.errors import ConfigError
from ..core.requests import request_name
from ..core.environment import ABSENT, Environment

if TYPE_CHECKING:
    from ..core.catalog import Catalog

__all__ = ["Alternative", "CATEGORIES", "COSTS", "DEFAULT_KEEP", "Edit", "category", "edit_text", "edits_text", "request_decision", "request_hint", "serve_line_edits"]


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
    if target.startswith(("packages.", "tools.")):  # installing a host tool is installing software
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
        return f"{self.target}: {edit_text(self.before)} -> {edit_text(self.after)}"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "before": edit_text(self.before), "after": edit_text(self.after), "cost": self.cost, "flag": self.flag(), "change": self.change()}

    def flag(self) -> str | None:
        """The change as the operator types it on the moe-oracle command line (``--ep``, ``--no-ep``,
        ``--tp 4``, ``--gpu B200``, ``--env VAR=0``); None for a change no flag makes (another
        checkpoint or model: :meth:`change`)."""
        t, after = self.target, self.after
        if t == "device":
            return f"--gpu {edit_text(after)}"
        if t == "parallel.use_ep":
            return "--ep" if after else "--no-ep"
        if t == "parallel.tp_size":
            return f"--tp {after}"
        if t == "parallel.dp_size":
            return f"--dp {after}"
        if t == "parallel.all2all_backend":
            return f"--all2all {edit_text(after)}"
        if t == "parallel.expert_placement_strategy":
            return f"--expert-placement {after}"
        if t == "parallel":
            return _preset_flag(str(after), str(self.before))
        if t == "enable_eplb":
            return "--eplb" if after else "--no-eplb"
        if t.startswith("packages."):
            return f"--without {t[9:]}" if after is ABSENT else (f"--package {t[9:]}" if str(after).startswith("installed") else f"--package {t[9:]}=={after}")
        if t.startswith("env."):
            return f"--env {t[4:]}={edit_text(after)}"
        if t.startswith("tools."):
            return f"--tool {t[6:]}={'yes' if after else 'no'}"
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
            return f"a {edit_text(after)} checkpoint (quant_method {edit_text(self.before)} -> {edit_text(after)})"
        if t == "in_dtype":
            return f"{edit_text(after)} activations (vllm serve --dtype {edit_text(after)}, or --serve '... --dtype {edit_text(after)}')"
        return f"another model: {t} {edit_text(self.before)} -> {edit_text(after)}"


@dataclass(frozen=True)
class Alternative:
    """One edit set that makes the target eligible, with the selection it leads to.

    Attributes:
        edits: the changes, cheapest first.
        kernel: the targeted candidate that becomes eligible.
        config, environment: the inputs with the edits applied.
        decision: the selection under them (its winner may be another kernel).
        requested: where ``kernel`` is eligible but outranked, the selection with its backend
            also requested by name (:func:`request_decision`): the hint to request it is
            re-checked, not assumed (a shortcut may not read the request, an explicit backend may
            change the layer's sizes).
    """

    edits: tuple[Edit, ...]
    kernel: str
    config: MoEConfig
    environment: Environment
    decision: Decision
    requested: Decision | None = None

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

    def parts(self) -> frozenset[str]:
        """What the operator does, one item per option (``--tp 4``, ``--ep``) and per change no
        flag makes: a fix whose parts hold another fix's parts and more is that fix plus work
        (:meth:`dominates`), whichever edits made it (a preset redeployment against one flag).

        >>> a = Alternative((Edit("parallel.use_ep", False, True, 1),), "k", None, None, None)  # type: ignore[arg-type]
        >>> sorted(a.parts())
        ['--ep']
        """
        return frozenset(" ".join(option) for option in _options([self.flags()])) | frozenset(self.changes())

    def dominates(self, other: "Alternative") -> bool:
        """This fix's parts are a strict subset of ``other``'s: ``other`` adds changes that are
        not needed (``--tp 4`` against ``--tp 4 --ep``, both re-checked to work)."""
        return self.parts() < other.parts()

    def describe(self, *, serve: bool = False) -> str:
        """The flags, then the changes no flag makes; with ``serve`` (the deployment came from a
        ``vllm serve`` line), the flags that the serve line sets are given as its edits
        (:func:`serve_line_edits`): moe-oracle refuses one setting given both ways."""
        return edits_text(self.edits, serve=serve)

    def outcome(self) -> str:
        winner = self.decision.kernel
        if winner == self.kernel:
            return f"{self.kernel} selected"
        backend = next((r.entry.backend for r in self.decision.rows if r.entry.id == self.kernel), self.kernel)
        view = self.decision.ranking.view
        if winner is None:
            # No winner, yet the target is eligible: the engine selects a kernel ranked ahead of
            # it and then refuses the layer (Decision.refused: a check made after selection).
            d = self.decision
            why = (f", but the engine selects {d.refused_kernel} ahead of it and then refuses the layer [{', '.join(dict.fromkeys(c.rule for c in refusing_checks(d)))}]"
                   if d.refused is not None else ", but the engine selects no kernel")
            return f"{self.kernel} eligible{why} ({request_hint(view, backend, 'add', self.kernel, self.requested)})"
        if request_name(view, backend) == self.config.moe_backend:
            return f"{self.kernel} eligible, outranked by {winner} (--moe-backend {self.config.moe_backend} selects both; the engine takes {winner} first)"
        return f"{self.kernel} eligible, outranked by {winner} ({request_hint(view, backend, 'add', self.kernel, self.requested)})"

    def to_dict(self) -> dict[str, Any]:
        edits, rest = serve_line_edits(self.flags())
        return {"flags": self.flags(), "serve_line": {"edits": edits, "flags": rest}, "changes": self.changes(), "cost": self.cost, "kernel": self.kernel, "winner_after": self.decision.kernel,
                "refused_after": refused_after(self.decision), "edits": [e.to_dict() for e in self.edits]}


def refused_after(decision: Decision | None) -> dict[str, Any] | None:
    """The kernel the engine selects and then refuses the layer with (``Decision.refused``) and the
    rules that refuse it, as ``{"kernel", "rules"}``; ``None`` where it refuses none."""
    if decision is None or decision.refused is None:
        return None
    return {"kernel": decision.refused_kernel, "rules": list(dict.fromkeys(c.rule for c in refusing_checks(decision)))}


def request_hint(catalog: "Catalog", backend: str, verb: str, kernel: str | None = None, requested: Decision | None = None) -> str:
    """How to run ``backend`` on purpose: ``--moe-backend NAME`` with a name the release accepts,
    or, where none selects it, that only the priority order reaches it. With ``requested`` (the
    selection with the request made, :func:`request_decision`), a request that does not select
    ``kernel`` says what the engine does instead rather than offering it."""
    name = request_name(catalog, backend)
    if name == "auto":
        return f"no --moe-backend name selects {backend}; only the priority order reaches it"
    if requested is not None and kernel is not None and requested.kernel != kernel:
        instead = f"the engine then selects {requested.kernel}" if requested.kernel is not None else "the engine then runs no kernel"
        return f"--moe-backend {name} does not run it: {instead} (moe-oracle explain ... --moe-backend {name} says why)"
    return f"{verb} --moe-backend {name} to run it" if verb == "add" else f"{verb} it with --moe-backend {name}"


def request_decision(catalog: "Catalog", config: MoEConfig, env: Environment, backend: str, *, policy: Any) -> Decision | None:
    """The selection with ``backend`` requested by name (``None``: no name requests it, or the
    engine refuses the inputs so edited): what a hint to request it leads to, re-checked."""
    name = request_name(catalog, backend)
    if name == "auto" or name == config.moe_backend:
        return None
    try:
        return evaluate(catalog, replace(config, moe_backend=name), env, policy=policy)
    except ConfigError:
        return None


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
    if name in ("--env", "--tool") and len(option) > 1:
        return (name[2:], option[1].partition("=")[0])
    return (name[5:] if name.startswith("--no-") else name[2:],)


def edits_text(edits: Iterable[Edit], *, serve: bool = False) -> str:
    """An edit set as the operator makes it: the flags (each input once), then the changes no
    flag makes; ``serve`` as in :meth:`Alternative.describe`.

    >>> edits_text([Edit("parallel.tp_size", 8, 4, 3), Edit("parallel.use_ep", False, True, 3)])
    '--tp 4 --ep'
    """
    edits = tuple(edits)
    flags = _merge_flags(f for e in edits if (f := e.flag()))
    if serve:
        on_line, rest = serve_line_edits(flags)
        flags = "; ".join(x for x in (f"in the vllm serve line: {on_line}" if on_line else "", rest) if x)
    other = "; ".join(c for e in edits if (c := e.change()))
    if not other:
        return flags
    return f"{flags} with {other}" if flags else other


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


def edit_text(value: Any) -> str:
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
