"""The Decision: one frozen record of a selection, with several views.

``to_dict()`` follows ``schemas/decision.schema.json`` (its key names are the
artifact format); the text views live in :mod:`moe_oracle.render` (``render_text()`` and
``render_failure()`` delegate there), ``describe()`` is a one-line log message, ``summary()``
counts each rejected candidate under its first reason code. Failure records are
materialized lazily from the compiled checks, so ``select`` stays cheap.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from .checks import Check
from .config import MoEConfig
from .environment import Environment
from .normalize import Normalized
from .records import Assumption, CandidateResult, DecisionWarning, Demotion, Failure, Status
from .vocab import ReasonCode, Source

if TYPE_CHECKING:
    from .catalog import ExpertsEntry, PrepareFinalizeEntry
    from .versions import EngineRelease

__all__ = ["DECISION_FORMAT_VERSION", "Decision", "Row", "make_failure"]

DECISION_FORMAT_VERSION = 2

_TABLE_ORDER = attrgetter("seq", "rule")


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


def make_failure(chk: Check, norm: Normalized) -> Failure:
    """The :class:`Failure` record of a failing check under ``norm``."""
    first = chk.fields_read[0] if chk.deny else chk.field
    return Failure(
        code=chk.code,
        field=chk.field,
        observed=chk.observed(norm.values),
        allowed=chk.allowed(),
        rule=chk.rule,
        source=norm.sources.get(first, Source.DERIVED),
        hint=chk.hint,
        reference=chk.reference,
    )


def _assumption(chk: Check) -> Assumption:
    assumed = chk.predicate.describe() if chk.predicate is not None else "the known-bad condition does not hold"
    return Assumption(field=chk.field, assumed=chk.allowed(), rule=chk.rule, hint=f"{chk.field} is unknown; assumed {assumed} ({chk.hint})")


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
        rows: candidates in rank order (engine output).
        winner: index into ``rows`` of the selected candidate, or ``None``.
        notes: what the reader should know (alias rewrites, unmatched priority orders, inputs with no effect ...).
        release: the engine release the answer is for, and how it was known (``None`` only for
            catalogs built without an engine table).
        view: ``engine`` (what the engine runs) or ``runtime`` (what our runtime builds).
        policy: ``faithful`` or ``safe`` (:class:`~moe_oracle.vocab.Policy`).
        warnings: what the answer holds despite (known bugs, unchecked early returns, unmodelled
            releases), each with its reference and the safe alternative.
        shortcut: the shortcut rule that selected the winner (faithful policy), else ``None``.
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
    rows: tuple[Row, ...] = field(repr=False)
    winner: int | None
    notes: tuple[str, ...] = ()
    release: "EngineRelease | None" = None
    view: str = "engine"
    policy: str = "faithful"
    warnings: tuple[DecisionWarning, ...] = ()
    shortcut: str | None = None

    # ------------------------------------------------------------------ views of the record

    @cached_property
    def candidates(self) -> tuple[CandidateResult, ...]:
        """Every candidate, in rank order, with all of its failures and assumptions."""
        out = []
        winner_id = self.rows[self.winner].entry.id if self.winner is not None else None
        for rank, row in enumerate(self.rows, start=1):
            if row.failures:
                status = Status.REJECTED
            elif rank - 1 == self.winner:
                status = Status.SELECTED
            else:
                status = Status.ELIGIBLE
            out.append(
                CandidateResult(
                    kernel=row.entry.id,
                    backend=row.entry.backend,
                    interface=row.entry.interface,
                    activation_format=row.entry.activation_format,
                    prepare_finalize=row.pf.id if row.pf is not None else None,
                    status=status,
                    failures=tuple(make_failure(c, self.normalized) for c in sorted(row.failures, key=_TABLE_ORDER)),
                    assumptions=tuple(_assumption(c) for c in row.abstentions),
                    rank=rank,
                    outranked_by=winner_id if status is Status.ELIGIBLE else None,
                )
            )
        return tuple(out)

    @property
    def selected(self) -> CandidateResult | None:
        """The winning candidate, or ``None`` when nothing is eligible."""
        return self.candidates[self.winner] if self.winner is not None else None

    @property
    def ok(self) -> bool:
        return self.winner is not None

    @property
    def kernel(self) -> str | None:
        """Id of the selected experts kernel (cheap: no failure records built)."""
        return self.rows[self.winner].entry.id if self.winner is not None else None

    @property
    def prepare_finalize(self) -> str | None:
        """Id of the selected prepare/finalize."""
        if self.winner is None:
            return None
        pf = self.rows[self.winner].pf
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
        rejected = [c for c in self.candidates if c.status is Status.REJECTED]
        counts = Counter(primary_failure(c).code.value for c in rejected)
        parts = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        eligible = len(self.candidates) - len(rejected)
        return f"{len(self.candidates)} candidates: {eligible} eligible, {len(rejected)} rejected" + (f" (by first reason: {parts})" if parts else "")

    @property
    def answered_for(self) -> str:
        """What the answer is for: ``vLLM 0.33.0 (assumed: newest modelled)``, plus the view and policy when not the defaults."""
        head = self.release.label() if self.release is not None else "engine release unknown"
        extra = [x for x in (f"{self.view} view" if self.view != "engine" else "", f"{self.policy} policy" if self.policy != "faithful" else "") if x]
        return head + (f"; {', '.join(extra)}" if extra else "")

    def describe(self) -> str:
        """One sentence for a log line."""
        if self.winner is None:
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
                "adapter": self.rows[self.winner].entry.adapter,  # type: ignore[index]
                "runtime": self.rows[self.winner].entry.runtime,  # type: ignore[index]
            },
            "selected_by": ("shortcut" if self.shortcut else "requested" if self.requested else "priority") if sel is not None else "none",
            "shortcut": self.shortcut,
            "engine": self.release.to_dict() if self.release is not None else None,
            "view": self.view,
            "policy": self.policy,
            "warnings": [w.to_dict() for w in self.warnings],
            "requested": {"backends": list(self.requested), "by": self.requested_by} if self.requested else None,
            "summary": self.summary(),
            "candidates": [c.to_dict() for c in self.candidates],
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

    # ------------------------------------------------------------------ views (moe_oracle.render)

    def render_text(self, *, show_all: bool = False) -> str:
        """The ``explain`` view (:func:`moe_oracle.render.render_explain`)."""
        from .render import render_explain

        return render_explain(self, show_all=show_all)

    def render_failure(self) -> str:
        """The full trail when nothing is eligible (:func:`moe_oracle.render.render_failure`)."""
        from .render import render_failure

        return render_failure(self)

    def __str__(self) -> str:
        return self.describe()


def primary_failure(candidate: CandidateResult) -> Failure:
    """The failure a one-line log shows: the first by reason-code declaration order.

    The key may change between releases; the full list is always ``candidate.failures``.
    """
    order = {code: i for i, code in enumerate(ReasonCode)}
    return min(candidate.failures, key=lambda f: order[f.code])
