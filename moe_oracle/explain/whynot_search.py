"""The why-not search: best first over edit sets, each re-evaluated, cheapest first (:func:`search_eligible`),
and the greedy repair lint uses (:func:`repair`)."""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from itertools import chain, count
from typing import TYPE_CHECKING, Callable, Iterable, Iterator


from ..core.blocking import shortcut_raises
from ..core.checks import Check
from ..core.config import MoEConfig
from ..core.decision import Decision
from ..core.engine import evaluate
from ..core.fields import FIELDS
from ..core.requests import request_name
from ..core.stages import before_selection
from ..core.environment import Environment
from ..core.vocab import Policy, ReasonCode
from .whynot_edits import COSTS, Alternative, Edit, edit_text, request_decision
from .whynot_moves import EditGen, State, candidate_edits, condition_edits, wrap_config

if TYPE_CHECKING:
    from ..core.catalog import Catalog
    from ..core.ranking import Row

__all__ = ["MAX_EDITS", "MAX_EXPANSIONS", "MAX_REFUSED_SHOWN", "RefusedEdits", "SearchResult", "repair", "search_eligible", "target_failures"]


MAX_EXPANSIONS = 400


MAX_EDITS = 4


def target_failures(decision: Decision, target: Callable[["Row"], bool], *, selected: bool = False) -> tuple[list[Check] | None, str | None]:
    """Failing checks of the least-failing targeted candidate, or (None, kernel) if one is eligible.

    ``selected``: a layer the engine refuses after selecting a kernel (``Decision.refused``) has
    none: the failures to fix are that kernel's, whatever is eligible behind it.

    The checks vLLM raises on before it selects any kernel (a check binding every kernel, made
    before selection; the oracle's gate on a requested backend: ``Catalog.request_gates``) come
    first: the search edits for the first failing check, and nothing else is reached before
    they pass.
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
    if best:
        _raised_first(best, decision)
    return best or [], None


def _raised_first(failures: list[Check], decision: Decision) -> None:
    """Sort ``failures`` in place: the checks vLLM raises on before it selects any kernel first."""
    view = decision.ranking.view
    failures.sort(key=lambda c: not ((c.rule in view.layer_rules and before_selection(c.reference)) or c.rule in view.request_gates))


def _checks_to_fix(decision: Decision, target: Callable[["Row"], bool], failing: list[Check], selected: bool) -> list[Check]:
    """The check the search edits for: ``failing[0]`` (the least-failing targeted candidate's
    first), then the first of every other failing targeted candidate, fewest failures first, one
    per rule. A backend's candidates fail differently (FlashInfer TRT-LLM's BF16 kernel the
    quantization, its MxInt4 kernel an opt-in variable): editing only the first candidate's check
    misses the others' fixes, and under ``--keep quant`` finds none at all. A dead end's search
    (``selected``: any kernel will do, every candidate is targeted) keeps to ``failing[0]``: every
    candidate's first check would branch on nearly every input."""
    if selected:
        return failing[:1]
    others = []
    for row in sorted((r for r in decision.rows if r.failures and target(r)), key=lambda r: len(r.failures)):
        first = list(row.failures)
        _raised_first(first, decision)
        others.append(first[0])
    return list({c.rule: c for c in [failing[0], *others]}.values())


def _shortcut_escapes(decision: Decision, state: State, keep: frozenset[str]) -> Iterator[EditGen]:
    """A dead end where a shortcut's early return raises for its kernel: the edits of what the
    shortcut's condition reads (``--no-lora`` where vLLM's early return for LoRA on an
    unquantized layer tries a kernel this device lacks), besides those of the kernel's checks."""
    if shortcut_raises(decision) is None:
        return iter(())
    sc = next((s for s in decision.ranking.view.shortcuts if s.id == decision.shortcut), None)
    return condition_edits(sc.when, state, keep) if sc is not None else iter(())


@dataclass(frozen=True)
class RefusedEdits:
    """An edit set after which the target is eligible but the engine does not start:
    ``reason`` is its refusal (the ``admissible`` callable's message)."""

    edits: tuple[Edit, ...]
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"edits": [e.to_dict() for e in self.edits], "reason": self.reason}


MAX_REFUSED_SHOWN = 3
"""Refused edit sets :func:`search_eligible` keeps (cheapest first, one per distinct reason)."""


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
    refused_at_start: tuple[RefusedEdits, ...] = ()


