"""Stand-in 2 of :mod:`.standins`: the EP group's all2all manager (worker side).

vLLM builds the manager when the EP communicator starts (``vllm/distributed/device_communicators/
cuda_communicator.py``: one class per ``all2all_backend``); the prepare/finalize classes read it
through ``get_ep_group().device_communicator.all2all_manager``. No process group exists here, so
:class:`All2AllManagerStandIn` answers what rank 0 of the EP group knows (``world_size``, ``rank``,
``dp_world_size``, ``max_num_ep_ranks``) and records what a prepare/finalize asks it to set up
(``get_handle``; the typed stand-ins below also ``initialize``, ``get_communication``,
``commit_staged_state``); reading anything else raises, so a release that starts using more fails loudly.

Some prepare/finalize classes assert the manager's class (vLLM 0.33.0-0.34.0
``prepare_finalize/flashinfer_nvlink_one_sided.py`` ``isinstance(all2all_manager,
FlashInferNVLinkOneSidedManager)``, 0.34.0 the two-sided one, 0.29.0 ``nixl_ep.py``): for those
backends (:data:`TYPED_MANAGERS`) the stand-in is an instance of a subclass of the release's own
manager class whose every attribute lookup still goes through the stand-in's allow-list; the real
class's ``__init__`` and methods never run. :func:`self_check` fails when a release asserts another
manager class.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

__all__ = ["All2AllManagerStandIn", "HandleStandIn", "TYPED_MANAGERS", "manager_standin", "retype_ep_manager", "self_check", "typed_class"]

MANAGERS_MODULE = "vllm.distributed.device_communicators.all2all"

TYPED_MANAGERS: dict[str, str] = {
    "flashinfer_nvlink_one_sided": "FlashInferNVLinkOneSidedManager",
    "flashinfer_nvlink_two_sided": "FlashInferNVLinkTwoSidedManager",
    "flashinfer_all2allv": "FlashInferNVLinkTwoSidedManager",
    "nixl_ep": "NixlEPAll2AllManager",
}
"""``all2all_backend`` -> the manager class vLLM 0.29.0-0.34.0 ``CudaCommunicator`` builds for it,
for the backends whose prepare/finalize asserts that class."""

_SIZES = ("world_size", "rank", "dp_world_size", "dp_rank", "max_num_ep_ranks")
_ALLOWED = frozenset({*_SIZES, "handles", "calls", "get_handle", "_allowed"})
_TYPED_ALLOWED = _ALLOWED | {"initialize", "get_communication", "commit_staged_state"}


class HandleStandIn:
    """What ``all2all_manager.get_handle(kwargs)`` (or ``get_communication``) returns: records the
    kwargs, nothing else."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.kwargs = dict(kwargs)

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the model-construction tier has no communication buffer: handle.{name} was read")


class All2AllManagerStandIn:
    """The EP group's all2all manager as rank 0 sees it."""

    def __init__(self, world_size: int, dp_world_size: int) -> None:
        vars(self).update(world_size=world_size, rank=0, dp_world_size=dp_world_size, dp_rank=0, max_num_ep_ranks=world_size, handles=[], calls=[])

    def get_handle(self, kwargs: dict[str, Any]) -> HandleStandIn:
        handle = HandleStandIn(kwargs)
        self.handles.append(handle)
        return handle

    def initialize(self, **kwargs: Any) -> None:
        """FlashInfer one-sided: sizes the workspace (recorded, none allocated)."""
        self.calls.append(("initialize", kwargs))

    def get_communication(self, **kwargs: Any) -> HandleStandIn:
        """FlashInfer two-sided (0.34.0): the communication object (recorded)."""
        self.calls.append(("get_communication", kwargs))
        return HandleStandIn(kwargs)

    def commit_staged_state(self) -> None:
        """NIXL EP (0.29.0): commits the expert layout staged for the buffer (recorded)."""
        self.calls.append(("commit_staged_state", {}))

    _allowed = _ALLOWED

    def __getattribute__(self, name: str) -> Any:
        if name in object.__getattribute__(self, "_allowed") or (name.startswith("__") and name.endswith("__")):
            return object.__getattribute__(self, name)
        raise RuntimeError(f"the model-construction tier stands in for the all2all manager: .{name} was read")


