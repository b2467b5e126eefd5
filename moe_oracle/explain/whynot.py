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

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable


from ..core.config import MoEConfig
from ..core.decision import Decision
from ..core.engine import evaluate
from ..core.requests import resolve_request
from ..core.errors import ConfigError, InputIssue
from ..core.environment import Environment
from ..core.oracle import Oracle, parse_policy, require_config, require_environment
from ..core.blocking import refusing_checks
from ..core.render import alternative_lines
from ..core.vocab import Policy
from .whynot_edits import CATEGORIES, COSTS, DEFAULT_KEEP, Alternative, Edit, edits_text, refused_after, request_decision, request_hint
from .whynot_search import MAX_EDITS, MAX_EXPANSIONS, RefusedEdits, SearchResult, repair, search_eligible, target_failures

if TYPE_CHECKING:
    from ..core.catalog import Catalog

__all__ = ["CATEGORIES", "COSTS", "Alternative", "Edit", "SearchResult", "WhyNot", "fixes", "repair", "search_eligible", "why_not"]


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
        requested: when already eligible but not selected, the selection with the backend
            requested by name (:func:`~moe_oracle.explain.whynot_edits.request_decision`), so
            the hint to request it is re-checked.
        refused_at_start: when no edit set was found, those after which the backend is eligible
            but the engine refuses to start, with its refusal (one per refusal, cheapest first).
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
    requested: Decision | None = None
    refused_at_start: tuple[RefusedEdits, ...] = ()

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
            backend = next((r.entry.backend for r in d.rows if r.entry.id == self.kernel), self.backend[0]) if d is not None else self.backend[0]
            if d is not None and d.refused is not None:
                rules = ", ".join(dict.fromkeys(c.rule for c in refusing_checks(d)))
                return (f"{name} is already eligible ({self.kernel}), but the engine selects {d.refused_kernel} ahead of it and then refuses the layer [{rules}]; "
                        f"{request_hint(d.ranking.view, backend, 'request', self.kernel, self.requested)}.")
            hint = request_hint(d.ranking.view, backend, "request", self.kernel, self.requested) if d is not None else f"request it with --moe-backend {self.backend[0]}"
            return f"{name} is already eligible ({self.kernel}) but outranked by {d.kernel if d else None}; {hint}."
        kept = f"; kept: {', '.join(sorted(self.keep))}" if self.keep else ""
        if not self.found:
            if self.explored >= MAX_EXPANSIONS:  # the search stopped at its bound: a change may exist that it did not reach
                lines = [f"No change found that makes {name} eligible (the search stopped at its bound of {MAX_EXPANSIONS} edit sets{kept}); a change of up to {MAX_EDITS} inputs that it did not reach may exist. Blocking:"]
            else:
                lines = [f"No change of at most {MAX_EDITS} inputs makes {name} eligible (searched {self.explored} edit set{'s' if self.explored != 1 else ''}{kept}). Blocking:"]
            lines += [f"  - {b}" for b in self.blocking]
            if self.refused_at_start:
                lines.append(f"Changes after which {name} is eligible but vLLM does not start:")
                lines += [f"  - {edits_text(r.edits, serve=serve)}: {r.reason}" for r in self.refused_at_start]
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
            "refused_after": refused_after(self.decision),
            "alternatives": [a.to_dict() for a in self.alternatives],
            "keep": sorted(self.keep),
            "blocking": list(self.blocking),
            "refused_at_start": [r.to_dict() for r in self.refused_at_start] if not self.found else [],
            "explored": self.explored,
        }


# ----------------------------------------------------------------------------- edit generation


# ----------------------------------------------------------------------------- search


def _check_keep(keep: Iterable[str]) -> frozenset[str]:
    wanted = frozenset(keep)
    unknown = sorted(wanted - set(CATEGORIES))
    if unknown:
        raise ConfigError([InputIssue("--keep", "unknown input category", unknown[0], list(CATEGORIES))], headline="bad --keep")
    return wanted