def _key(edits: Iterable[Edit]) -> frozenset[str]:
    return frozenset(f"{e.target}={edit_text(e.after)}" for e in edits)


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
    admissible: Callable[[MoEConfig, Environment], bool | str | None] | None = None,
) -> SearchResult:
    """Up to ``n`` cheapest edit sets (each at most :data:`MAX_EDITS` edits, none in a ``keep``
    category, none a superset of a cheaper one) after which a row matching ``target`` has no
    failure under ``policy``, cheapest first (ties in the order found).

    ``admissible`` (config, environment) -> whether the engine starts with them at all: ``True``
    or ``None`` where it starts, ``False`` or the refusal's message (a str) where it does not.
    Edited inputs it refuses are no answer; those that made the target eligible are kept in
    ``refused_at_start`` (up to :data:`MAX_REFUSED_SHOWN`, one per message), so an answer that
    finds no fix can say which edits the engine refuses. The CLI passes
    :func:`moe_oracle.inputs.admissible.start_refusal`: no fix moves a checkpoint to a GPU whose
    platform vLLM refuses its method on, nor takes a start refusal of the model's.

    ``selected`` (a dead end's fixes): the layer must also not be refused after selection, and
    the request may be dropped or changed: ``moe_backend`` back to auto where the name maps to
    no kernel, or to the backend of an eligible candidate the refused kernel outranks."""
    tie = count()
    frontier: list[tuple[int, int, int, tuple[Edit, ...], State]] = [(0, 0, next(tie), (), (config, env))]
    seen: set[frozenset[str]] = set()
    explored = 0
    blocking: tuple[str, ...] = ()
    found: list[Alternative] = []
    refused: list[RefusedEdits] = []
    while frontier and explored < max_expansions and len(found) < n:
        cost, _, _, edits, state = heapq.heappop(frontier)
        if any(_key(a.edits) <= _key(edits) for a in found):
            continue  # contains a cheaper answer: not a different way
        explored += 1
        try:
            decision = evaluate(catalog, state[0], state[1], policy=policy)
        except Exception:  # noqa: BLE001 - an edit produced an invalid config; skip it
            continue
        failing, kernel = target_failures(decision, target, selected=selected)
        if failing is None:
            if not edits:
                return SearchResult(True, kernel, (), state[0], state[1], decision, (), explored)
            assert kernel is not None
            verdict = admissible(*state) if admissible is not None else None
            if verdict is False or isinstance(verdict, str):
                # The engine would not start with these inputs: no fix (and with the target
                # eligible here, no failing check proposes a further edit).
                reason = verdict if isinstance(verdict, str) else "the engine refuses to start with these inputs"
                if len(refused) < MAX_REFUSED_SHOWN and all(r.reason != reason for r in refused):
                    refused.append(RefusedEdits(edits, reason))
                continue
            unchecked = {w.rule for w in decision.warnings if w.code == "unchecked"} if decision.winner is not None else set()
            if not unchecked:
                backend = next(r.entry.backend for r in decision.rows if r.entry.id == kernel)
                if decision.shortcut is not None and decision.kernel != kernel and request_name(decision.ranking.view, backend) == state[0].moe_backend:
                    continue  # requested, yet a shortcut returns its own kernel before reading the request: no fix
                requested = request_decision(catalog, state[0], state[1], backend, policy=policy) if decision.kernel != kernel else None
                alt = Alternative(edits, kernel, state[0], state[1], decision, requested)
                # Another way to the same inputs (a preset that only drops --ep, as --no-ep did) is no new fix.
                if not any((a.config == alt.config and a.environment.fingerprint == alt.environment.fingerprint) or a.describe() == alt.describe() for a in found):
                    _add_undominated(found, alt)
                continue
            # The engine selects a kernel whose unchecked check (its prepare/finalize's) fails when
            # it is built: no fix yet, but an edit that satisfies that check may make one.
            failing = _checks_named(decision, unchecked)
        if not edits:
            blocking = tuple(f"{c.code.value}: {c.field} [{c.rule}]" for c in failing)
        if len(edits) >= MAX_EDITS or not failing:
            continue
        values = dict(decision.normalized.values)
        proposals = chain.from_iterable(candidate_edits(c, state, values, keep) for c in _checks_to_fix(decision, target, failing, selected))
        if "flags" not in keep:
            proposals = chain(proposals, _backend_requests(decision, target, state))
        if selected and "flags" not in keep:
            proposals = chain(_request_edits(catalog, decision, target, state), proposals)
        if selected:
            proposals = chain(_shortcut_escapes(decision, state, keep), proposals)
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
        return SearchResult(True, best.kernel, best.edits, best.config, best.environment, best.decision, (), explored, tuple(found), tuple(refused))
    return SearchResult(False, None, (), config, env, None, blocking, explored, (), tuple(refused))


def _add_undominated(found: list[Alternative], alt: Alternative) -> None:
    """Add ``alt`` to ``found`` unless a fix found holds a subset of its options (``--ep`` against
    the redeployment ``--tp 1 --dp 3 --ep --all2all X``: the edit keys differ, the flags do not),
    and drop the fixes found that hold ``alt``'s and more (a tie found first)."""
    if any(a.dominates(alt) for a in found):
        return
    found[:] = [a for a in found if not alt.dominates(a)]
    found.append(alt)