def manager_standin(backend: str | None, world_size: int, dp_world_size: int, cuda_alike: bool = True) -> All2AllManagerStandIn:
    """The stand-in for ``backend``: typed as the release's manager class where a prepare/finalize
    asserts it (:data:`TYPED_MANAGERS`) and the platform's communicator builds that class
    (``cuda_alike``: CUDA and ROCm use ``CudaCommunicator``; the CPU and XPU communicators fall back
    to ``AgRsAll2AllManager`` for every backend, vLLM 0.29.0-0.34.0 ``cpu_communicator.py`` /
    ``xpu_communicator.py``), else the plain stand-in, which has only ``get_handle`` (so a
    FlashInfer or NIXL prepare/finalize fails on it, as on the fallback manager).

    Raises:
        AttributeError: the release has no manager class of that name (the self-check names it).
    """
    name = TYPED_MANAGERS.get(backend or "") if cuda_alike else None
    if name is None:
        return All2AllManagerStandIn(world_size, dp_world_size)
    return typed_class(getattr(importlib.import_module(MANAGERS_MODULE), name))(world_size, dp_world_size)


def typed_class(real: type) -> type:
    """A stand-in class that is a subclass of the release's manager class ``real`` (so that an
    ``isinstance`` assert holds) while every attribute lookup still goes through the stand-in's
    allow-list, with the set-up calls a typed prepare/finalize makes recorded."""
    # The release's class may define the sizes as properties over its live buffer (0.34.0
    # NixlEPAll2AllManager.max_num_ep_ranks asserts the buffer exists); a data descriptor of the
    # base class would win over the instance's value, so the typed class shadows each with its own.
    shadows = {n: property(lambda self, n=n: vars(self)[n]) for n in _SIZES}
    return type(f"{real.__name__}StandIn", (All2AllManagerStandIn, real), {"__init__": All2AllManagerStandIn.__init__, "_allowed": _TYPED_ALLOWED, **shadows})


def retype_ep_manager(backend: str | None) -> All2AllManagerStandIn | None:
    """Give the installed EP group stand-in (:func:`.standins.install_groups`) the manager
    stand-in for ``backend`` (the layer's ``moe_parallel_config.all2all_backend``), as vLLM's
    communicator would have built it for that backend. Returns it (``None``: no EP communicator,
    or a real one: only a stand-in is replaced)."""
    import vllm.distributed.parallel_state as ps

    comm = vars(ps._EP).get("device_communicator") if ps._EP is not None else None
    if comm is None or "installed_by_standins" not in vars(comm):
        return None  # no EP communicator, or a real one (not under the stand-ins): left alone
    from vllm.platforms import current_platform

    if not (current_platform.is_cuda_alike() or current_platform.is_cpu() or current_platform.is_xpu()):
        # The base DeviceCommunicatorBase (TPU, out-of-tree platforms) builds no all2all manager:
        # get_ep_all2all_manager asserts one exists (vLLM 0.29.0-0.34.0 P/all2all_utils.py).
        comm.all2all_manager = None
        return None
    ep, dp = vars(ps._EP)["world_size"], vars(ps._DP)["world_size"]
    comm.all2all_manager = manager_standin(backend, ep, dp, current_platform.is_cuda_alike())
    return comm.all2all_manager


_ASSERTED = re.compile(r"isinstance\(\s*(?:self\.)?all2all_manager\s*,\s*(\w+)\s*\)")


def self_check() -> list[str]:
    """A manager class a prepare/finalize of this release asserts that :data:`TYPED_MANAGERS` does
    not type, or a typed class the release lacks."""
    pf_dir = Path(inspect.getfile(importlib.import_module("vllm.model_executor.layers.fused_moe"))).parent / "prepare_finalize"
    asserted = {m for f in sorted(pf_dir.glob("*.py")) for m in _ASSERTED.findall(f.read_text())}
    problems = [f"a prepare/finalize asserts all2all_manager is a {m}: not typed by the stand-in (standins 2)" for m in sorted(asserted - set(TYPED_MANAGERS.values()))]
    mod = importlib.import_module(MANAGERS_MODULE)
    problems += [f"{MANAGERS_MODULE}.{m} is gone (standins 2)" for m in sorted(set(TYPED_MANAGERS.values())) if not hasattr(mod, m)]
    return problems
