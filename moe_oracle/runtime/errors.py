"""Errors the runtime raises on purpose. Each carries its facts as attributes; ``str()`` only formats.

All derive from :class:`moe_oracle.core.errors.MoEOracleError` and from the matching
builtin (``ValueError``, ``ImportError``, ``RuntimeError``) so callers may catch
either.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import MoEOracleError

__all__ = [
    "AdapterContractError",
    "AdapterImportError",
    "CompositionError",
    "RankDecision",
    "RankDisagreementError",
    "UnsupportedConfigError",
]


class CompositionError(MoEOracleError, ValueError):
    """Experts and prepare/finalize do not compose (interface or activation format differ).

    Attributes:
        experts: experts class name.
        prepare_finalize: prepare/finalize class name.
        field: ``"interface"``, ``"activation_format"`` or ``"carries_router_logits"``.
        experts_value, prepare_finalize_value: the two values that disagree.
    """

    def __init__(self, experts: str, prepare_finalize: str, field: str, experts_value: object, prepare_finalize_value: object) -> None:
        self.experts = experts
        self.prepare_finalize = prepare_finalize
        self.field = field
        self.experts_value = experts_value
        self.prepare_finalize_value = prepare_finalize_value
        super().__init__(
            f"cannot compose experts {experts} ({field}={experts_value}) with prepare/finalize "
            f"{prepare_finalize} ({field}={prepare_finalize_value}): both must be monolithic or both modular, "
            "with the same activation format, and a monolithic experts kernel needs a prepare/finalize that carries router logits"
        )


class AdapterImportError(MoEOracleError, ImportError):
    """The ``module:Class`` adapter of a selected kernel cannot be imported.

    Attributes:
        adapter: the ``module:Class`` string from the table.
        packages: pip package names that provide it (from the table entry, else a known mapping).
        reason: the underlying import failure, one line.
    """

    def __init__(self, adapter: str, packages: tuple[str, ...], reason: str) -> None:
        self.adapter = adapter
        self.packages = packages
        self.reason = reason
        hint = f"; install {' and '.join(repr(p) for p in packages)} (pip install {' '.join(packages)})" if packages else ""
        super().__init__(f"adapter {adapter!r} cannot be imported: {reason}{hint}")


class AdapterContractError(MoEOracleError, TypeError):
    """An adapter imported, but it does not implement moe_oracle's runtime interface.

    vLLM's classes (``provider: vllm`` in the tables) are run by vLLM itself; ``make_kernel``
    only builds classes deriving from :class:`~moe_oracle.runtime.interfaces.ExpertsBase` or
    :class:`~moe_oracle.runtime.interfaces.PrepareFinalizeBase`.
    """

    def __init__(self, adapter: str, expected: str) -> None:
        self.adapter = adapter
        self.expected = expected
        super().__init__(f"adapter {adapter!r} is not a {expected}: it belongs to another runtime (e.g. vLLM) and cannot be built by moe_oracle.runtime.make_kernel")


class UnsupportedConfigError(MoEOracleError, ValueError):
    """A runtime component was asked for something it does not implement.

    Attributes:
        component: class or function name.
        field: the offending field (``"activation"``, ``"routing_method"``, ``"quant.weight"`` ...).
        value: the value seen.
        allowed: what the component implements.
    """

    def __init__(self, component: str, field: str, value: object, allowed: object) -> None:
        self.component = component
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{component}: {field}={value!r} is not supported; allowed: {allowed}")


@dataclass(frozen=True)
class RankDecision:
    """What one rank selected: its rank, the Decision fingerprint, kernel and prepare/finalize ids."""

    rank: int
    fingerprint: str
    kernel: str | None
    prepare_finalize: str | None


class RankDisagreementError(MoEOracleError, RuntimeError):
    """Ranks of one process group selected different kernels (or under different tables/environments).

    Attributes:
        ranks: every rank's :class:`RankDecision`, by rank.
    """

    def __init__(self, ranks: tuple[RankDecision, ...]) -> None:
        self.ranks = ranks
        groups: dict[tuple[str, str | None, str | None], list[int]] = {}
        for r in ranks:
            groups.setdefault((r.fingerprint, r.kernel, r.prepare_finalize), []).append(r.rank)
        parts = [f"ranks {members} selected {kernel} + {pf} (fingerprint {fp})" for (fp, kernel, pf), members in groups.items()]
        super().__init__(f"ranks disagree on the MoE kernel ({len(groups)} different decisions): " + "; ".join(parts))