def _checks_named(decision: Decision, rules: set[str]) -> list[Check]:
    """The checks with these rule ids, as some candidate of ``decision`` failed them (a waived
    check is not kept on the winner's row; a candidate that shares the prepare/finalize fails it)."""
    out: dict[str, Check] = {}
    for row in decision.rows:
        for chk in row.failures:
            if chk.rule in rules:
                out.setdefault(chk.rule, chk)
    return [out[r] for r in sorted(out)]


def _reads_request(chk: Check) -> bool:
    """``chk`` reads ``moe_backend``, itself or through a derived field (the FP8 weight block vLLM
    refines, or pads the TP shard to, for an explicit backend; the dispatch)."""
    return any(f == "moe_backend" or (f in FIELDS and "moe_backend" in FIELDS[f].inputs) for f in chk.fields_read)


def _backend_requests(decision: Decision, target: Callable[["Row"], bool], state: State) -> Iterator[EditGen]:
    """``--moe-backend NAME`` for each targeted candidate whose failures all read the request: an
    explicit backend changes what they check (vLLM 0.31.0+ pads the FP8 TP shard to whole blocks
    for an explicit backend, ``P/oracle/fp8.py`` ``pad_tp_shard_to_weight_blocks``), so requesting
    it may be the one-flag fix. The search re-evaluates each (the padding may itself be refused:
    ``constraint.fp8_block_tp_padding``), so a request that leaves a failure is no fix."""
    config = state[0]
    view = decision.ranking.view
    asked: list[str] = []
    for row in decision.rows:
        if row.failures and target(row) and all(_reads_request(c) for c in row.failures):
            name = request_name(view, row.entry.backend)
            if name not in asked and name not in ("auto", config.moe_backend):
                asked.append(name)
    for name in asked:
        yield "moe_backend", wrap_config(lambda c, v=name: replace(c, moe_backend=v)), config.moe_backend, name, COSTS["flag"]


def _request_edits(catalog: "Catalog", decision: Decision, target: Callable[["Row"], bool], state: State) -> Iterator[EditGen]:
    """``moe_backend`` edits a dead end's request suggests: ``auto`` where the name maps to no
    kernel of this layer, or where no requested kernel can run (the engine raises: vLLM has no
    fallback from an explicit request, so the request is the dead end; the fixes that keep
    the request come from the requested kernels' failures); and, where the engine
    selects a kernel and then refuses the layer, the backend of each eligible targeted candidate
    ranked after it, and under an explicit request the backend of each candidate that fails
    nothing but not being requested, ``auto`` first (a check made after selection refuses
    the requested kernel: ``--quantization fp8_per_channel --moe-backend marlin``). The search
    re-checks each: an edit that selects nothing is no fix."""
    config = state[0]
    current = config.moe_backend
    if current != "auto" and decision.winner is None and decision.refused is None:
        yield "moe_backend", wrap_config(lambda c: replace(c, moe_backend="auto")), current, "auto", COSTS["flag"]
    if decision.refused is None:
        return
    asked: list[str] = ["auto"] if current != "auto" else []  # dropping the request first: the least change
    for pos, row in enumerate(decision.rows):
        if pos == decision.refused:
            continue
        after = pos > decision.refused and not row.failures and target(row)
        # Outside the target too: once requested it has no failure, which the dead end's target takes.
        unrequested = current != "auto" and row.failures and all(c.code is ReasonCode.NOT_REQUESTED for c in row.failures)
        if after or unrequested:
            name = request_name(catalog, row.entry.backend)
            if name not in asked and name not in ("auto", current):
                asked.append(name)
    for name in asked:
        yield "moe_backend", wrap_config(lambda c, v=name: replace(c, moe_backend=v)), current, name, COSTS["flag"]


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
        failing, kernel = target_failures(decision, target)
        if failing is None:
            return SearchResult(True, kernel, edits, state[0], state[1], decision, (), explored)
        if not failing:
            break
        chk = failing[0]
        best: tuple[int, int, State, Edit] | None = None
        for name, apply, before, after, edit_cost in candidate_edits(chk, state, dict(decision.normalized.values)):
            try:
                new_state = apply(state)
                if (new_state[0], new_state[1].fingerprint) in visited:
                    continue  # never undo an earlier repair: that oscillates
                trial = evaluate(catalog, new_state[0], new_state[1], policy=policy)
            except Exception:  # noqa: BLE001 - an edit produced an invalid config; try the next
                continue
            explored += 1
            still, _ = target_failures(trial, target)
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