def why_not(oracle: "Oracle", config: MoEConfig, backend_name: str, env: Environment | None = None, *, n: int = 3, keep: Iterable[str] = DEFAULT_KEEP, policy: Policy | str | None = None,
            admissible: Callable[[MoEConfig, Environment], bool | str | None] | None = None) -> WhyNot:
    """Up to ``n`` smallest, least disruptive changes that make ``backend_name`` eligible under ``policy``.

    >>> from moe_oracle import Device, MoEConfig, Oracle, why_not
    >>> cfg = MoEConfig(num_experts=8, top_k=2, hidden_size=4096, intermediate_size=14336, device=Device("cuda", capability=90))
    >>> why_not(Oracle.default(), cfg, "flashinfer_trtllm", n=1).found
    True

    Args:
        env: the environment to search from (default: the oracle's).
        keep: input categories (:data:`CATEGORIES`) that must not change; default: the model.
        policy: default: the oracle's.
        admissible: whether the engine starts with edited inputs: True or None it does, False or
            the refusal's message (a str) it does not (:func:`search_eligible`).

    Raises:
        ConfigError: ``backend_name`` is not a known backend or alias, or ``keep`` names an
            unknown category.
        TypeError: ``backend_name`` is not a str, ``config`` not a MoEConfig, ``env`` not an Environment.
    """
    require_config(config, "why_not")
    require_environment(env, "why_not")
    if not isinstance(backend_name, str):
        raise TypeError(f"why_not(backend_name) takes a backend name as a str (such as 'flashinfer_trtllm'), not {type(backend_name).__name__}: {backend_name!r}")
    catalog = oracle.catalog
    env = oracle.environment if env is None else env
    policy = oracle.policy if policy is None else parse_policy(policy)
    kept = _check_keep(keep)
    try:
        backend = resolve_request(catalog, backend_name, "--backend")
    except ConfigError as exc:
        # resolve_request lists every name the engine accepts; why-not answers fewer (not auto,
        # not a name that maps to no kernel of ours): the list is what this command takes.
        raise ConfigError([replace(i, message="unknown MoE backend: why-not takes a backend, or a moe_backend name that maps to one", allowed=_why_not_names(catalog)) for i in exc.issues]) from None
    if backend is None:
        raise ConfigError([InputIssue("--backend", "why-not asks about one backend; 'auto' is the priority order itself (use explain)", backend_name, _why_not_names(catalog))])
    if not backend:
        # A name the engine accepts that no quant family's oracle maps to a kernel of ours
        # (vLLM refuses it, or reads it as auto): there is nothing to make eligible.
        raise ConfigError([InputIssue("--backend", "names no kernel: the engine accepts this moe_backend value, but no quant family's oracle maps it to a kernel modelled here (each refuses it or reads it as auto); ask about a backend, or a name that maps to one", backend_name, _why_not_names(catalog))])
    target = lambda row: row.entry.backend in backend  # noqa: E731
    start = evaluate(catalog, config, env, policy=policy)
    failing, kernel = target_failures(start, target)
    if failing is None:
        requested = None
        if start.kernel != kernel:
            assert kernel is not None
            requested = request_decision(catalog, config, env, next(r.entry.backend for r in start.rows if r.entry.id == kernel), policy=policy)
        return WhyNot(backend, True, kernel, (), config, env, start, True, keep=kept, requested=requested)
    r = search_eligible(catalog, config, env, target, n=n, keep=kept, policy=policy, admissible=admissible)
    return WhyNot(backend, False, r.kernel, r.edits, r.config, r.environment, r.decision, r.found, r.blocking, r.explored, r.alternatives, kept, refused_at_start=r.refused_at_start)


def _why_not_names(catalog: "Catalog") -> list[str]:
    """The ``--backend`` values why-not answers: backend ids, aliases and the request maps' names
    that map to at least one backend."""
    names = {n for n, bs in catalog.backend_names.items() if bs}
    names.update(n for rm in catalog.request_maps for n, bs in rm.names.items() if bs)
    return sorted(names)


def fixes(catalog: "Catalog", config: MoEConfig, env: Environment, *, n: int = 3, keep: Iterable[str] = DEFAULT_KEEP, backends: Iterable[str] | None = None, policy: Policy = Policy.FAITHFUL,
          admissible: Callable[[MoEConfig, Environment], bool | str | None] | None = None) -> tuple[Alternative, ...]:
    """For a dead end: up to ``n`` edit sets after which *some* kernel is eligible under ``policy``, cheapest first.

    Why-not without naming a backend (``backends``: the candidates of a strict request, whose
    failures the search edits, and any kernel an edit of the request makes selectable;
    empty, a name that maps to no kernel: any candidate); the first alternatives are usually one flag (``--ep``). Returns ``()`` when
    something is already eligible or nothing was found.
    """
    wanted = frozenset(backends) if backends else None
    # A kernel outside the request counts once it has no failure: only an edit of the request
    # reaches that (moe_backend back to auto: the search's request edits). vLLM has no fallback
    # from an explicit request, so where the request itself is the dead end, dropping it is
    # the smallest change; the fixes that keep it come from the requested kernels' failures.
    target = (lambda row: True) if wanted is None else (lambda row: row.entry.backend in wanted or not row.failures)
    r = search_eligible(catalog, config, env, target, n=n, keep=_check_keep(keep), policy=policy, selected=True, admissible=admissible)
    return r.alternatives
