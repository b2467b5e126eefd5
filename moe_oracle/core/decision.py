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
import pickle
from collections import Counter
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from . import pickling
from .loading import default_catalog, default_runtime_catalog
from .ranking import Ranking, Row
from .config import MoEConfig
from .environment import Environment
from .errors import InputIssue, MoEOracleError, TableError
from .failures import make_failure, table_order
from .normalize import Normalized
from .records import _SCALARS, Assumption, CandidateResult, DecisionWarning, Demotion, Failure, Status, jsonable
from .vocab import ReasonCode, Source

if TYPE_CHECKING:
    from .versions import EngineRelease

__all__ = ["DECISION_FORMAT_VERSION", "Decision", "NoEligibleKernelError"]

DECISION_FORMAT_VERSION = 2

_DERIVED = Source.DERIVED.value
_CODE_VALUES = tuple(code.value for code in ReasonCode)


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
            layer for (it fails an ``after_selection`` constraint; faithful policy), or that a
            shortcut's early return raises for (vLLM ``return_or_raise`` on its last kernel,
            :func:`moe_oracle.core.blocking.shortcut_raises`), else ``None`` (also where a check
            binding every kernel refuses the layer before any kernel is tried,
            :func:`moe_oracle.core.blocking.engine_refusal`). There is no winner then; that
            candidate is rejected with the refusing failures, and every eligible candidate (all
            ranked after it) is outranked by it.
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

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and ``copy.deepcopy``) the record's fields, not its cached views.

        The ranking holds the catalog view it was evaluated on. A view of the shipped tables
        (:func:`~moe_oracle.core.loading.default_catalog`, ``default_runtime_catalog``: the
        ones ``Oracle.default()`` selects on) is named, not carried: its view name, tables hash
        and a release whose view it is (a few tens of KB instead of ~2.5 MB); unpickling takes
        that view of this process's shipped tables (the same object in the same process) and
        raises :class:`~moe_oracle.core.errors.TableError` where their hash differs. Any other
        view (``--tables``, tables built in code) travels whole. The fields go as one blob
        written by :mod:`moe_oracle.core.pickling` (views hold read-only mappings, which plain
        pickle cannot name).
        """
        values = {name: getattr(self, name) for name in _DECISION_FIELD_ORDER}
        ref = _shipped_view_ref(self.ranking.view)
        if ref is None:
            return (_decision_from, (pickling.dumps(values),))
        values["ranking"] = self.ranking.record_fields()
        return (_decision_on_shipped_view, (pickling.dumps(values), ref))

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
            tuple(c.assumption_for(norm.values) for c in table_order(row.abstentions)),
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
            from .blocking import engine_refusal, shortcut_raises

            if self.refused is not None:
                label = shortcut_raises(self)
                how = f"vLLM's early return {label} tries {self.refused_kernel} and raises" if label is not None else f"the engine selects {self.refused_kernel}, then refuses the layer"
                return f"no MoE kernel runs for {self.answered_for}: {how}; {self.summary()}"
            refusal = engine_refusal(self)
            if refusal is not None:
                rules = ", ".join(dict.fromkeys(c.rule for c in refusal.checks))
                return f"no MoE kernel runs for {self.answered_for}: vLLM raises before it tries any kernel [{rules}]; {self.summary()}"
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
            for c in table_order(row.abstentions):  # Assumption.to_dict from the check's template (hundreds per record)
                record = c.assumption_for(values)
                if record is not c.assumption:  # an unknown field of its condition (Check.assumption_for)
                    assumptions.append(record.to_dict())
                    continue
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


_DECISION_FIELD_ORDER = tuple(f.name for f in dataclass_fields(Decision))
_DECISION_FIELDS = frozenset(_DECISION_FIELD_ORDER)


def _decision_from(blob: bytes) -> Decision:
    """The Decision :meth:`Decision.__reduce__` pickled with its view."""
    return Decision.of(**pickle.loads(blob))


_SHIPPED = {"engine": default_catalog, "runtime": default_runtime_catalog}


def _shipped_view_ref(view: Any) -> tuple[str, str, str] | None:
    """(view name, tables hash, release) naming ``view`` among the views of this process's
    shipped tables, or ``None`` for a view of other tables (or one no modelled release has).

    Only a view of the memoized shipped set itself is named (the same object): other tables
    with the same files may have been compiled under another base. A process that has not
    loaded the shipped tables holds no view of them, so nothing is loaded to answer.
    """
    shipped = _SHIPPED.get(getattr(view, "view_name", None))
    source = getattr(view, "source", None)
    if shipped is None or source is None or shipped.cache_info().currsize == 0 or shipped().source is not source:
        return None
    for release in source.engine.releases:
        if source.key(release.version) == view.key and source.view(release.version) is view:
            return (view.view_name, source.tables_hash, str(release.version))
    return None


def _decision_on_shipped_view(blob: bytes, ref: tuple[str, str, str]) -> Decision:
    """The Decision :meth:`Decision.__reduce__` pickled with its view named by ``ref``.

    Raises:
        TableError: this process's shipped tables are not the ones the Decision was evaluated on.
    """
    name, tables_hash, release = ref
    source = _SHIPPED[name]().source
    if source is None or source.tables_hash != tables_hash:
        found = source.tables_hash if source is not None else None
        raise TableError([InputIssue("tables_hash", f"this Decision was evaluated on the shipped {name} tables {tables_hash}; this process ships {found}: unpickle it where moe_oracle ships the same tables", tables_hash, [found])],
                         headline="pickled Decision of other tables")
    values = pickle.loads(blob)
    values["ranking"] = Ranking.on(source.view(Version(release)), values["ranking"])
    return Decision.of(**values)


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
    It pickles as its Decision (``MoEOracleError.__reduce__``).
    """

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        super().__init__()

    def __str__(self) -> str:
        return self.decision.render_failure()
