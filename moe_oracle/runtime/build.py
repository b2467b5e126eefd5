"""Build the kernel a Decision chose, by the ``adapter`` strings its tables declare.

The selection core never builds anything (it imports neither torch nor this package); this
module is the one place a Decision becomes a kernel. Decisions of the runtime view
(``Oracle.default(view="runtime")``) name our adapters; an engine-view Decision names vLLM's
classes, which :func:`make_kernel` refuses with the package to install or the class's owner.

No per-backend code: the winner row's experts entry and prepare/finalize entry each
name a ``module:Class``; :func:`resolve_adapter` imports it and the uniform
constructors of :mod:`moe_oracle.runtime.interfaces` build it. An adapter whose
package is missing raises :class:`~moe_oracle.runtime.errors.AdapterImportError`
naming the package to install; a class of another runtime (vLLM's, ``provider: vllm``)
raises :class:`~moe_oracle.runtime.errors.AdapterContractError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Iterable

from .errors import AdapterContractError, AdapterImportError
from .interfaces import ExpertsBase, PrepareFinalizeBase
from .kernel import FusedMoEKernel
from .spec import LayerSpec
from .weights import MoEWeights

if TYPE_CHECKING:
    from ..core.decision import Decision

__all__ = ["make_kernel", "make_kernel_from_adapters", "resolve_adapter", "spec_for_decision"]

# Top-level module -> pip package, for adapters whose table entry declares no packages.
_PACKAGE_OF_MODULE = {
    "vllm": "vllm",
    "flashinfer": "flashinfer-python",
    "deep_ep": "deep-ep",
    "mori": "mori",
    "nixl_ep": "nixl-ep",
    "aiter": "aiter",
    "torch": "torch",
}


def resolve_adapter(adapter: str, *, packages: Iterable[str] = ()) -> type:
    """Import the class named by ``"package.module:Class"``.

    Args:
        adapter: the table's ``adapter`` string.
        packages: pip packages the table entry declares (named in the error when the import fails).

    Raises:
        AdapterImportError: malformed string, module not importable, or no such class.

    >>> resolve_adapter("moe_oracle.runtime.kernel:FusedMoEKernel").__name__
    'FusedMoEKernel'
    """
    module_name, sep, class_name = adapter.partition(":")
    if not sep or not module_name or not class_name:
        raise AdapterImportError(adapter, (), "not of the form 'package.module:Class'")
    declared = tuple(p for p in packages if p != "torch")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or module_name
        top = missing.split(".")[0]
        pkgs = declared or ((_PACKAGE_OF_MODULE[top],) if top in _PACKAGE_OF_MODULE else (top,))
        raise AdapterImportError(adapter, pkgs, f"module {missing!r} is not installed ({exc})") from exc
    try:
        return getattr(module, class_name)
    except AttributeError as exc:
        raise AdapterImportError(adapter, (), f"module {module_name!r} has no class {class_name!r}") from exc


def make_kernel_from_adapters(
    experts_adapter: str,
    prepare_finalize_adapter: str,
    *,
    spec: LayerSpec,
    weights: MoEWeights,
    process_group: Any = None,
    max_tokens_per_expert: int | None = None,
    experts_packages: Iterable[str] = (),
    prepare_finalize_packages: Iterable[str] = (),
) -> FusedMoEKernel:
    """Build ``FusedMoEKernel(PF(spec, ...), Experts(spec, weights))`` from two adapter strings.

    Args:
        experts_adapter, prepare_finalize_adapter: ``module:Class`` strings.
        spec: this rank's layer spec.
        weights: this rank's experts (vLLM layout; adapters convert at construction).
        process_group: ``torch.distributed`` group of the dispatching ranks (``None``: default/none).
        max_tokens_per_expert: fixed batched capacity (batched prepare/finalize only).
        experts_packages, prepare_finalize_packages: named in an import error.

    Raises:
        AdapterImportError: an adapter cannot be imported.
        AdapterContractError: an adapter is not a moe_oracle experts / prepare-finalize class.
        CompositionError: the two halves do not compose.
    """
    experts_cls = resolve_adapter(experts_adapter, packages=experts_packages)
    pf_cls = resolve_adapter(prepare_finalize_adapter, packages=prepare_finalize_packages)
    if not (isinstance(experts_cls, type) and issubclass(experts_cls, ExpertsBase)):
        raise AdapterContractError(experts_adapter, "moe_oracle.runtime.interfaces.ExpertsBase subclass")
    if not (isinstance(pf_cls, type) and issubclass(pf_cls, PrepareFinalizeBase)):
        raise AdapterContractError(prepare_finalize_adapter, "moe_oracle.runtime.interfaces.PrepareFinalizeBase subclass")
    experts = experts_cls(spec, weights)
    pf = pf_cls(spec, process_group=process_group, max_tokens_per_expert=max_tokens_per_expert)
    return FusedMoEKernel(pf, experts)


def spec_for_decision(decision: "Decision", *, rank: int = 0) -> LayerSpec:
    """The layer spec of ``decision.config`` as deployed on ``rank``.

    EP size and intermediate size per partition come from the decision's normalized inputs;
    with expert parallelism ``rank`` is the EP rank, without it (ep_size 1: TP-sharded
    intermediate) every rank holds all experts and ``rank`` does not enter the spec.
    """
    values = decision.normalized.values
    ep_size = int(values.get("ep_size", 1) or 1)
    return LayerSpec.from_config(
        decision.config,
        ep_rank=rank if ep_size > 1 else 0,
        ep_size=ep_size,
        intermediate_size=int(values.get("intermediate_size_per_partition", decision.config.intermediate_size)),
    )


def _declared_packages(entry: Any) -> tuple[str, ...]:
    declared = getattr(entry, "declared", None) or {}
    packages = declared.get("packages") if hasattr(declared, "get") else None
    return tuple(packages) if packages else ()


def make_kernel(
    decision: "Decision",
    *,
    weights: MoEWeights,
    process_group: Any = None,
    spec: LayerSpec | None = None,
    max_tokens_per_expert: int | None = None,
) -> FusedMoEKernel:
    """The kernel the Decision selected, built from its winner row's declared adapters.

    Reads ``decision.rows[decision.winner].entry.adapter`` (experts) and ``.pf.adapter``
    (prepare/finalize); nothing here depends on the backend.

    Args:
        decision: a Decision with a winner.
        weights: this rank's experts in vLLM layout.
        process_group: the dispatching ranks' ``torch.distributed`` group.
        spec: override the spec derived from the decision (:func:`spec_for_decision`, with this
            rank's position in ``process_group``).
        max_tokens_per_expert: fixed batched capacity.

    Raises:
        ValueError: the decision has no winner, or its winner has no prepare/finalize.
        AdapterImportError, AdapterContractError, CompositionError: see :func:`make_kernel_from_adapters`.
    """
    if decision.winner is None:
        raise ValueError(f"the decision selected no kernel, nothing to build: {decision.summary()}")
    row = decision.rows[decision.winner]
    if row.pf is None:
        raise ValueError(f"the selected kernel {row.entry.id} has no paired prepare/finalize")
    if spec is None:
        from .comm import group_info

        rank, _ = group_info(process_group)
        spec = spec_for_decision(decision, rank=rank)
    return make_kernel_from_adapters(
        row.entry.adapter,
        row.pf.adapter,
        spec=spec,
        weights=weights,
        process_group=process_group,
        max_tokens_per_expert=max_tokens_per_expert,
        experts_packages=_declared_packages(row.entry),
        prepare_finalize_packages=_declared_packages(row.pf),
    )
