"""What blocks a dead end: the refusal vLLM raises, or the checks that reject the candidates.

:func:`blockers` is what a dead end leads with (:mod:`moe_oracle.core.render` words it): where
vLLM itself raises before it selects any kernel (:func:`engine_refusal`: a check binding every
kernel made before selection, or the oracle's gate on a backend requested by name), that refusal
alone; where the engine selects or tries a kernel and then refuses the layer
(:attr:`~moe_oracle.core.decision.Decision.refused`), that kernel's refusing checks
(:func:`refusing_checks`); a ``moe_backend`` the layer's oracle maps to no kernel
(:func:`unmapped_request`); otherwise the (reason code, field) pairs that reject every, or nearly
every, candidate meant for this device and quantization (:func:`relevant`), each with what its
rules allow between them. Every view reads the Decision's rows; nothing here formats text.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .failures import make_failure, table_order
from .records import Failure
from .stages import STAGES, before_selection, rule_stage
from .vocab import ReasonCode, Source

if TYPE_CHECKING:
    from .decision import Decision

__all__ = ["IRRELEVANT", "IRRELEVANT_MASK", "NEARLY_EVERY", "Blocker", "EngineRefusal", "blockers", "engine_refusal", "refusal_stage", "refusing_checks", "relevant", "shortcut_raises", "unmapped_request"]

# Codes that say "this kernel is for another problem", not "this deployment is wrong";
# explain folds candidates that fail any of these (shown with --all).
IRRELEVANT = frozenset({ReasonCode.QUANT_UNSUPPORTED, ReasonCode.PLATFORM_UNSUPPORTED, ReasonCode.NOT_REQUESTED})

# A rule "blocks" when it rejects at least this share of the candidates meant for the problem.
NEARLY_EVERY = 0.75


@dataclass(frozen=True)
class Blocker:
    """One (reason code, field) pair and the candidates it rejects.

    Attributes:
        code, field: what fails.
        rejected: how many of ``of`` candidates it rejects.
        of: the candidates considered (those meant for this device and quantization).
        failure: one representative failure (observed value, hint, reference); its ``allowed``
            is what the rules behind the pair allow between them where each allows a list of
            values (their union, in table order), else the first rule's.
        rules: every rule id behind it, in table order.
        raised_at: where vLLM itself raises this refusal (one of
            :data:`moe_oracle.core.stages.STAGES`): before selecting a kernel
            (:func:`engine_refusal`), or after selecting the refused kernel (the earliest stage of
            its refusing checks, :func:`refusing_checks`; ``construction`` when building it
            raises); else ``None``.
        allowed_differ: the rules allow different values and no union says it (a range here, a
            list there): the text says so instead of showing one rule's.
        allowed_union: ``failure.allowed`` is the union of the rules' different lists.
    """

    code: ReasonCode
    field: str
    rejected: int
    of: int
    failure: Failure
    rules: tuple[str, ...]
    raised_at: str | None = None
    allowed_differ: bool = False
    allowed_union: bool = False


@dataclass(frozen=True)
class EngineRefusal:
    """What vLLM raises in a dead end before it selects any kernel (:func:`engine_refusal`).

    Attributes:
        kind: ``layer`` (checks that bind every kernel, ``Catalog.layer_rules``, made at start,
            in the layer factory or at the top of the family's oracle) or ``request`` (the
            family's oracle checks a backend requested by name and raises before trying its
            kernels: ``Catalog.request_gates``).
        stage: where vLLM raises it: ``config``, ``layer`` or ``selection``
            (:data:`moe_oracle.core.stages.STAGES`), the earliest of its checks.
        checks: the failing checks vLLM makes there, in table order.
    """

    kind: str
    stage: str
    checks: tuple[Any, ...]


def _memo(decision: "Decision", key: str, compute: Any) -> Any:
    """``compute(decision)``, once per decision (the views below read the same facts several times)."""
    memo = decision.view_memo
    if key not in memo:
        memo[key] = compute(decision)
    return memo[key]


def _mask(codes: Iterable[ReasonCode]) -> int:
    """``codes`` as a bit set in ``Decision.code_masks``' layout."""
    order = list(ReasonCode)
    return sum(1 << order.index(c) for c in set(codes))


IRRELEVANT_MASK = _mask(IRRELEVANT)
"""``IRRELEVANT`` as a bit set in ``Decision.code_masks``' layout."""
_OTHER_PROBLEM_MASK = _mask({ReasonCode.QUANT_UNSUPPORTED, ReasonCode.PLATFORM_UNSUPPORTED})


