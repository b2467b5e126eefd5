"""The engine's entry point: an :class:`Oracle` owns a catalog, an environment and a memo.

``Oracle.default().select(config)`` is the call an inference engine makes per
MoE layer. Repeated selects of an equal config under the same environment are
answered from the oracle's own memo (keyed on the frozen config, the
environment fingerprint and the tables hash). Nothing is global: two oracles
share no state.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from .catalog import Catalog, load_catalog
from .config import MoEConfig
from .decision import Decision
from .engine import evaluate
from .environment import Environment, probe_environment
from .errors import NoEligibleKernelError

__all__ = ["Oracle", "default_catalog", "select"]


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The catalog shipped with the package (immutable, so caching it shares no mutable state).

    Raises:
        TableError: the shipped tables are invalid (a packaging bug).
    """
    return load_catalog()


class Oracle:
    """Selects MoE kernels from one catalog under one default environment.

    Args:
        catalog: compiled tables.
        environment: default environment for :meth:`select` (default: declared and
            empty, so every package predicate abstains and is recorded as an assumption).
        memo_size: decisions kept before the memo is cleared.
    """

    def __init__(self, catalog: Catalog, environment: Environment | None = None, *, memo_size: int = 4096) -> None:
        self._catalog = catalog
        self._environment = environment if environment is not None else Environment()
        self._memo: dict[tuple[MoEConfig, str], Decision] = {}
        self._memo_size = memo_size

    @classmethod
    def default(cls, environment: Environment | None = None, *, probe: bool = False) -> "Oracle":
        """Oracle over the shipped tables; ``probe=True`` reads installed packages and env vars."""
        catalog = default_catalog()
        if probe:
            environment = probe_environment(catalog.package_names, [v.name for v in catalog.env_vars])
        return cls(catalog, environment)

    @property
    def catalog(self) -> Catalog:
        return self._catalog

    @property
    def environment(self) -> Environment:
        return self._environment

    def select(self, config: MoEConfig, env: Environment | None = None, *, strict: bool = True) -> Decision:
        """Choose the experts kernel and prepare/finalize for ``config``.

        Args:
            config: the MoE layer and deployment.
            env: environment to evaluate under (default: the oracle's).
            strict: raise when nothing (or not the requested backend) is eligible.

        Returns:
            The Decision; ``decision.kernel`` is the winner's id.

        Raises:
            NoEligibleKernelError: ``strict`` and no candidate is eligible; carries the Decision.
            ConfigError: ``config.moe_backend`` names an unknown backend.
        """
        env = env if env is not None else self._environment
        key = (config, env.fingerprint)
        decision = self._memo.get(key)
        if decision is None:
            decision = evaluate(self._catalog, config, env)
            if len(self._memo) >= self._memo_size:
                self._memo.clear()
            self._memo[key] = decision
        if strict and decision.winner is None:
            raise NoEligibleKernelError(decision)
        return decision

    def explain(self, config: MoEConfig, env: Environment | None = None) -> Decision:
        """Same as ``select(..., strict=False)``: never raises for "nothing eligible"."""
        return self.select(config, env, strict=False)

    def why_not(self, config: MoEConfig, backend: str, env: Environment | None = None, **options: Any):  # noqa: ANN201 - see whynot.WhyNot
        """Smallest changes to ``config``/``env`` that make ``backend`` eligible (see :mod:`moe_oracle.whynot`;
        ``options``: ``n`` alternatives, ``keep`` categories)."""
        from .whynot import why_not

        return why_not(self, config, backend, env if env is not None else self._environment, **options)

    def reload(self, directories: Sequence[Path] | None = None) -> Catalog:
        """Replace the tables with a freshly loaded set; on any error keep serving the old one.

        Raises:
            TableError: the new set is invalid; the oracle is unchanged.
        """
        catalog = load_catalog(directories)
        self._catalog = catalog
        self._memo.clear()
        return catalog

    def clear_memo(self) -> None:
        self._memo.clear()


def select(config: MoEConfig, *, env: Environment | None = None, catalog: Catalog | None = None, strict: bool = True) -> Decision:
    """Select without an Oracle object (no memo). See :meth:`Oracle.select`.

    Raises:
        NoEligibleKernelError: ``strict`` and nothing is eligible.
        ConfigError: unknown ``moe_backend``.
    """
    decision = evaluate(catalog or default_catalog(), config, env if env is not None else Environment())
    if strict and decision.winner is None:
        raise NoEligibleKernelError(decision)
    return decision
