"""The ranked candidates of one selection: every candidate's checks as compiled, in priority order
(:class:`Ranking`), and each candidate's failing and abstaining checks (:class:`Row`), from which
a :class:`~moe_oracle.core.decision.Decision` materializes its records."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from .checks import Check, Tolerance

if TYPE_CHECKING:
    from .catalog import Catalog, ExpertsEntry, PrepareFinalizeEntry


__all__ = ["Ranking", "Row"]

_NO_PATCHES: Mapping[int, "Row"] = MappingProxyType({})


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

    def record_fields(self) -> dict[str, Any]:
        """Every field but ``view``, cached views left out (:meth:`on` puts them back on a view)."""
        return {name: self.__dict__[name] for name in _FIELDS_BUT_VIEW}

    @classmethod
    def on(cls, view: "Catalog", values: Mapping[str, Any]) -> "Ranking":
        """The ranking whose :meth:`record_fields` are ``values``, over ``view`` (a pickled
        Decision's, named instead of carried: :meth:`moe_oracle.core.decision.Decision.__reduce__`)."""
        record = object.__new__(cls)
        record.__dict__.update(view=view, **{name: values[name] for name in _FIELDS_BUT_VIEW})
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

    def built_pf(self, pos: int) -> "PrepareFinalizeEntry | None":
        """The prepare/finalize vLLM builds for the candidate at ``pos``: the first one serving
        this dispatch with the candidate's interface whose own checks pass (platform, request),
        whatever format the experts take, or ``None``. vLLM picks the prepare/finalize from the
        deployment, not from the experts (P/all2all_utils.py maybe_make_prepare_finalize), so this
        can differ from :meth:`pf`, the one that pairs with the experts' format."""
        view, entry = self.view, self.entry(pos)
        masks = view.pf_index.masks
        return next((pf for j, pf in enumerate(view.prepare_finalize) if self.dispatch in pf.dispatch and pf.interface is entry.interface and not self.pf_fail & masks[j]), None)

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


_FIELDS_BUT_VIEW = tuple(f.name for f in fields(Ranking) if f.name != "view")
