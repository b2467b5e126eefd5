"""The engine's entry point: an :class:`Oracle` owns a catalog, an environment, a policy and a memo.

``Oracle.default().select(config)`` answers "which MoE kernel does the engine run for this
layer", for the engine release the environment names (or the newest modelled one, assumed), under
the faithful policy (what the engine does, known bugs included, with warnings).
``Oracle.default(view="runtime")`` answers among what this package's runtime can build instead,
and ``policy="safe"`` (per oracle or per call) rejects known-bad kernels and unchecked early returns.

Repeated selects of an equal config under the same environment and policy are answered from the
oracle's own memo (keyed on the frozen config, the environment fingerprint and notes, and the
policy; one oracle has one table set). The notes are in the key because the record echoes them
although no selection reads them. Nothing is global: two oracles share no state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .catalog import Catalog
from .loading import default_catalog, default_runtime_catalog, load_catalog, load_runtime_catalog
from .config import MoEConfig
from .decision import Decision
from .engine import evaluate
from .environment import Environment, probe_environment
from .errors import ConfigError, InputIssue
from .decision import NoEligibleKernelError
from .vocab import Policy

__all__ = ["VIEWS", "Oracle", "catalog_for_view", "default_catalog", "default_runtime_catalog", "parse_policy", "require_config", "require_environment", "select"]

VIEWS = ("engine", "runtime")
"""``engine``: what the engine runs (its own kernels only); ``runtime``: what our runtime can build."""


def catalog_for_view(view: str) -> Catalog:
    """The shipped catalog of ``view`` (``engine`` or ``runtime``).

    Raises:
        ConfigError: an unknown view.
    """
    if view == "engine":
        return default_catalog()
    if view == "runtime":
        return default_runtime_catalog()
    raise ConfigError([InputIssue("view", "unknown view", view, list(VIEWS))])


def parse_policy(policy: Policy | str) -> Policy:
    """``policy`` as a :class:`Policy`.

    Raises:
        ConfigError: not a policy name (naming the allowed ones).
    """
    try:
        return Policy(policy)
    except ValueError:
        raise ConfigError([InputIssue("policy", "unknown policy", policy, [p.value for p in Policy])]) from None


class Oracle:
    """Selects MoE kernels from one catalog under one default environment and policy.

    Args:
        catalog: compiled tables (any release's view: each selection uses the view of the release
            its environment names).
        environment: default environment for :meth:`select` (default: declared and empty, so every
            package predicate abstains and is recorded as an assumption, and the engine release is
            the newest modelled one, assumed).
        policy: default policy: ``faithful`` (the engine's own answer) or ``safe``.
        memo_size: decisions kept before the memo is cleared.

    Raises:
        ConfigError: an unknown policy.
    """

    def __init__(self, catalog: Catalog, environment: Environment | None = None, *, policy: Policy | str = Policy.FAITHFUL, memo_size: int = 4096) -> None:
        self._catalog = catalog
        self._environment = environment if environment is not None else Environment()
        self._policy = parse_policy(policy)
        self._memo: dict[tuple[MoEConfig, str, tuple[str, ...], Policy], Decision] = {}
        self._memo_size = memo_size

    @classmethod
    def default(cls, environment: Environment | None = None, *, probe: bool = False, view: str = "engine", policy: Policy | str = Policy.FAITHFUL) -> "Oracle":
        """Oracle over the shipped tables.

        Args:
            environment: default environment (ignored with ``probe``).
            probe: read installed packages (the engine release among them) and env vars.
            view: ``engine`` (what vLLM runs; default) or ``runtime`` (what our runtime builds).
            policy: ``faithful`` (default) or ``safe``.

        Raises:
            ConfigError: an unknown view or policy.
        """
        catalog = catalog_for_view(view)
        if probe:
            environment = probe_environment(catalog.package_names, [v.name for v in catalog.env_vars])
        return cls(catalog, environment, policy=policy)

    @property
    def catalog(self) -> Catalog:
        return self._catalog

    @property
    def environment(self) -> Environment:
        return self._environment

    @property
    def view(self) -> str:
        """``engine`` or ``runtime``: which table set this oracle answers from."""
        return self._catalog.view_name

    @property
    def policy(self) -> Policy:
        return self._policy

    def select(self, config: MoEConfig, env: Environment | None = None, *, strict: bool = True, policy: Policy | str | None = None) -> Decision:
        """Choose the experts kernel and prepare/finalize for ``config``.

        Args:
            config: the MoE layer and deployment.
            env: environment to evaluate under (default: the oracle's); its ``vllm`` package, when
                declared or probed, is the engine release the answer is for.
            strict: raise when nothing (or not the requested backend) is eligible.
            policy: override the oracle's policy for this call.

        Returns:
            The Decision; ``decision.kernel`` is the winner's id, ``decision.release`` the engine
            release it is for, ``decision.warnings`` what it holds despite.

        Raises:
            NoEligibleKernelError: ``strict`` and no candidate is eligible; carries the Decision.
            ConfigError: ``config.moe_backend`` names an unknown backend, or an unknown policy.
            TypeError: ``config`` is not a MoEConfig (a dict of its fields, say), or ``env`` is
                neither an Environment nor ``None`` (a dict of package versions, say).
        """
        require_config(config, "Oracle.select")
        require_environment(env, "Oracle.select")
        env = env if env is not None else self._environment
        pol = self._policy if policy is None else parse_policy(policy)
        key = (config, env.fingerprint, env.notes, pol)
        decision = self._memo.get(key)
        if decision is None:
            decision = evaluate(self._catalog, config, env, policy=pol)
            if len(self._memo) >= self._memo_size:
                self._memo.clear()
            self._memo[key] = decision
        if strict and decision.winner is None:
            raise NoEligibleKernelError(decision)
        return decision

    def explain(self, config: MoEConfig, env: Environment | None = None, *, policy: Policy | str | None = None) -> Decision:
        """Same as ``select(..., strict=False)``: never raises for "nothing eligible"."""
        return self.select(config, env, strict=False, policy=policy)

    def reload(self, directories: Sequence[Path] | None = None) -> Catalog:
        """Replace the tables with a freshly loaded set; on any error keep serving the old one.

        An engine-view oracle reloads engine tables; a runtime-view oracle reloads runtime tables
        (on top of the shipped engine tables).

        Raises:
            TableError: the new set is invalid; the oracle is unchanged.
        """
        if self.view == "runtime":
            catalog = load_runtime_catalog(default_catalog(), directories)
        else:
            catalog = load_catalog(directories)
        self._catalog = catalog
        self._memo.clear()
        return catalog

    def clear_memo(self) -> None:
        self._memo.clear()


def require_config(config: object, call: str) -> None:
    """A clear TypeError for what is not a :class:`MoEConfig` (a dict was "unhashable type")."""
    if not isinstance(config, MoEConfig):
        raise TypeError(
            f"{call} takes a MoEConfig, not {type(config).__name__}: build one with MoEConfig(num_experts=..., top_k=..., "
            "hidden_size=..., intermediate_size=..., device=Device(...)), or from a Hugging Face config.json with "
            "moe_oracle.inputs.hf.from_hf_config(load_hf_config(path)) and MoEConfig(device=..., **ck.kwargs)"
        )


def require_environment(env: object, call: str) -> None:
    """A clear TypeError for an ``env`` that is not an :class:`Environment` (a dict was "'dict'
    object has no attribute 'fingerprint'")."""
    if env is not None and not isinstance(env, Environment):
        raise TypeError(
            f"{call} takes an Environment (or None), not {type(env).__name__}: build one with "
            "Environment.declared(packages=['vllm==0.31.0', 'flashinfer-python==0.7.2'], env={'VLLM_USE_DEEP_GEMM': '0'}) "
            "(NAME==VERSION, or a bare NAME: installed, version unknown), or probe this host with "
            "moe_oracle.probe_environment(package_names, env_var_names)"
        )


def select(config: MoEConfig, *, env: Environment | None = None, catalog: Catalog | None = None, strict: bool = True, view: str = "engine", policy: Policy | str = Policy.FAITHFUL) -> Decision:
    """Select without an Oracle object (no memo). See :meth:`Oracle.select`.

    ``catalog`` overrides ``view``.

    Raises:
        NoEligibleKernelError: ``strict`` and nothing is eligible.
        ConfigError: unknown ``moe_backend``, view or policy.
        TypeError: ``config`` is not a MoEConfig, or ``env`` not an Environment.
    """
    require_config(config, "select")
    require_environment(env, "select")
    decision = evaluate(catalog or catalog_for_view(view), config, env if env is not None else Environment(), policy=parse_policy(policy))
    if strict and decision.winner is None:
        raise NoEligibleKernelError(decision)
    return decision