def relevant(decision: "Decision") -> tuple[list[int], str, str]:
    """The rejected candidates a dead end is about (rank positions), and how to name one and
    several of them.

    A strict request: the requested backends' candidates (those for this device and
    quantization, when any are). Otherwise those not rejected for another quant scheme,
    platform or request; when that leaves none, every candidate.

    Read from the rows' checks: no failure records are built for the candidates left out.
    """
    return _memo(decision, "relevant", _find_relevant)


def _find_relevant(decision: "Decision") -> tuple[list[int], str, str]:
    rows = decision.rows
    codes = decision.code_masks
    rejected = [pos for pos, c in enumerate(codes) if c]
    if decision.requested:
        asked = [pos for pos in rejected if rows[pos].entry.backend in decision.requested]
        if asked:
            meant = [pos for pos in asked if not codes[pos] & _OTHER_PROBLEM_MASK]
            if meant:
                return meant, "candidate of the requested backend for this device and quantization", "candidates of the requested backend for this device and quantization"
            return asked, "candidate of the requested backend", "candidates of the requested backend"
    meant = [pos for pos in rejected if not codes[pos] & IRRELEVANT_MASK]
    if meant:
        return meant, "candidate for this device and quantization", "candidates for this device and quantization"
    return rejected, "candidate", "candidates"


def unmapped_request(decision: "Decision") -> tuple[str, str | None, tuple[str, ...], str] | None:
    """When ``moe_backend`` names no backend this layer's oracle maps to a kernel (the engine raises):
    (the name, the family's request map id or ``None``, the names that would be read, the
    reference); else ``None``."""
    return _memo(decision, "unmapped", _find_unmapped)


def _find_unmapped(decision: "Decision") -> tuple[str, str | None, tuple[str, ...], str] | None:
    if decision.requested != () or decision.requested_by != "moe_backend":
        return None
    from .requests import request_map

    view = decision.ranking.view
    values = decision.normalized.values
    rm = request_map(view, values)
    if rm is not None:
        return str(values["moe_backend"]), rm.id, ("auto", *sorted(set(rm.names) | set(rm.auto))), rm.reference
    accepted = view.accepted_names
    names = sorted(n for n in view.backend_names if accepted is None or n in accepted)
    return str(values["moe_backend"]), None, ("auto", *names), ""


def _unmapped_blocker(decision: "Decision") -> Blocker:
    name, rule, allowed, reference = unmapped_request(decision)  # type: ignore[misc]
    family = decision.normalized.values.get("quant_family")
    if rule is not None:
        hint = (f"this {family} layer's oracle maps moe_backend={name} to no kernel ({rule}: it reads auto or one of {', '.join(allowed[1:])}), "
                f"and the engine raises; drop --moe-backend or request one of those")
    else:
        hint = f"moe_backend={name} names no backend modelled for this layer; drop --moe-backend or request one of {', '.join(allowed[1:])}"
    n = len(decision.rows)
    failure = Failure.of(ReasonCode.NOT_REQUESTED, "moe_backend", name, list(allowed), rule or "moe_backend",
                         decision.normalized.sources.get("moe_backend", Source.USER_FLAG), hint, reference)
    return Blocker(ReasonCode.NOT_REQUESTED, "moe_backend", n, n, failure, (rule or "moe_backend",))


def engine_refusal(decision: "Decision") -> EngineRefusal | None:
    """The refusal vLLM raises in a dead end before it selects any kernel, where the tables say
    one: else ``None`` (also with a winner, or when the engine selects a kernel and then refuses
    the layer, :attr:`~moe_oracle.core.decision.Decision.refused`).

    1. Checks that bind every kernel (``Catalog.layer_rules``) and that vLLM makes before it
       selects (:func:`moe_oracle.core.stages.before_selection`): the layer is refused at the
       earliest of their stages, whatever else the candidates fail (e.g. vLLM 0.34.0
       P/oracle/unquantized.py raises "MoE LoRA requires a Standard activation layout" before
       it tries any kernel).
    2. With a strict request, the oracle's gate on the requested backend (``Catalog.request_gates``,
       e.g. vLLM 0.29.0-0.34.0 P/oracle/fp8.py raises "vLLM CUTLASS FP8 MoE backend is disabled for
       this configuration." before it checks the kernel).
    """
    return _memo(decision, "engine_refusal", _find_engine_refusal)


def _find_engine_refusal(decision: "Decision") -> EngineRefusal | None:
    if decision.winner is not None or decision.refused is not None:
        return None
    view = decision.ranking.view
    layer = view.layer_rules
    found: dict[str, Any] = {}
    for row in decision.rows:
        for chk in row.failures:
            if chk.rule in layer and chk.rule not in found and before_selection(chk.reference):
                found[chk.rule] = chk
    if found:
        stages = {rule: rule_stage(chk.reference) for rule, chk in found.items()}
        stage = min(stages.values(), key=STAGES.index)
        return EngineRefusal("layer", stage, tuple(table_order([c for r, c in found.items() if stages[r] == stage])))
    gates = view.request_gates
    if decision.requested and gates:
        asked = [row for row in decision.rows if row.entry.backend in decision.requested]
        hit: dict[str, Any] = {}
        for row in asked:
            for chk in row.failures:
                if chk.rule in gates:
                    hit.setdefault(chk.rule, chk)
        if hit:
            return EngineRefusal("request", "selection", tuple(table_order(list(hit.values()))))
    return None


