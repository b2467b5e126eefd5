"""The Decision: one frozen record of a selection, with several views.

``to_dict()`` follows ``schemas/decision.schema.json`` (its key names are the
artifact format); the text views live in :mod:`moe_oracle.core.render` (``render_text()`` and
``render_failure()`` delegate there), ``describe()`` is a one-line log message, ``summary()``
counts each rejected candidate under its first reason code. Failure records are
materialized lazily from the compiled checks, so ``select`` stays cheap.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from .checks import Check, Tolerance
from .config import MoEConfig
from .environment import Environment
from .errors import MoEOracleError
from .failures import make_failure, table_order
from .normalize import Normalized
from .records import _SCALARS, Assumption, CandidateResult, DecisionWarning, Demotion, Failure, Status, json_copy, jsonable
from .vocab import ReasonCode, Source

if TYPE_CHECKING:
    from .catalog import Catalog, ExpertsEntry, PrepareFinalizeEntry
    from .versions import EngineRelease

__all__ = ["DECISION_FORMAT_VERSION", "Decision", "NoEligibleKernelError", "Ranking", "Row"]

DECISION_FORMAT_VERSION = 2

_DERIVED = Source.DERIVED.value
_NO_PATCHES: Mapping[int, Row] = MappingProxyType({})
_CODE_VALUES = tuple(code.value for code in ReasonCode)


class Row(NamedTuple):
    """One candidate as the engine left it: entry, paired P/F, failing and abstaining checks.

    Checks are in evaluation order; views sort them into table order (``Check.seq``).

    A NamedTuple (immutable) rather than a dataclass: the engine builds one per kernel per
    selection, and this is the cheapest immutable record.
    """

    index: int
    entry: "ExpertsEntry"
    pf: "PrepareFinalizeEntry | None"
    failures: tuple[Check, ...]
    abstentions: tuple[Check, ...]


@dataclass(frozen=True, eq=False)
class Ranking:
    """Every candidate in rank order, as the engine evaluated it; :attr:`rows` materializes them.

    Failures and abstentions are kept as the bit sets the indices returned
    (:meth:`~moe_oracle.core.checks.CheckIndex.evaluate`), so a selection does not pay for per-check
    records; a row's checks are read back in evaluation order: the kernel's own, its known-bad
    rules (safe policy only), the checks a family's request map adds for it, its
    prepare/finalize's, then the checks that reject its whole backend (priority exclusion, opt-in).

    Attributes:
        view: the catalog view evaluated.
        order: kernel indices (into ``view.experts``) in rank order.
        dispatch: the prepare/finalize kind (picks each kernel's prepare/finalize).
        fail, abstain: bit sets over ``view.experts_index``.
        pf_fail, pf_abstain: bit sets over ``view.pf_index``.
        kb_fail, kb_abstain: bit sets over ``view.known_bad_index`` (``None``: known-bad rules
            are not among the failures, the faithful policy).
        extra_fail, extra_abstain: backend -> checks that reject (or abstain for) all its kernels.
        own_fail: kernel index -> checks that reject that kernel alone (a family's request map:
            vLLM ``map_<family>_backend`` reads ``moe_backend`` itself).
        fixed: rows as given, in rank order (a shortcut reordered them); overrides the rest.
        patched: rank position -> the row that stands there instead of the evaluated one (a
            winner whose deferred checks were waived, a shortcut's unchecked replacement).
    """

    view: "Catalog"
    order: tuple[int, ...]
    dispatch: Any
    fail: int
    abstain: int
    pf_fail: int
    pf_abstain: int
    kb_fail: int | None
    kb_abstain: int | None
    extra_fail: Mapping[str, tuple[Check, ...]]
    extra_abstain: Mapping[str, tuple[Check, ...]]
    own_fail: Mapping[int, tuple[Check, ...]] = field(default_factory=dict)
    fixed: tuple[Row, ...] | None = None
    patched: Mapping[int, Row] = field(default_factory=dict)

    @classmethod
    def of(cls, view: "Catalog", order: tuple[int, ...], dispatch: Any, fail: int, abstain: int, pf_fail: int, pf_abstain: int, kb_fail: int | None, kb_abstain: int | None,
           extra_fail: Mapping[str, tuple[Check, ...]], extra_abstain: Mapping[str, tuple[Check, ...]], own_fail: Mapping[int, tuple[Check, ...]]) -> "Ranking":
        """``Ranking(...)`` by position (no ``fixed``, no ``patched``), built without the frozen
        ``__init__`` (see ``Failure.of``): one per selection."""
        record = object.__new__(cls)
        record.__dict__.update(view=view, order=order, dispatch=dispatch, fail=fail, abstain=abstain, pf_fail=pf_fail, pf_abstain=pf_abstain, kb_fail=kb_fail,
                               kb_abstain=kb_abstain, extra_fail=extra_fail, extra_abstain=extra_abstain, own_fail=own_fail, fixed=None, patched=_NO_PATCHES)
        return record

    def index(self, pos: int) -> int:
        """Kernel index (into ``view.experts``) of the candidate at rank position ``pos``."""
        return self.fixed[pos].index if self.fixed is not None else self.order[pos]

    def entry(self, pos: int) -> "ExpertsEntry":
        return self.view.experts[self.index(pos)]

    def pf(self, pos: int) -> "PrepareFinalizeEntry | None":
        if self.fixed is not None:
            return self.fixed[pos].pf
        j = self.view.pf_choice[self.order[pos]].get(self.dispatch)
        return self.view.prepare_finalize[j] if j is not None else None

    def position(self, kernel_id: str) -> int:
        """Rank position of the kernel with id ``kernel_id``.

        Raises:
            StopIteration: no such candidate (a linked shortcut names only kernels of its view).
        """
        experts = self.view.experts
        return next(pos for pos in range(len(self.order) if self.fixed is None else len(self.fixed)) if experts[self.index(pos)].id == kernel_id)

    def row(self, pos: int) -> Row:
        """The candidate at rank position ``pos`` (without materializing the others)."""
        if self.fixed is not None:
            return self.fixed[pos]
        if "rows" in self.__dict__:
            return self.rows[pos]
        patched = self.patched.get(pos)
        return patched if patched is not None else self._row(self.order[pos])

    def has_failure(self, pos: int) -> bool:
        """Whether the candidate at rank position ``pos`` has a failing check (``row(pos).failures``
        non-empty), read off the bit sets without materializing the row."""
        if self.fixed is not None or pos in self.patched or "rows" in self.__dict__:
            return bool(self.row(pos).failures)
        view = self.view
        k = self.order[pos]
        if self.fail & view.experts_index.masks[k] or k in self.own_fail or view.experts[k].backend in self.extra_fail:
            return True
        if self.kb_fail and view.known_bad_index is not None:
            kb = view.known_bad_position.get(k)
            if kb is not None and self.kb_fail & view.known_bad_index.masks[kb]:
                return True
        j = view.pf_choice[k].get(self.dispatch)
        return j is not None and bool(self.pf_fail & view.pf_index.masks[j])

    def with_row(self, pos: int, row: Row | None) -> "Ranking":
        """This ranking with ``row`` at rank position ``pos`` (``None``: the evaluated row again)."""
        if self.fixed is not None:
            rows = list(self.fixed)
            rows[pos] = row if row is not None else self.fixed[pos]
            return replace(self, fixed=tuple(rows))
        patched = {k: v for k, v in self.patched.items() if k != pos}
        if row is not None:
            patched[pos] = row
        return replace(self, patched=MappingProxyType(patched))

    def first_eligible(self, tolerated: Tolerance | None = None) -> int | None:
        """Rank position of the first candidate whose failures are all ``tolerated`` (none, when
        ``None``), else ``None``."""
        if self.fixed is not None or self.patched:
            allowed = tolerated.rules if tolerated is not None else frozenset()
            return next((k for k, r in enumerate(self.rows) if all(c.rule in allowed for c in r.failures)), None)
        view = self.view
        masks = view.experts_index.masks
        pf_masks = view.pf_index.masks
        pf_choice = view.pf_choice
        experts = view.experts
        fail, pf_fail, kb_fail, extra, own, dispatch = self.fail, self.pf_fail, self.kb_fail, self.extra_fail, self.own_fail, self.dispatch
        rules: frozenset[str] | None = None
        if tolerated is not None:
            # Tolerated checks are masked out of the bit sets; the few checks held as records
            # (backend exclusions, opt-in, a family's request checks) are filtered by rule.
            rules = tolerated.rules
            fail &= ~tolerated.experts
            pf_fail &= ~tolerated.pf
            if kb_fail:
                kb_fail &= ~tolerated.known_bad
        kb_masks = view.known_bad_index.masks if kb_fail and view.known_bad_index is not None else None
        for pos, k in enumerate(self.order):
            if fail & masks[k]:
                continue
            checks = extra.get(experts[k].backend)
            if checks is not None and (rules is None or any(c.rule not in rules for c in checks)):
                continue
            checks = own.get(k)
            if checks is not None and (rules is None or any(c.rule not in rules for c in checks)):
                continue
            j = pf_choice[k].get(dispatch)
            if j is not None and pf_fail & pf_masks[j]:
                continue
            if kb_masks is not None:
                kb = view.known_bad_position.get(k)
                if kb is not None and kb_fail & kb_masks[kb]:
                    continue
            return pos
        return None

    @cached_property
    def _split(self) -> tuple[dict[int, tuple[Check, ...]], dict[int, tuple[Check, ...]]]:
        # Every kernel's failing and abstaining checks in one pass over each bit set, for
        # materializing all rows (row() of one candidate reads its own bits alone).
        index = self.view.experts_index
        return index.split(self.fail), index.split(self.abstain)

    def _row(self, k: int, split: bool = False) -> Row:
        view = self.view
        entry = view.experts[k]
        if split:
            fails, abstains = self._split
            f = fails.get(k, ())
            a = abstains.get(k, ())
        else:
            f = view.experts_index.checks_in(k, self.fail)
            a = view.experts_index.checks_in(k, self.abstain)
        if self.kb_fail is not None and view.known_bad_index is not None:
            kb = view.known_bad_position.get(k)
            if kb is not None:
                f += view.known_bad_index.checks_in(kb, self.kb_fail)
                a += view.known_bad_index.checks_in(kb, self.kb_abstain or 0)
        f += self.own_fail.get(k, ())
        j = view.pf_choice[k].get(self.dispatch)
        pf = None
        if j is not None:
            pf = view.prepare_finalize[j]
            f += view.pf_index.checks_in(j, self.pf_fail)
            a += view.pf_index.checks_in(j, self.pf_abstain)
        return Row(k, entry, pf, f + self.extra_fail.get(entry.backend, ()), a + self.extra_abstain.get(entry.backend, ()))

    @cached_property
    def rows(self) -> tuple[Row, ...]:
        """Every candidate as a :class:`Row`, in rank order (:meth:`_row` for all of them, with each
        index's bit sets read once)."""
        if self.fixed is not None:
            return self.fixed
        if self.kb_fail is not None and self.view.known_bad_index is not None:
            return tuple(self.patched.get(pos) or self._row(k, True) for pos, k in enumerate(self.order))
        view = self.view
        fails, abstains = self._split
        pf_index = view.pf_index
        pf_fails, pf_abstains = pf_index.split(self.pf_fail), pf_index.split(self.pf_abstain)
        experts, pfs, pf_choice, dispatch = view.experts, view.prepare_finalize, view.pf_choice, self.dispatch
        own, extra_fail, extra_abstain, patched = self.own_fail, self.extra_fail, self.extra_abstain, self.patched
        out = []
        for pos, k in enumerate(self.order):
            row = patched.get(pos) if patched else None
            if row is None:
                entry = experts[k]
                f = fails.get(k, ()) + own.get(k, ())
                a = abstains.get(k, ())
                j = pf_choice[k].get(dispatch)
                pf = None
                if j is not None:
                    pf = pfs[j]
                    f += pf_fails.get(j, ())
                    a += pf_abstains.get(j, ())
                row = Row(k, entry, pf, f + extra_fail.get(entry.backend, ()), a + extra_abstain.get(entry.backend, ()))
            out.append(row)
        return tuple(out)


@dataclass(frozen=True, eq=False)
class Decision:
    """The outcome of one selection.

    Attributes:
        config: the input record.
        environment: packages and env vars it was evaluated under.
        normalized: every field value with its source.
        tables_hash: sha256 prefix of the table set.
        order_rule: id of the priority order that applied.
        backend_order: backends in the order they were tried.
        demotions: priority adjustments that fired.
        requested: backend ids the user (or an env override) requested, else ``None``.
        requested_by: ``"moe_backend"`` or the override rule id.
        ranking: the engine's evaluation of every candidate, in rank order (:attr:`rows`
            materializes it).
        winner: index into ``rows`` of the selected candidate, or ``None``.
        notes: what the reader should know (alias rewrites, unmatched priority orders, inputs with no effect ...).
        release: the engine release the answer is for, and how it was known (``None`` only for
            catalogs built without an engine table).
        view: ``engine`` (what the engine runs) or ``runtime`` (what our runtime builds).
        policy: ``faithful`` or ``safe`` (:class:`~moe_oracle.core.vocab.Policy`).
        warnings: what the answer holds despite (known bugs, unchecked early returns, unmodelled
            releases), each with its reference and the safe alternative.
        shortcut: the shortcut rule that selected the winner (faithful policy), else ``None``.
        refused: index into ``rows`` of the candidate the engine selected and then refused the
            layer for (it fails an ``after_selection`` constraint; faithful policy), else ``None``.
            There is no winner then; that candidate is rejected with the refusing failures, and
            every eligible candidate (all ranked after it) is outranked by it.
    """

    config: MoEConfig
    environment: Environment
    normalized: Normalized
    tables_hash: str
    order_rule: str | None
    backend_order: tuple[str, ...]
    demotions: tuple[Demotion, ...]
    requested: tuple[str, ...] | None
    requested_by: str | None
    ranking: Ranking = field(repr=False)
    winner: int | None
    notes: tuple[str, ...] = ()
    release: "EngineRelease | None" = None
    view: str = "engine"
    policy: str = "faithful"
    warnings: tuple[DecisionWarning, ...] = ()
    shortcut: str | None = None
    refused: int | None = None

    @classmethod
    def of(cls, **fields: Any) -> "Decision":
        """``Decision(**fields)`` without the frozen ``__init__`` (one per selection; see
        ``Failure.of``).

        Raises:
            TypeError: a field missing or unknown (every field is given, defaults included).
        """
        if fields.keys() != _DECISION_FIELDS:
            raise TypeError(f"Decision.of needs exactly the fields {sorted(_DECISION_FIELDS)}; got {sorted(fields)}")
        record = object.__new__(cls)
        record.__dict__.update(fields)
        return record

    # ------------------------------------------------------------------ views of the record

    @property
    def rows(self) -> tuple[Row, ...]:
        """Every candidate in rank order: entry, prepare/finalize, failing and abstaining checks."""
        return self.ranking.rows

    def _status(self, pos: int, row: Row) -> Status:
        if row.failures:
            return Status.REJECTED
        return Status.SELECTED if pos == self.winner else Status.ELIGIBLE

    def _candidate(self, pos: int, row: Row) -> CandidateResult:
        status = self._status(pos, row)
        entry, norm = row.entry, self.normalized
        return CandidateResult.of(
            entry.id,
            entry.backend,
            entry.interface,
            entry.activation_format,
            row.pf.id if row.pf is not None else None,
            status,
            tuple(make_failure(c, norm) for c in table_order(row.failures)),
            tuple(c.assumption for c in row.abstentions),
            pos + 1,
            self.outranked_by if status is Status.ELIGIBLE else None,
        )

    @cached_property
    def view_memo(self) -> dict[str, Any]:
        """Facts the text views (:mod:`moe_oracle.core.render`) derive from this record, kept once
        derived (the record is immutable, so they are values)."""
        return {}

    @cached_property
    def _built(self) -> dict[int, CandidateResult]:
        # Rank position -> its record, for the views that read a few candidates (explain shows the
        # relevant ones; the rest are counted from the rows' checks without records).
        return {}

    def candidate_at(self, pos: int) -> CandidateResult:
        """The record of the candidate at rank position ``pos`` (0-based), built once."""
        built = self._built
        cand = built.get(pos)
        if cand is None:
            cand = built[pos] = self._candidate(pos, self.ranking.row(pos))
        return cand

    @cached_property
    def candidates(self) -> tuple[CandidateResult, ...]:
        """Every candidate, in rank order, with all of its failures and assumptions."""
        built = self._built
        out = tuple(built.get(pos) or self._candidate(pos, row) for pos, row in enumerate(self.rows))
        built.update(enumerate(out))
        return out

    @cached_property
    def selected(self) -> CandidateResult | None:
        """The winning candidate, or ``None`` when nothing is eligible (built alone: the other
        candidates' records are not materialized for it)."""
        if self.winner is None:
            return None
        return self.candidate_at(self.winner)

    @property
    def ok(self) -> bool:
        return self.winner is not None

    @property
    def kernel(self) -> str | None:
        """Id of the selected experts kernel (cheap: no failure records built)."""
        return self.ranking.entry(self.winner).id if self.winner is not None else None

    @property
    def refused_kernel(self) -> str | None:
        """Id of the kernel the engine selected and then refused the layer for (:attr:`refused`)."""
        return self.ranking.entry(self.refused).id if self.refused is not None else None

    @property
    def outranked_by(self) -> str | None:
        """The kernel every eligible non-winner is outranked by: the winner, or the kernel the engine
        selected and then refused the layer for (ranked ahead of every eligible candidate)."""
        return self.kernel if self.winner is not None else self.refused_kernel

    @property
    def prepare_finalize(self) -> str | None:
        """Id of the selected prepare/finalize."""
        if self.winner is None:
            return None
        pf = self.ranking.pf(self.winner)
        return pf.id if pf is not None else None

    @property
    def assumptions(self) -> tuple[Assumption, ...]:
        """What the winner's eligibility rests on (unknown inputs)."""
        return self.selected.assumptions if self.selected is not None else ()

    def candidate(self, kernel: str) -> CandidateResult:
        """The result for kernel id ``kernel``.

        Raises:
            KeyError: no such candidate.
        """
        for cand in self.candidates:
            if cand.kernel == kernel:
                return cand
        raise KeyError(kernel)

    def for_backend(self, backend: str) -> tuple[CandidateResult, ...]:
        return tuple(c for c in self.candidates if c.backend == backend)

    def fingerprint(self) -> str:
        """Hash of what a rank would run: kernel, P/F, tables, environment. Equal on ranks that agree."""
        payload = json.dumps([self.kernel, self.prepare_finalize, self.tables_hash, self.environment.fingerprint, self.config.moe_backend, self.view, self.policy])
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def summary(self) -> str:
        """Count of candidates and of the reason codes that rejected them.

        Each rejected candidate counts once, under its primary failure's code.
        """
        return self._summary

    @cached_property
    def code_masks(self) -> tuple[int, ...]:
        """Per rank position, the reason codes the candidate fails as a bit set (bit ``i``: the
        ``i``-th ``ReasonCode`` in declaration order; 0: not rejected)."""
        out = []
        for row in self.rows:
            mask = 0
            for chk in row.failures:
                mask |= chk.code_bit
            out.append(mask)
        return tuple(out)

    @cached_property
    def _summary(self) -> str:
        masks = self.code_masks
        # A rejected candidate's primary failure: the first by reason-code declaration order (primary_failure),
        # the lowest bit of its code set.
        counts: Counter[str] = Counter()
        for m, n in Counter(masks).items():  # candidates share a handful of code sets
            if m:
                counts[_CODE_VALUES[(m & -m).bit_length() - 1]] += n
        parts = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        rejected = sum(counts.values())
        return f"{len(masks)} candidates: {len(masks) - rejected} eligible, {rejected} rejected" + (f" (by first reason: {parts})" if parts else "")

    @property
    def answered_for(self) -> str:
        """What the answer is for: ``vLLM 0.33.0 (assumed: newest modelled)``, plus the view and policy when not the defaults."""
        head = self.release.label() if self.release is not None else "engine release unknown"
        extra = [x for x in (f"{self.view} view" if self.view != "engine" else "", f"{self.policy} policy" if self.policy != "faithful" else "") if x]
        return head + (f"; {', '.join(extra)}" if extra else "")

    def describe(self) -> str:
        """One sentence for a log line."""
        if self.winner is None:
            if self.refused is not None:
                return f"no MoE kernel runs for {self.answered_for}: the engine selects {self.refused_kernel}, then refuses the layer; {self.summary()}"
            return f"no MoE kernel is eligible for {self.answered_for}; {self.summary()}"
        sel = self.selected
        assert sel is not None
        how = self._how()
        return f"selected {sel.kernel} ({sel.backend}, {sel.interface.value}) with {sel.prepare_finalize} by {how} for {self.answered_for}; {self.summary()}"

    def select_line(self) -> str:
        """The ``select`` view: winner, prepare/finalize, the release it is for, counts of assumptions and warnings.

        ``triton [triton, modular] + no_dp_ep_modular for vLLM 0.31.0 (declared)``
        """
        if self.winner is None:
            return f"none for {self.answered_for}: {self.summary()}"
        sel = self.selected
        assert sel is not None
        extra = []
        if sel.assumptions:
            extra.append(f"{len(sel.assumptions)} assumption{'s' if len(sel.assumptions) != 1 else ''}")
        if self.warnings:
            extra.append(f"{len(self.warnings)} warning{'s' if len(self.warnings) != 1 else ''}")
        tail = f" [{', '.join(extra)}; see explain]" if extra else ""
        return f"{sel.kernel} [{sel.backend}, {sel.interface.value}] + {sel.prepare_finalize} for {self.answered_for}{tail}"

    def _how(self) -> str:
        if self.shortcut:
            return f"shortcut {self.shortcut}"
        return f"requested by {self.requested_by}" if self.requested else f"priority {self.order_rule}"

    def to_dict(self) -> dict[str, Any]:
        """The Decision record (validates against ``schemas/decision.schema.json``)."""
        sel = self.selected
        return {
            "format_version": DECISION_FORMAT_VERSION,
            "selected": None
            if sel is None
            else {
                "kernel": sel.kernel,
                "backend": sel.backend,
                "interface": sel.interface.value,
                "activation_format": sel.activation_format.value,
                "prepare_finalize": sel.prepare_finalize,
                "adapter": self.ranking.entry(self.winner).adapter,  # type: ignore[arg-type]
                "runtime": self.ranking.entry(self.winner).runtime,  # type: ignore[arg-type]
            },
            "selected_by": ("shortcut" if self.shortcut else "requested" if self.requested else "priority") if sel is not None else "none",
            "shortcut": self.shortcut,
            "engine": self.release.to_dict() if self.release is not None else None,
            "view": self.view,
            "policy": self.policy,
            "warnings": [w.to_dict() for w in self.warnings],
            "requested": {"backends": list(self.requested), "by": self.requested_by} if self.requested else None,
            "summary": self.summary(),
            "candidates": self._candidate_dicts(),
            "assumptions": [a.to_dict() for a in self.assumptions],
            "demotions": [d.to_dict() for d in self.demotions],
            "priority": {"order": self.order_rule, "backends": list(self.backend_order)},
            "inputs": self.normalized.to_dict(),
            "provenance": [p.to_dict() for p in self.config.provenance],
            "environment": self.environment.to_dict(),
            "tables_hash": self.tables_hash,
            "fingerprint": self.fingerprint(),
            "notes": list(self.notes),
        }

    def _candidate_dicts(self) -> list[dict[str, Any]]:
        """``[c.to_dict() for c in self.candidates]``, built from the rows without the records
        (tests/unit/test_decision_records.py holds the two equal)."""
        if "candidates" in self.__dict__:
            return [c.to_dict() for c in self.candidates]
        values = self.normalized.values
        sources = {k: v._value_ for k, v in self.normalized.sources.items()}  # .value, without the descriptor
        winner, winner_id = self.winner, self.outranked_by
        rejected, selected, eligible = Status.REJECTED._value_, Status.SELECTED._value_, Status.ELIGIBLE._value_
        scalars, derived, get, source = _SCALARS, _DERIVED, values.get, sources.get
        out = []
        for pos, row in enumerate(self.rows):
            failures = []
            for c in table_order(row.failures):
                template, field, source_field, copy = c.record_parts
                d = template.copy()  # keys in Failure.to_dict order; the per-config values filled in
                observed = get(field) if field is not None else c.observed(values)
                d["observed"] = observed if type(observed) in scalars else jsonable(observed)
                if copy is not None:
                    d["allowed"] = copy(d["allowed"])
                d["source"] = source(source_field, derived)
                failures.append(d)
            cand = row.entry.record_head.copy()  # keys in CandidateResult.to_dict order
            cand["rank"] = pos + 1
            cand["prepare_finalize"] = row.pf.id if row.pf is not None else None
            if failures:
                cand["status"] = rejected
            elif pos == winner:
                cand["status"] = selected
            else:
                cand["status"], cand["outranked_by"] = eligible, winner_id
            cand["failures"] = failures
            assumptions = []
            for c in row.abstentions:  # Assumption.to_dict from the check's template (hundreds per record)
                d = c.assumption_template.copy()
                copy = c.allowed_copy
                if copy is not None:
                    d["assumed"] = copy(d["assumed"])
                assumptions.append(d)
            cand["assumptions"] = assumptions
            out.append(cand)
        return out

    # ------------------------------------------------------------------ views (moe_oracle.explain.render)

    def render_text(self, *, show_all: bool = False) -> str:
        """The ``explain`` view (:func:`moe_oracle.core.render.render_explain`)."""
        from .render import render_explain

        return render_explain(self, show_all=show_all)

    def render_failure(self) -> str:
        """The full trail when nothing is eligible (:func:`moe_oracle.core.render.render_failure`)."""
        from .render import render_failure

        return render_failure(self)

    def __str__(self) -> str:
        return self.describe()


_DECISION_FIELDS = frozenset(f.name for f in dataclass_fields(Decision))


def primary_failure(candidate: CandidateResult) -> Failure:
    """The failure a one-line log shows: the first by reason-code declaration order.

    The key may change between releases; the full list is always ``candidate.failures``.
    """
    return min(candidate.failures, key=lambda f: _CODE_ORDER[f.code])


_CODE_ORDER = {code: i for i, code in enumerate(ReasonCode)}


class NoEligibleKernelError(MoEOracleError):
    """No candidate is eligible (or the requested backend is not); carries the full Decision.

    The message (every candidate with every reason) is rendered when it is read (``str(exc)``),
    not when the error is raised: a caller that catches it and moves on pays nothing for it.
    """

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        super().__init__()

    def __str__(self) -> str:
        return self.decision.render_failure()
