"""Exhaustive sweep of the discrete vocabulary with exact equivalence classes (``benchmarks/sweep.py``).

The product: device x quant scheme x request (``moe_backend``) x layout (real shape x parallel
shape) x LoRA x activation x routing method. Every combination is accounted for; only one
representative per *class* of combinations is evaluated, and a class is built so that every member
provably selects what its representative selects and passes or fails the ranking invariants
(:func:`check_ranking`) alike. Nothing is sampled.

Why the classes are exact. Fix the *prefix* P = (device, scheme, request); the rest is four
*parts*: layout (shape and parallel shape), LoRA, activation, routing. In :func:`normalize` each
part sets its own fields and nothing else (:data:`LAYOUT_FIELDS`, :data:`LORA_FIELDS`,
:data:`ACT_FIELDS`, :data:`ROUTING_FIELDS`; layout fields also read the scheme's weight key, which
P fixes; the sweep sets no group size, quant method or model type, so the Marlin answer and the
quant fields are the prefix's): a config's values are the prefix's values overlaid with each
part's. :class:`Sweep` checks this on its axes at start (each part value changes only its fields).
The engine (vLLM 0.33 model, ``moe_oracle.core.engine.evaluate``) reads those values only through
predicates (``Predicate.test``), except for:

* the request name, the scheme and the raw all2all backend (request resolution, implied quant,
  the bound all2all backend: ``engine_request``, ``apply_implied_quant``, ``bind_all2all``):
  P fixes the first two, and the layout key carries the raw ``all2all_backend``, ``all2all``,
  ``dispatch`` and ``activation_format`` (the prepare/finalize is picked by ``dispatch``); for a
  request that binds an all2all backend the layout key is the parallel shape itself;
* the FP8 block rules (``apply_block_rules``) read shard sizes, hidden size, EP size and LoRA
  as numbers, but only when the weight key has a block (``weight_block`` set): then the layout and
  LoRA keys carry every raw value of their fields;
* rewrites, request maps and overrides change values, but their conditions read prefix fields
  only (checked at start), so they act alike on every member.

So two combinations of one prefix whose part values answer every predicate alike select alike
(same failure bits, orders, adjustments, opt-ins, shortcuts, winner and prepare/finalize) and
their rankings pass or fail the invariants alike. Which predicates are needed: every predicate of
the view outside the experts kernels' own checks (priority orders, adjustments, opt-ins,
overrides, shortcuts, request maps, block rules, prepare/finalize checks, known-bad rules), and
the checks of every *live* kernel. A kernel is *dead* under P when, in the decision of P's base
combination, it fails a check that reads no part field and whose rule is neither an
``after_selection`` nor a ``construction`` rule (the rules a selection may tolerate): that check
fails for every member of P (its inputs are prefix values), so the kernel is never eligible, and
every invariant reads it only as "has a failure" (``Row.failures`` non-empty). Kernels a shortcut
names are always live (a shortcut reads their failures' contents). A request the engine refuses
by name (a ``ConfigError`` on ``$.moe_backend``, raised before the config is read) refuses every
member of P.

``Sweep(..., reduce=False)`` evaluates every combination instead; ``tests/unit/test_sweep_reduction``
holds the two to the same answer, combination by combination, on a slice of the vocabulary.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

from ..core.catalog import Catalog
from ..core.checks import Check
from ..core.config import Device, MoEConfig, ParallelConfig
from ..core.engine import evaluate
from ..core.environment import Environment
from ..core.errors import ConfigError
from ..core.fields import NONE
from ..core.normalize import normalize
from ..core.predicates import Predicate
from ..core.quant import QuantScheme
from ..core.vocab import Activation, RoutingMethod

__all__ = ["ACT_FIELDS", "Axes", "ClassResult", "LAYOUT_FIELDS", "LORA_FIELDS", "ROUTING_FIELDS", "Sweep", "check_ranking", "make_config"]

ACT_FIELDS = frozenset({"activation", "is_gated", "swiglu_clamp", "swiglu_params", "swiglu_alpha", "swiglu_beta", "situ_beta", "situ_linear_beta"})
"""Fields the activation sets (with ``swiglu_limit`` 7.0 for the OAI SwiGLU variants, as GPT-OSS)."""
ROUTING_FIELDS = frozenset({"routing_method"})
LORA_FIELDS = frozenset({"lora"})
LAYOUT_FIELDS = frozenset({
    "num_experts", "top_k", "hidden_size", "intermediate_size", "num_local_experts", "intermediate_size_per_partition", "intermediate_divisible",
    "experts_even_across_ep", "weight_block", "weight_block_aligned", "weight_block_pad_refused", "tp_size", "dp_size", "moe_tp_size", "ep_size",
    "use_ep", "sequence_parallel", "all2all_backend", "all2all", "dispatch", "activation_format", "enable_eplb", "num_redundant_experts",
    "padded_hidden_size", "padded_weight_groups_aligned",
})
"""Fields the shape and parallel shape set (with the scheme's block: ``weight_block*``, which block rules rewrite)."""
_RAW_LAYOUT = ("all2all_backend", "all2all", "dispatch", "activation_format")
PART_FIELDS: Mapping[str, frozenset[str]] = {"layout": LAYOUT_FIELDS, "lora": LORA_FIELDS, "act": ACT_FIELDS, "routing": ROUTING_FIELDS}
_PARTS = ("layout", "lora", "act", "routing")

Shape = tuple[int, int, int, int]
Layout = tuple[Shape, str]
"""(shape (num_experts, top_k, hidden_size, intermediate_size), parallel-shape label)."""


@dataclass(frozen=True)
class Axes:
    """The vocabulary swept. ``parallels``: (label, ParallelConfig keywords). Explicit requests (any
    value but ``auto``) are swept over ``request_activations`` x ``request_routings`` only."""

    shapes: tuple[Shape, ...]
    devices: tuple[Device, ...]
    schemes: tuple[QuantScheme, ...]
    parallels: tuple[tuple[str, Mapping[str, Any]], ...]
    requests: tuple[str, ...]
    loras: tuple[bool, ...] = (False, True)
    activations: tuple[Activation, ...] = tuple(Activation)
    routings: tuple[RoutingMethod, ...] = tuple(RoutingMethod)
    request_activations: tuple[Activation, ...] = (Activation.SILU,)
    request_routings: tuple[RoutingMethod, ...] = (RoutingMethod.RENORMALIZE,)

    @property
    def layouts(self) -> tuple[Layout, ...]:
        return tuple((s, label) for s in self.shapes for label, _ in self.parallels)

    def size(self) -> int:
        """Combinations in the product."""
        n_layout = len(self.layouts) * len(self.loras) * len(self.devices) * len(self.schemes)
        auto = sum(1 for r in self.requests if r == "auto")
        return n_layout * (auto * len(self.activations) * len(self.routings) + (len(self.requests) - auto) * len(self.request_activations) * len(self.request_routings))


def make_config(device: Device, scheme: QuantScheme, request: str, layout: Layout, parallel: Mapping[str, Any], lora: bool, activation: Activation, routing: RoutingMethod) -> MoEConfig:
    (e, k, h, i), _ = layout
    limit = 7.0 if activation in (Activation.SWIGLUOAI, Activation.SWIGLUOAI_UNINTERLEAVE) else None
    return MoEConfig(num_experts=e, top_k=k, hidden_size=h, intermediate_size=i, device=device, activation=activation, routing_method=routing, quant=scheme,
                     swiglu_limit=limit, parallel=ParallelConfig(**parallel), lora=lora, moe_backend=request)


class ClassResult(NamedTuple):
    """One class of combinations: the prefix, each part's members (the first is the representative
    evaluated), and its answer: winning kernel and prepare/finalize ids (``None``: nothing eligible),
    ``refused`` (a ConfigError), ``broken`` (the invariant violated, else ``None``)."""

    device: Device
    scheme: str
    request: str
    layouts: tuple[Layout, ...]
    loras: tuple[bool, ...]
    acts: tuple[Activation, ...]
    routings: tuple[RoutingMethod, ...]
    kernel: str | None
    pf: str | None
    refused: bool
    broken: str | None

    @property
    def weight(self) -> int:
        return len(self.layouts) * len(self.loras) * len(self.acts) * len(self.routings)

    def members(self) -> Iterator[tuple[Layout, bool, Activation, RoutingMethod]]:
        return itertools.product(self.layouts, self.loras, self.acts, self.routings)


def check_ranking(d: Any) -> None:
    """The engine invariants that read the ranking; raises AssertionError.

    The winner is the first candidate without a failure (every candidate ranked above it has one),
    candidates come in backend blocks in the decision's backend order, monolithic first and then
    table order within a block, and a requested backend wins or has a failure on each of its
    candidates. Rows are materialized (``Ranking.row``) only where needed.
    """
    r = d.ranking
    view = r.view
    n = len(r.fixed) if r.fixed is not None else len(r.order)
    if d.shortcut is None:
        stop = d.winner if d.winner is not None else n
        for pos in range(stop):
            assert r.has_failure(pos), f"{r.entry(pos).id} ranked {pos + 1} has no failure but {d.kernel} won"
        backends = [r.entry(pos).backend for pos in range(n)]
        blocks = [b for k, b in enumerate(backends) if k == 0 or backends[k - 1] != b]
        assert len(blocks) == len(set(blocks)) and blocks == [b for b in d.backend_order if b in set(blocks)], blocks
        keys = [view.rank_key[r.index(pos)] for pos in range(n)]
        for b in blocks:
            mine = [k for k, bb in zip(keys, backends) if bb == b]
            assert mine == sorted(mine), f"{b}: not monolithic-first in table order"
    if d.winner is not None:
        assert not r.row(d.winner).failures, f"winner {d.kernel} has failures"
    if d.requested and d.shortcut is None:
        if d.winner is not None:
            assert r.entry(d.winner).backend in d.requested, f"{d.kernel} won, {d.requested} requested"
        else:
            assert all(r.has_failure(pos) for pos in range(n) if r.entry(pos).backend in d.requested)


@dataclass
class Sweep:
    """Evaluates :class:`Axes` under ``env`` class by class (module docstring); ``reduce=False``:
    one class per combination.

    Raises:
        AssertionError: at construction, when the tables or :func:`normalize` no longer fit the
            argument for exactness (a part value sets a field outside its part, or a rewrite,
            request map or override reads a part field).
    """

    catalog: Catalog
    env: Environment
    axes: Axes
    reduce: bool = True
    guard: bool = True
    evaluated: int = 0
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        cat = self.catalog
        release = cat.release(self.env) if cat.source is not None else None
        self.view = view = cat.for_release(release) if release is not None else cat
        self._assumed = release.assumed_packages if release is not None else None
        self._parallel = dict(self.axes.parallels)
        part_fields = frozenset().union(*PART_FIELDS.values())
        self.part_fields = part_fields
        for group in (view.rewrites, view.request_maps, view.overrides):
            for rule in group:
                read = {p.field for p in rule.when} & part_fields
                assert not read, f"{getattr(rule, 'id', rule)} reads {sorted(read)}: the sweep's classes assume such rules read prefix fields only"
        index = view.experts_index
        tolerated = view.after_selection | view.construction
        whens = [r.when for group in (view.rewrites, view.request_maps, view.overrides, view.block_rules, view.orders, view.adjustments, view.opt_in, view.shortcuts) for r in group]
        extra = [c for o in view.orders for c in o.excluded.values()] + [o.check for o in view.opt_in if o.check is not None]
        extra += [c for rm in view.request_maps for c in rm.checks.values()]
        self._levels = []
        for level, part in enumerate(_PARTS):
            remaining = frozenset().union(*(PART_FIELDS[q] for q in _PARTS[level:]))
            static = 0
            for i, ordered in enumerate(index.ordered):
                for n, chk in enumerate(ordered):
                    if not (set(chk.fields_read) & remaining) and chk.rule not in tolerated:
                        static |= 1 << (index.start[i] + n)
            read = lambda items: self._reads(items, remaining, PART_FIELDS[part])  # noqa: E731
            self._levels.append(_Level(part, static, tuple(read(o) for o in index.ordered), tuple(read(o) for o in view.pf_index.ordered),
                                       read([((), w) for w in whens]) + read(extra)))
        ids = {e.id: k for k, e in enumerate(view.experts)}
        self._always_live = frozenset(ids[k] for sc in view.shortcuts for k in (*sc.try_kernels, *((sc.otherwise,) if sc.otherwise else ()), *sc.selected) if k in ids)
        self._block_any = any(rw.weight is not None for rw in view.rewrites)
        self._bound_values = frozenset(view.bound_all2all.values())
        if self.guard:
            self._guard()

    @staticmethod
    def _reads(items: Any, remaining: frozenset[str], fields_: frozenset[str]) -> tuple[tuple[tuple[Predicate, ...], tuple[Predicate, ...]], ...]:
        """Per check (or ``((), when)`` pair): (its gates: the conditions, or ``when`` predicates, on
        fields already fixed, i.e. not in ``remaining``; its predicates on ``fields_``), for those
        that read ``fields_`` at all."""
        out = []
        for item in items:
            if isinstance(item, Check):
                gates = tuple(p for p in item.condition if p.field not in remaining)
                preds = tuple(p for p in (item.predicate, *item.condition) if p is not None and p.field in fields_)
            else:
                gates = tuple(p for p in item[1] if p.field not in remaining)
                preds = tuple(p for p in item[1] if p.field in fields_)
            if preds:
                out.append((gates, preds))
        return tuple(out)

    # -- part values ---------------------------------------------------------------------------
    def _values(self, config: MoEConfig) -> Mapping[str, Any]:
        return normalize(config, self.env, self.view.package_names, self.view.env_vars, self._assumed).values

    def _base(self, device: Device, scheme: QuantScheme, request: str = "auto") -> MoEConfig:
        a = self.axes
        layout = a.layouts[0]
        return make_config(device, scheme, request, layout, self._parallel[layout[1]], a.loras[0], a.activations[0], a.routings[0])

    def _part_config(self, base: MoEConfig, part: str, value: Any) -> MoEConfig:
        if part == "layout":
            (e, k, h, i), label = value
            return replace(base, num_experts=e, top_k=k, hidden_size=h, intermediate_size=i, parallel=ParallelConfig(**self._parallel[label]))
        if part == "lora":
            return replace(base, lora=value)
        if part == "act":
            return replace(base, activation=value, swiglu_limit=7.0 if value in (Activation.SWIGLUOAI, Activation.SWIGLUOAI_UNINTERLEAVE) else None)
        return replace(base, routing_method=value)

    def _part_values(self, part: str, value: Any, scheme: QuantScheme) -> Mapping[str, Any]:
        """The fields ``part`` sets for ``value`` (layout fields also depend on the scheme's block)."""
        key = ("values", part, value, scheme.name if part == "layout" else None)
        got = self._cache.get(key)
        if got is None:
            a = self.axes
            v = self._values(self._part_config(self._base(a.devices[0], scheme), part, value))
            got = self._cache[key] = {f: v[f] for f in PART_FIELDS[part]}
        return got

    def _guard(self) -> None:
        """On every device and scheme's base config: each part value changes only its part's
        fields, to the values :meth:`_part_values` holds for it (which are computed once per value,
        per scheme for layouts)."""
        a = self.axes
        reps = {"layout": a.layouts, "lora": a.loras, "act": (*a.activations, *a.request_activations), "routing": (*a.routings, *a.request_routings)}
        for scheme in a.schemes:
            for device in a.devices:
                base = self._base(device, scheme)
                ref = self._values(base)
                for part, values in reps.items():
                    for value in values:
                        got = self._values(self._part_config(base, part, value))
                        stray = sorted(k for k in got if got[k] != ref[k] and k not in PART_FIELDS[part])
                        assert not stray, f"{part} value {value!r} changes {stray}, outside its part: the sweep's classes would not be exact"
                        mine = self._part_values(part, value, scheme)
                        differ = sorted(k for k in mine if got[k] != mine[k])
                        assert not differ, f"{part} value {value!r} sets {differ} differently on {device}: the sweep's classes would not be exact"

    # -- classes -------------------------------------------------------------------------------
    def _relevant(self, level: "_Level", live: frozenset[int], values: Mapping[str, Any]) -> tuple[Predicate, ...]:
        """The predicates on ``level.part``'s fields that can change a selection once the prefix and
        the earlier parts are fixed (their final values: ``values``): those of the live kernels'
        checks, of their prepare/finalizes' checks, of the rules and of the checks held as records,
        less those gated off (a condition or ``when`` predicate on a fixed field that fails makes the
        check pass, or the rule not hold, for every member)."""

        def open_(gates: tuple[Predicate, ...]) -> bool:
            return all(values.get(g.field) is None or g.test(values[g.field]) for g in gates)

        preds: set[Predicate] = set()
        pfs = {j for k in live for j in self.view.pf_choice[k].values()}
        for group in (level.rules, *(level.kernels[k] for k in live), *(level.pfs[j] for j in pfs)):
            for gates, own in group:
                if open_(gates):
                    preds.update(own)
        return tuple(sorted(preds, key=lambda p: (p.field, repr(p.spec))))

    def _key(self, part: str, value: Any, scheme: QuantScheme, request: str, preds: tuple[Predicate, ...], live: frozenset[int]) -> tuple[Any, ...]:
        v = self._part_values(part, value, scheme)
        answers = tuple(None if v[p.field] is None else p.test(v[p.field]) for p in preds)
        raw: tuple[Any, ...] = ()
        if part == "layout":
            # The prepare/finalize each live kernel gets (picked by dispatch), and what the bound
            # all2all check reads (bind_all2all): the backend's membership, or the shape itself
            # under a request that binds one.
            choice = self.view.pf_choice
            raw = (tuple(choice[k].get(v["dispatch"]) for k in sorted(live)), v["all2all_backend"] in self._bound_values)
            if request in self.view.bound_all2all:
                raw += (value[1],)
        if part in ("layout", "lora") and self._block_kind(scheme):
            raw += tuple(sorted(v.items()))
        return answers, raw

    def _block_kind(self, scheme: QuantScheme) -> bool:
        """Whether block rules may read layout and LoRA values as numbers under ``scheme`` (its
        weight key has a block, or a rewrite may give it another weight key)."""
        return self._block_any or self._part_values("layout", self.axes.layouts[0], scheme)["weight_block"] not in (NONE, None)

    def _classes(self, part: str, values: Sequence[Any], scheme: QuantScheme, request: str, preds: tuple[Predicate, ...], live: frozenset[int]) -> list[tuple[Any, ...]]:
        groups: dict[Any, list[Any]] = {}
        for value in values:
            groups.setdefault(self._key(part, value, scheme, request, preds, live), []).append(value)
        return [tuple(m) for m in groups.values()]

    def prefixes(self) -> list[tuple[Device, QuantScheme, str]]:
        a = self.axes
        return [(d, s, r) for d in a.devices for s in a.schemes for r in a.requests]

    def run(self, device: Device, scheme: QuantScheme, request: str) -> list[ClassResult]:
        """Every class of the prefix (device, scheme, request), evaluated and checked.

        Parts are fixed one at a time (layout, LoRA, activation, routing): at each step the
        decision of the classes' representative so far (with the remaining parts at their first
        values) tells which kernels are dead whatever the remaining parts, and the next part's
        values are grouped by the predicates still relevant.
        """
        a = self.axes
        acts = a.activations if request == "auto" else a.request_activations
        routings = a.routings if request == "auto" else a.request_routings
        values = (a.layouts, a.loras, acts, routings)
        out: list[ClassResult] = []

        def leaf(members: tuple[tuple[Any, ...], ...], d: Any) -> None:
            if d is None:
                out.append(ClassResult(device, scheme.name, request, *members, None, None, True, None))
                return
            out.append(ClassResult(device, scheme.name, request, *members, d.kernel, d.prepare_finalize, False, self._verdict(d)))

        def attempt(rep: tuple[Any, ...]) -> tuple[Any, bool]:
            """(decision or None, whether a refusal covers every member sharing the fixed parts)."""
            try:
                return self._evaluate(device, scheme, request, *rep), False
            except ConfigError as exc:
                # engine_request (the name) and bind_all2all (name and raw all2all backend, which
                # the layout key carries) refuse before anything else is read.
                return None, all(i.path in ("$.moe_backend", "$.parallel.all2all_backend") for i in exc.issues)

        def solve(level: int, members: tuple[tuple[Any, ...], ...], d: Any, covers: bool) -> None:
            if level == len(_PARTS):
                leaf(members, d)
                return
            rest = values[level:]
            if d is None and covers and self.reduce:
                leaf(members + rest, None)
                return
            lv = self._levels[level]
            if d is None or not self.reduce:
                classes = [(v,) for v in rest[0]]
            else:
                masks = self.view.experts_index.masks
                fail = d.ranking.fail & lv.static
                live = frozenset(k for k, m in enumerate(masks) if not fail & m) | self._always_live
                classes = self._classes(lv.part, rest[0], scheme, request, self._relevant(lv, live, d.normalized.values), live)
            for cls in classes:
                if cls[0] == rest[0][0]:
                    solve(level + 1, members + (cls,), d, covers)
                else:
                    rep = tuple(m[0] for m in members) + (cls[0],) + tuple(v[0] for v in values[level + 1:])
                    child, child_covers = attempt(rep)
                    solve(level + 1, members + (cls,), child, child_covers)

        d0, covers0 = attempt(tuple(v[0] for v in values))
        solve(0, (), d0, covers0)
        return out

    def _verdict(self, d: Any) -> str | None:
        """:func:`check_ranking`'s verdict, memoized on everything it reads when the ranking has no
        reordered or patched rows (a pure function of the bit sets, orders and records)."""
        r = d.ranking
        key = None
        if r.fixed is None and not r.patched:
            recs = lambda m: tuple(sorted((b, tuple(map(id, cs))) for b, cs in m.items()))  # noqa: E731 (checks live as long as the view)
            key = ("verdict", r.order, r.dispatch, r.fail, r.pf_fail, r.kb_fail, recs(r.extra_fail), recs(r.own_fail), d.winner, d.shortcut, d.requested, d.backend_order)
            got = self._cache.get(key)
            if got is not None:
                return got[0]
        try:
            check_ranking(d)
            verdict = None
        except AssertionError as exc:
            verdict = str(exc) or "assertion failed"
        if key is not None:
            self._cache[key] = (verdict,)
        return verdict

    def _evaluate(self, device: Device, scheme: QuantScheme, request: str, layout: Layout, lora: bool, act: Activation, routing: RoutingMethod) -> Any:
        self.evaluated += 1
        return evaluate(self.catalog, make_config(device, scheme, request, layout, self._parallel[layout[1]], lora, act, routing), self.env)


class _Level(NamedTuple):
    """What fixing ``part`` reads: ``static``, the experts-check bits that read no field of this
    part or a later one and no rule a selection tolerates; per kernel, per prepare/finalize and for
    the rules and record-held checks, (gates, predicates on this part's fields) pairs."""

    part: str
    static: int
    kernels: tuple[Any, ...]
    pfs: tuple[Any, ...]
    rules: tuple[Any, ...]