def _engine_blockers(decision: "Decision", refusal: EngineRefusal) -> tuple[Blocker, ...]:
    """One blocker per (code, field) of ``refusal``'s checks: how many candidates fail it (of
    every candidate for a layer refusal, of the requested backend's for a request gate)."""
    rows = decision.rows
    pool = [row for row in rows if row.entry.backend in decision.requested] if refusal.kind == "request" and decision.requested else list(rows)
    groups: dict[tuple[ReasonCode, str], list[Any]] = {}
    for chk in refusal.checks:
        groups.setdefault((chk.code, chk.field), []).append(chk)
    out = []
    for (code, field), checks in groups.items():
        rules = tuple(dict.fromkeys(c.rule for c in checks))
        rejected = sum(1 for row in pool if any(c.rule in rules for c in row.failures))
        out.append(Blocker(code, field, max(rejected, 1), max(len(pool), 1), make_failure(checks[0], decision.normalized), rules, refusal.stage))
    return tuple(out)


# Checks an early return does not read: it runs before moe_backend and the priority order.
_UNREAD_BY_SHORTCUT = frozenset({ReasonCode.NOT_REQUESTED, ReasonCode.PATH_NOT_ENABLED})


def refusing_checks(decision: "Decision") -> list[Any]:
    """The checks that refuse the layer for the kernel the engine selected or tried
    (:attr:`~moe_oracle.core.decision.Decision.refused`), in table order; ``[]`` without one.

    Where a shortcut's early return raises for the kernel (``return_or_raise``,
    :func:`shortcut_raises`), the failing checks it reads (vLLM raises there, before any later
    check); else its ``after_selection`` checks (the engine selected it, then refused the layer);
    where a shortcut took the path and there are none, the failing checks its early return reads:
    not the request and priority checks, not those vLLM makes only when it builds the kernel."""
    if decision.refused is None:
        return []
    view = decision.ranking.view
    failures = table_order(decision.rows[decision.refused].failures)
    post = [c for c in failures if c.rule in view.after_selection]
    if decision.shortcut is None:
        return post
    return _raised_in_shortcut(decision, failures) or post or _read_by_shortcut(view, failures)


def _read_by_shortcut(view: Any, failures: list[Any]) -> list[Any]:
    """The ``failures`` a shortcut's early return reads: not the request and priority checks, not
    those vLLM makes only when it builds the kernel or after the oracle returned."""
    return [c for c in failures if c.code not in _UNREAD_BY_SHORTCUT and c.rule not in view.construction and c.rule not in view.after_selection]


def _raised_in_shortcut(decision: "Decision", failures: list[Any]) -> list[Any]:
    """The checks the shortcut's early return reads and raises for (``return_or_raise``: no
    ``otherwise`` kernel, and its last ``try`` kernel fails them): vLLM raises in the oracle,
    before any ``after_selection`` check (an EPLB gate, construction, the LoRA wrapper) is made.
    ``[]`` where the early return returned its kernel (unchecked, or passing what it reads)."""
    view = decision.ranking.view
    sc = next((s for s in view.shortcuts if s.id == decision.shortcut), None)
    if sc is None or sc.otherwise is not None:
        return []
    return _read_by_shortcut(view, failures)


def shortcut_raises(decision: "Decision") -> str | None:
    """Where the layer is refused because a shortcut's early return raises for its kernel (it
    fails checks the early return reads, and no ``after_selection`` one unless the early return
    raises for the others first): the shortcut's label (``for LoRA on an unquantized layer``);
    else ``None``."""
    if decision.refused is None or decision.shortcut is None:
        return None
    view = decision.ranking.view
    failures = list(decision.rows[decision.refused].failures)
    if any(c.rule in view.after_selection for c in failures) and not _raised_in_shortcut(decision, failures):
        return None
    sc = next((s for s in view.shortcuts if s.id == decision.shortcut), None)
    return sc.label if sc is not None else decision.shortcut


def _refusal_blockers(decision: "Decision") -> tuple[Blocker, ...]:
    groups: dict[tuple[ReasonCode, str], list[Any]] = {}
    for chk in refusing_checks(decision):
        groups.setdefault((chk.code, chk.field), []).append(chk)
    return tuple(
        Blocker(code, field, 1, 1, make_failure(checks[0], decision.normalized), tuple(dict.fromkeys(c.rule for c in checks)), refusal_stage(checks))
        for (code, field), checks in groups.items()
    )


def refusal_stage(checks: Sequence[Any]) -> str:
    """The stage (:data:`moe_oracle.core.stages.STAGES`) at which vLLM raises for ``checks`` (the
    refusing checks of a selected kernel): the earliest their references cite.

    >>> from types import SimpleNamespace as C
    >>> refusal_stage([C(reference="vLLM 0.34.0 P/unquantized_fused_moe_method.py process_weights_after_loading")])
    'construction'
    >>> refusal_stage([C(reference="vLLM 0.34.0 P/x.py create_weights"), C(reference="vLLM 0.33.0 Q/auto_gptq.py; P/routed_experts.py EPLB gate")])
    'layer'
    """
    return min((rule_stage(c.reference) for c in checks), key=STAGES.index)


def blockers(decision: "Decision", limit: int = 3) -> tuple[Blocker, ...]:
    """What rejects every (or nearly every) candidate meant for this device and quantization.

    Candidates rejected for another quant scheme, platform or backend request are left out
    (unless nothing else is left). Each (code, field) pair counts a candidate once; pairs that
    reject at least :data:`NEARLY_EVERY` of them are returned, most first (ties: reason-code
    order); when none reaches that share, the most frequent pair is returned alone. A pair's
    allowed values are what its rules allow between them (:attr:`Blocker.failure`).

    Three dead ends are not about many candidates: a refusal vLLM raises before it selects any
    kernel (:func:`engine_refusal`: its checks, with ``raised_at``; one made at start comes
    before anything else), a ``moe_backend`` this layer's oracle maps to no kernel (one blocker:
    the name, with the names it reads), and a kernel the engine selected and then refused the
    layer for (its ``after_selection`` failures, 1 of 1 candidate: the eligible candidates
    ranked after it are never tried).
    """
    refusal = engine_refusal(decision)
    if refusal is not None and refusal.stage == "config":
        return _engine_blockers(decision, refusal)
    if unmapped_request(decision) is not None:
        return (_unmapped_blocker(decision),)
    if refusal is not None:
        return _engine_blockers(decision, refusal)
    if decision.refused is not None:
        return _refusal_blockers(decision)
    pool = relevant(decision)[0]
    if not pool:
        return ()
    rows = decision.rows
    groups: dict[tuple[ReasonCode, str], list[Any]] = {}
    hit: Counter[tuple[ReasonCode, str]] = Counter()
    for pos in pool:
        seen = set()
        for chk in table_order(rows[pos].failures):
            key = (chk.code, chk.field)
            groups.setdefault(key, []).append(chk)
            if key not in seen:
                hit[key] += 1
                seen.add(key)
    order = {code: i for i, code in enumerate(ReasonCode)}
    # Ties go in the order the tables check (each row's failures in table order, rows in rank
    # order): vLLM 0.34.0's LoRA wrapper raises on the expert placement before the all2all.
    first = {k: i for i, k in enumerate(groups)}
    ranked = sorted(hit, key=lambda k: (-hit[k], order[k[0]], first[k]))
    need = math.ceil(NEARLY_EVERY * len(pool))
    chosen = [k for k in ranked if hit[k] >= need][:limit] or ranked[:1]
    out = []
    for k in chosen:
        first = make_failure(groups[k][0], decision.normalized)
        allowed, differ = _allowed_between(groups[k])
        out.append(Blocker(k[0], k[1], hit[k], len(pool), first if allowed is None else replace(first, allowed=allowed), tuple(dict.fromkeys(c.rule for c in groups[k])), None, differ, allowed is not None))
    return tuple(out)


def _allowed_between(checks: Sequence[Any]) -> tuple[list[Any] | None, bool]:
    """What ``checks`` (one (code, field) pair's) allow between them: (the union of their value
    lists in order, when each allows a list and they differ; ``None`` when they all allow the
    same), and whether they differ with no union to show (a range here, a list there).

    >>> from types import SimpleNamespace as C
    >>> _allowed_between([C(allowed_value=["a"]), C(allowed_value=["b", "a"])])
    (['a', 'b'], False)
    >>> _allowed_between([C(allowed_value={"min": 2}), C(allowed_value=["a"])])
    (None, True)
    """
    values = [c.allowed_value for c in checks]
    distinct = [v for i, v in enumerate(values) if v not in values[:i]]
    if len(distinct) <= 1:
        return None, False
    if all(isinstance(v, (list, tuple)) for v in distinct):
        union: list[Any] = []
        for v in distinct:
            union += [x for x in v if x not in union]
        return union, False
    return None, True
