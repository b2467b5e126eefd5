"""Every piece of a vLLM process this tier stands in for while a release builds a model (worker side).

One place, each with a self-check (:func:`self_check`) that fails when the vLLM internal it
replaces has moved. What is *not* here runs as vLLM's own code: the engine arguments become a
``VllmConfig`` through ``EngineArgs.create_engine_config``; the model class comes from the
release's registry; ``initialize_model`` builds it; every ``FusedMoE`` layer, router, quant
method, selector and ``maybe_make_prepare_finalize`` is the release's.

Stand-ins (vLLM 0.29.0-0.34.0):

1. **Process groups** (``vllm.distributed.parallel_state._TP/_PP/_DP/_EP/_PCP/_DCP/_EPLB/_WORLD``
   and, where present, ``_ETP``/``_INNER_DP_WORLD``): a :class:`GroupStandIn` per group, as rank 0
   sees it: ``world_size``, ``rank_in_group`` 0, ``rank`` 0, ``ranks``, ``local_rank`` 0,
   ``is_first_rank``/``is_last_rank`` true, ``device_group``/``cpu_group`` a
   :class:`ProcessGroupStandIn` (``size()``, ``rank()``), ``device_communicator`` carrying the
   all2all manager (EP group only). Any other attribute raises, so a release that starts using
   one fails loudly instead of silently reading a default. Sizes: TP = ``--tp``, DP = ``--dp``,
   PCP = ``--pcp`` (the deployment's ``pcp``), EP = EPLB = TP x PCP x DP (vLLM 0.29.0-0.34.0
   ``parallel_state.initialize_model_parallel``: the EP group spans DP x PCP x TP), PP = DCP = 1,
   WORLD = TP x PCP x DP. The fused-MoE layer reads PCP from this group
   (``P/layer.py make_parallel_config``: ``get_pcp_group().world_size`` when the model class
   passes no ``pcp_size``; the self-check fails when it stops doing so), the engine config from
   ``prefill_context_parallel_size`` (set by the worker).
2. **All2all manager** (``get_ep_group().device_communicator.all2all_manager``, read by
   ``vllm.model_executor.layers.fused_moe.all2all_utils.get_ep_all2all_manager``): an
   :class:`All2AllManagerStandIn` with ``world_size`` = EP size, ``rank`` 0, ``dp_world_size`` =
   DP, ``max_num_ep_ranks`` = EP size, and ``get_handle(kwargs)`` returning a
   :class:`HandleStandIn` that records the kwargs (no communication buffer exists); typed as the
   release's manager class for the backends whose prepare/finalize asserts it (FlashInfer NVLink,
   NIXL EP) on CUDA-alike platforms, left plain on CPU / XPU (whose communicators fall back to
   the allgather/reduce-scatter manager), and absent on platforms whose communicator builds none
   (TPU); see :mod:`.all2all_standin` (its own self-check is part of :func:`self_check`).
3. **Optional P/F modules bound at import**: ``all2all_utils`` imports the DeepEP / MoRI / NIXL /
   MoonEP prepare-finalize classes only if the package probe is true *at import*; it is
   re-executed (``importlib.reload``) after the deployment's packages are applied, so the names
   exist exactly when vLLM would have imported them. A stand-in ``nixl_ep`` gets
   ``topk_idx_t = torch.int64`` first (:data:`PACKAGE_DTYPES`): ``prepare_finalize/nixl_ep.py``
   (0.29.0-0.33.0) asserts at import that ``getattr(nixl_ep, "topk_idx_t", torch.int64)`` is a
   ``torch.dtype``; int64 is its own fallback.
4. **Compilation**: ``compilation_config.mode`` is set to ``NONE`` after the config is built, so
   the ``@support_torch_compile`` decorator does not import the compile backends (which need
   compiled custom ops). ``max_cudagraph_capture_size`` etc. stay as the config computed them.
5. **Meta device**: the model is built under ``torch.device("meta")`` (no weights allocated),
   inside :class:`CudaToMeta`, a ``TorchFunctionMode`` that turns an explicit CUDA device (or accelerator index) in a
   tensor factory / ``.to()`` / ``.cuda()`` into ``meta`` (vLLM 0.33.0-0.34.0's ``cutlass_mla`` module
   allocates a 128 MB CUDA workspace when the MLA backend is imported; this CPU torch has no CUDA).
   5b: an integer/bool tensor of fewer than 2**20 elements created without a device is made on the
   CPU with real values (expert maps: 0.31.0 calls ``nonzero`` on one while building the layer,
   which meta tensors cannot answer); see :mod:`.meta_device` (5, 5b and 8).
6. **Type unions of stand-in package attributes**: P/F modules annotate with
   ``deep_ep.Config | None`` at class-definition time; the stand-in attribute values of
   :mod:`moe_oracle.verify.vllm_sim` (``StubValue``) get ``__or__``/``__ror__`` returning
   themselves (:func:`patch_stub_values`), so such modules import as they would with the package.
7. **Compiled ops of a GPU build** (``torch.ops._C.<name>``, read by layers at construction, e.g.
   ``SiluAndMul`` binds ``torch.ops._C.silu_and_mul``): on a simulated CUDA/ROCm platform a
   name this CPU torch lacks resolves to a stand-in op that raises when called
   (:func:`install_gpu_ops`), except the ops only vLLM's CPU build has (:data:`CPU_BUILD_OPS`, and
   any name ending ``_cpu``) and the ops :mod:`moe_oracle.verify.vllm_sim` manages per deployment.
   ``hasattr`` probes of the MoE / quantization code see these as a GPU build does; the
   self-check fails on a probed name not reviewed here (:data:`REVIEWED_GPU_PROBES`).
8. **CUDA streams and events** (``torch.cuda.Stream`` / ``Event`` / ``current_stream``: the shared
   experts' auxiliary stream, vLLM 0.33.0-0.34.0 ``vllm/utils/torch_utils.py aux_stream``): inert objects
   while the model is built (:func:`cuda_runtime`), restored after; so are the current device
   (``torch.cuda.current_device``, ``torch.accelerator.current_device_index``: 0; vLLM 0.34.0
   ``v1/attention/backends/mla/flashmla_sparse.py`` sizes its work by the SM count of
   ``torch.accelerator.current_device_index()`` when DeepSeek-V3.2 / GLM-5 attention is built) and
   the device properties (the simulated GPU's capability, 132 SMs).
9. **Model inspection in a subprocess** (``vllm.model_executor.models.registry._run_in_subprocess``,
   used to inspect a lazily registered architecture "to avoid initializing CUDA"): run in this
   process instead, where the simulation is installed (:func:`install_registry_inprocess`). vLLM
   logs why loading or inspecting an architecture failed and raises only "failed to be inspected";
   the stand-in and ``_LazyRegisteredModel.load_model_cls`` keep the exception
   (:data:`INSPECTION_ERRORS`) so the worker can name the cause (a handler on vLLM's logger would
   not do: 0.34.0 re-applies its logging ``dictConfig`` when the engine config is made). (vLLM's on-disk model-info cache, ``$VLLM_CACHE_ROOT/modelinfos``, can let an
   inspection pass that a fresh import fails: the same error then comes from the model's load.)
10. **GPU workspace manager** (``vllm.v1.worker.workspace.init_workspace_manager``, which the GPU
    model runner calls before building; sparse-attention layers need it): initialised on the meta
    device (:func:`init_workspace`).
11. **Triton dtypes** on vLLM's ``triton.language`` placeholder (``vllm.triton_utils``; this
    environment has no triton): module-level constants such as ``tl.bfloat16`` in attention
    kernels (0.33.0 ``v1/attention/ops/turboquant_soa``, imported by ROCm attention backends) get
    ``None`` as the placeholder's own dtypes do, and the placeholder's ``triton.Config`` keeps its
    arguments (``kwargs``, ``num_warps``, ``num_stages``) as triton's does (0.33.0
    ``mamba/ops/ssd_chunk_scan.py`` filters autotune configs by them at import on SM 9.0)
    (:func:`patch_triton_placeholder`).
12. **GPU-host packages no selection reads**: ``torchvision`` (image processors of multimodal
    models, imported when the registry inspects e.g. ``Llama4ForConditionalGeneration``) and
    ``cuda`` (cuda-python, imported by 0.33.0 ``minimax_rms_norm``) are stand-in modules
    (:func:`install_host_packages`); calling anything in them raises.
13. **The SM 9.0 BF16x3 router-GEMM warm-up** (vLLM 0.34.0 ``P/router/gate_linear.py``
    ``GateLinear._register_sm90_bf16x3_warmup``, called while an unquantized router gate is built
    on Hopper, e.g. MiniMax-M2): it imports a CuTe-DSL kernel module (``quack``, absent here) only
    to register a JIT warm-up for later; it is a no-op here (:func:`skip_router_gemm_warmup`). The
    self-check fails if the method starts setting anything on the layer.
14. **FlashInfer's communication module** (``flashinfer.comm`` and below; it imports cuda-python and
    the CuTe DSL at import): unimportable here (``ImportError``, :func:`block_flashinfer_comm`), so
    vLLM takes its own "FlashInfer all-reduce unavailable" path (``vllm/distributed/
    device_communicators/flashinfer_all_reduce.py`` catches ``ImportError``; 0.34.0 Qwen3.5's NVIDIA
    ops import it at module import). All-reduce fusion only; no MoE selection reads it (the
    simulation's FlashInfer probes read module sources, see :mod:`moe_oracle.verify.vllm_sim`).
    The self-check fails if vLLM stops catching ``ImportError`` around that import.
15. **Names made by loading weights** (``process_weights_after_loading`` never runs: no weights):
    where a quant method's ``get_fused_moe_quant_config`` reads a name only that step makes
    (compressed-tensors NVFP4: ``w13_weight_scale_2`` from ``w13_weight_global_scale``), the name
    is bound to the created meta parameter before vLLM is asked for the prepare/finalize; see
    :mod:`.unloaded` (its own self-check is part of :func:`self_check`).
16. Everything :class:`moe_oracle.verify.vllm_sim.Simulation` stands in for (platform with a
   pinned device capability, compiled capability queries, optional-package probes, env vars):
   see that module.
"""

from __future__ import annotations

import importlib
import importlib.util
import textwrap
import types
from typing import Any

from ..sim_standins import conditional_imports
from .all2all_standin import All2AllManagerStandIn, HandleStandIn
from .meta_device import cuda_runtime, cuda_to_meta
from .all2all_standin import self_check as all2all_self_check
from .unloaded import self_check as unloaded_self_check

__all__ = [
    "GroupStandIn",
    "ProcessGroupStandIn",
    "All2AllManagerStandIn",
    "HandleStandIn",
    "GROUP_GLOBALS",
    "install_groups",
    "reload_all2all_utils",
    "patch_stub_values",
    "install_gpu_ops",
    "cuda_runtime",
    "cuda_to_meta",
    "skip_router_gemm_warmup",
    "block_flashinfer_comm",
    "INSPECTION_ERRORS",
    "self_check",
]

GROUP_GLOBALS: tuple[str, ...] = ("_TP", "_PP", "_DP", "_EP", "_PCP", "_DCP", "_EPLB", "_WORLD")
"""``vllm.distributed.parallel_state`` globals every modelled release has (checked by :func:`self_check`)."""

OPTIONAL_GROUP_GLOBALS: tuple[str, ...] = ("_ETP", "_INNER_DP_WORLD")
"""Globals only some releases have; stood in where present."""

A2A = "vllm.model_executor.layers.fused_moe.all2all_utils"

# Names all2all_utils binds only when a package probe is true at import (0.29.0-0.34.0).
_CONDITIONAL_PF_NAMES: tuple[str, ...] = (
    "DeepEPHTPrepareAndFinalize",
    "DeepEPLLPrepareAndFinalize",
    "DEEPEP_QUANT_BLOCK_SHAPE",
    "DeepEPV2PrepareAndFinalize",
    "MoriPrepareAndFinalize",
    "MoriEPv2PrepareAndFinalize",  # 0.34.0, beside MoriPrepareAndFinalize under has_mori()
    "NixlEPPrepareAndFinalize",
    "NIXL_EP_QUANT_BLOCK_SHAPE",
    "MoonEPPrepareAndFinalize",
    "MOONEP_DEFAULT_NUM_PREFETCH_SLOTS",
    "MOONEP_DEFAULT_NUM_SMS",
    "MOONEP_DEFAULT_TOKEN_PADDING",
    "QuantFormat",  # under `if TYPE_CHECKING:` (0.33.0), never bound at run time
)


class ProcessGroupStandIn:
    """``torch.distributed.ProcessGroup`` as rank 0 of ``size`` ranks: ``size()`` and ``rank()`` only."""

    def __init__(self, size: int) -> None:
        self._size = size

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<process group stand-in size={self._size}>"


class GroupStandIn:
    """A ``GroupCoordinator`` as rank 0 of ``world_size`` ranks (no process group exists)."""

    def __init__(self, name: str, world_size: int, all2all: All2AllManagerStandIn | None = None) -> None:
        self.unique_name = name
        self.world_size = world_size
        self.rank_in_group = 0
        self.rank = 0
        self.local_rank = 0
        self.ranks = list(range(world_size))
        self.device_group = ProcessGroupStandIn(world_size)
        self.cpu_group = ProcessGroupStandIn(world_size)
        self.device_communicator = types.SimpleNamespace(all2all_manager=all2all, installed_by_standins=True) if all2all is not None else None
        self.is_first_rank = True
        self.is_last_rank = True
        self.use_device_communicator = all2all is not None

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the model-construction tier simulates no process group: GroupCoordinator.{name} was read ({self.unique_name})")


def install_groups(tp: int, dp: int, use_ep: bool, *, pcp: int = 1) -> All2AllManagerStandIn:
    """Install the group stand-ins for a TP x PCP x DP deployment (rank 0); returns the all2all manager."""
    import vllm.distributed.parallel_state as ps

    ep = tp * pcp * dp
    manager = All2AllManagerStandIn(ep, dp)
    sizes = {"_TP": tp, "_PP": 1, "_DP": dp, "_EP": ep, "_PCP": pcp, "_DCP": 1, "_EPLB": ep, "_WORLD": ep, "_ETP": 1, "_INNER_DP_WORLD": dp}
    for name in GROUP_GLOBALS + OPTIONAL_GROUP_GLOBALS:
        if name in GROUP_GLOBALS or hasattr(ps, name):
            setattr(ps, name, GroupStandIn(name.strip("_").lower(), sizes[name], manager if name == "_EP" else None))
    return manager


CPU_BUILD_OPS: frozenset[str] = frozenset({
    "cpu_fused_moe_int8", "cpu_has_amx_fp8", "create_onednn_mm_handler", "int8_scaled_mm_with_quant",
    "fp8_scaled_mm_with_quant", "dynamic_4bit_int_moe", "convert_weight_packed_scale_zp",
})
"""``torch.ops._C`` ops only vLLM's CPU build registers (vLLM 0.29-0.33 csrc/cpu/torch_bindings.cpp names)."""

REVIEWED_GPU_PROBES: frozenset[str] = frozenset({
    "allspark_w8a16_gemm", "awq_dequantize", "awq_gemm", "awq_marlin_repack", "copy_and_expand_dflash_inputs_kernel_impl",
    "cutlass_encode_and_reorder_int4b", "cutlass_encode_and_reorder_int4b_grouped", "cutlass_pack_scale_fp8", "cutlass_w4a8_mm",
    "fp32_router_gemm", "gptq_gemm", "gptq_marlin_repack", "hadacore_transform", "machete_mm", "marlin_gemm",
    "minimax_allreduce_rms_qk", "permute_cols", "scaled_fp4_quant",
})
"""``hasattr(torch.ops._C, name)`` probes in the MoE / quantization code whose op a CUDA build has
(present here as stand-ins on CUDA/ROCm). ROCm builds lack some (machete, cutlass_*, allspark): not
modelled — the corpus's ROCm deployments do not reach those probes' quant methods."""

_MANAGED_BY_SIM = ("cpu_fused_moe_int8", "moe_gptq_gemm_rdna3")


class _StandInOp:
    """A compiled op of a GPU build: every overload (``.default``, ``.out`` ...) is itself; calling raises."""

    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self

    def __call__(self, *_a: Any, **_k: Any) -> Any:
        raise RuntimeError(f"torch.ops._C.{self.__name__} is a stand-in (model-construction tier): it cannot run")


def _standin_op(name: str) -> Any:
    return _StandInOp(name)


_TRITON_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "uint16", "uint32", "uint64", "float8e4nv", "float8e4b8", "float8e4b15", "float8e5", "float8e5b16")

HOST_PACKAGES: tuple[str, ...] = ("torchvision", "cuda")
"""Top-level modules stood in by :func:`install_host_packages` (stand-in 12)."""


def patch_triton_placeholder() -> None:
    """Stand-in 11 (only where vLLM runs on its placeholder)."""
    try:
        tu = importlib.import_module("vllm.triton_utils")
    except ImportError:
        return
    tl = getattr(tu, "tl", None)
    if tl is None or type(tl).__name__ != "TritonLanguagePlaceholder":
        return
    for name in _TRITON_DTYPES:
        if not hasattr(tl, name):
            setattr(tl, name, None)
    triton = getattr(tu, "triton", None)
    if triton is not None and type(triton).__name__ == "TritonPlaceholder":
        triton.Config = _TritonConfig


class _TritonConfig:
    """``triton.Config(kwargs, num_warps=4, num_stages=3, ...)``: the arguments, kept."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3, **extra: Any) -> None:
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.extra = extra


def install_host_packages() -> None:
    """Stand-in 12: a meta-path finder serving stand-in modules for :data:`HOST_PACKAGES`."""
    import importlib.abc
    import importlib.machinery
    import sys

    from ..sim_standins import StubLoader

    class HostFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
            if fullname.split(".")[0] not in HOST_PACKAGES:
                return None
            return importlib.machinery.ModuleSpec(fullname, StubLoader(set()), is_package=True)

    if not any(type(f).__name__ == "HostFinder" for f in sys.meta_path):
        sys.meta_path.append(HostFinder())


INSPECTION_ERRORS: list[str] = []
"""Stand-in 9: ``"ExceptionType: message"`` of each exception raised while vLLM's model registry
inspected or loaded a lazily registered architecture (vLLM logs it and goes on), in order."""

REGISTRY = "vllm.model_executor.models.registry"


def _recording(fn: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            INSPECTION_ERRORS.append(f"{type(exc).__name__}: {exc}")
            raise

    call.__moe_oracle_recording__ = True  # type: ignore[attr-defined]
    return call


def install_registry_inprocess() -> None:
    """Stand-in 9."""
    reg = importlib.import_module(REGISTRY)
    reg._run_in_subprocess = _recording(lambda fn: fn())
    lazy = reg._LazyRegisteredModel
    if not getattr(lazy.load_model_cls, "__moe_oracle_recording__", False):
        lazy.load_model_cls = _recording(lazy.load_model_cls)


GATE_LINEAR = "vllm.model_executor.layers.fused_moe.router.gate_linear"
_WARMUP = "_register_sm90_bf16x3_warmup"


def skip_router_gemm_warmup() -> None:
    """Stand-in 13 (a release whose ``GateLinear`` has no such warm-up needs none)."""
    try:
        mod = importlib.import_module(GATE_LINEAR)
    except ImportError:
        return
    cls = getattr(mod, "GateLinear", None)
    if cls is not None and _WARMUP in vars(cls):
        setattr(cls, _WARMUP, lambda self: None)


def _warmup_sets_state(source: str) -> bool:
    """Whether a method's source assigns to anything (an attribute, a global): more than a warm-up."""
    import ast
    import textwrap

    tree = ast.parse(textwrap.dedent(source))
    return any(isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Global, ast.Nonlocal)) and not (isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets)) for n in ast.walk(tree))


FLASHINFER_COMM = "flashinfer.comm"


class _FlashInferCommBlocker:
    """Stand-in 14: a meta-path finder that makes ``flashinfer.comm`` (and below) raise ``ImportError``."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname == FLASHINFER_COMM or fullname.startswith(FLASHINFER_COMM + "."):
            raise ImportError(f"{fullname} needs cuda-python and the CuTe DSL: unimportable in the model-construction tier (standins 14)", name=fullname)
        return None

    def invalidate_caches(self) -> None:
        pass


def block_flashinfer_comm() -> None:
    """Stand-in 14 (idempotent)."""
    import sys

    for name in [m for m in sys.modules if m == FLASHINFER_COMM or m.startswith(FLASHINFER_COMM + ".")]:
        del sys.modules[name]
    if not any(isinstance(f, _FlashInferCommBlocker) for f in sys.meta_path):
        sys.meta_path.insert(0, _FlashInferCommBlocker())


def _flashinfer_comm_import_guarded(source: str) -> bool:
    """Whether every ``import flashinfer.comm...`` at module level of ``source`` sits in a
    ``try`` whose handlers catch ``ImportError`` (or a base of it)."""
    import ast

    def imports_comm(node: Any) -> bool:
        if isinstance(node, ast.Import):
            return any(a.name == FLASHINFER_COMM or a.name.startswith(FLASHINFER_COMM + ".") for a in node.names)
        return isinstance(node, ast.ImportFrom) and (node.module or "").startswith(FLASHINFER_COMM)

    def ok(nodes: list[Any], guarded: bool) -> bool:
        for node in nodes:
            if imports_comm(node) and not guarded:
                return False
            if isinstance(node, ast.Try):
                catches = any(h.type is None or any(isinstance(n, ast.Name) and n.id in ("ImportError", "Exception", "BaseException") for n in ast.walk(h.type)) for h in node.handlers)
                if not ok(node.body, guarded or catches) or not ok(node.orelse + node.finalbody, guarded):
                    return False
            elif isinstance(node, ast.If) and not (ok(node.body, guarded) and ok(node.orelse, guarded)):
                return False
        return True

    return ok(ast.parse(source).body, False)


def init_workspace() -> None:
    """Stand-in 10 (a release without the workspace module needs none)."""
    import torch

    try:
        ws = importlib.import_module("vllm.v1.worker.workspace")
    except ImportError:
        return
    if getattr(ws, "_manager", None) is None and hasattr(ws, "init_workspace_manager"):
        ws.init_workspace_manager(torch.device("meta"))


def install_gpu_ops(platform_of: Any) -> None:
    """Stand-in 7: ``platform_of()`` names the simulated platform at lookup time."""
    import torch

    ns = torch.ops._C
    base = type(ns)
    if getattr(base, "__moe_oracle_gpu_ops__", False):
        return

    class GpuBuildOps(base):  # type: ignore[misc, valid-type]
        __moe_oracle_gpu_ops__ = True

        def __getattr__(self, name: str) -> Any:
            try:
                return base.__getattr__(self, name)
            except AttributeError:
                if name.startswith("__") or platform_of() not in ("cuda", "rocm") or name in CPU_BUILD_OPS or name.endswith("_cpu") or name in _MANAGED_BY_SIM:
                    raise
                return _standin_op(name)

    ns.__class__ = GpuBuildOps


def _probed_c_ops() -> set[str]:
    import re
    from pathlib import Path

    import vllm

    root = Path(vllm.__file__).parent
    text = "".join(f.read_text() for sub in ("model_executor/layers/fused_moe", "model_executor/layers/quantization") for f in (root / sub).rglob("*.py"))
    return set(re.findall(r'hasattr\(\s*torch\.ops\._C,\s*"([a-z0-9_]+)"', text))


def patch_stub_values() -> None:
    """Let ``X | None`` annotations on stand-in package attributes evaluate (stand-in 6)."""
    from ..sim_standins import StubValue

    StubValue.__or__ = lambda self, other: self  # type: ignore[method-assign]
    StubValue.__ror__ = lambda self, other: self  # type: ignore[method-assign]


PACKAGE_DTYPES: dict[str, dict[str, str]] = {"nixl_ep": {"topk_idx_t": "int64"}}
"""Stand-in package module -> attributes a P/F module checks to be a ``torch`` dtype at import (stand-in 3)."""


def reload_all2all_utils() -> None:
    """Re-execute ``all2all_utils`` so its import-time package probes see the deployment's packages."""
    import sys

    import torch

    for package, attrs in PACKAGE_DTYPES.items():
        try:
            module = sys.modules.get(package) or importlib.import_module(package)
        except ImportError:  # absent from this deployment
            continue
        if getattr(module, "__is_stand_in__", False):
            for attr, dtype in attrs.items():
                setattr(module, attr, getattr(torch, dtype))
    mod = importlib.import_module(A2A)
    for name in _CONDITIONAL_PF_NAMES:
        vars(mod).pop(name, None)
    importlib.reload(mod)


LAYER = "vllm.model_executor.layers.fused_moe.layer"


def _reads_pcp_group(source: str) -> bool:
    """Whether ``make_parallel_config``'s source takes the PCP size from the PCP group when the
    model class passes none (``pcp_size if pcp_size is not None else get_pcp_group().world_size``)."""
    import ast

    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, ast.Attribute) and node.attr == "world_size" and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name) and func.id == "get_pcp_group":
                return True
    return False


def _pcp_read_problems() -> list[str]:
    """Standins 1: the fused-MoE layer takes the PCP size from the PCP group (``make_parallel_config``,
    vLLM 0.29.0-0.34.0 P/layer.py), so the ``_PCP`` stand-in is what construction reads."""
    import inspect

    fn = getattr(importlib.import_module(LAYER), "make_parallel_config", None)
    if fn is None:
        return [f"{LAYER}.make_parallel_config is gone: where the fused-MoE layer reads the PCP size moved (standins 1)"]
    if not _reads_pcp_group(inspect.getsource(fn)):
        return [f"{LAYER}.make_parallel_config no longer reads get_pcp_group().world_size: the PCP group stand-in may not be what the layer reads (standins 1)"]
    return []


def self_check() -> list[str]:
    """What a vLLM upgrade moved among the internals stood in for (empty: all fit)."""
    import inspect

    import vllm.distributed.parallel_state as ps

    problems = [f"vllm.distributed.parallel_state.{g} is gone" for g in GROUP_GLOBALS if not hasattr(ps, g)]
    for getter in ("get_tp_group", "get_pp_group", "get_dp_group", "get_ep_group", "get_pcp_group", "get_dcp_group", "get_tensor_model_parallel_world_size"):
        if not hasattr(ps, getter):
            problems.append(f"vllm.distributed.parallel_state.{getter} is gone")
    problems += _pcp_read_problems()
    mod = importlib.import_module(A2A)
    for fn in ("get_ep_all2all_manager", "maybe_make_prepare_finalize"):
        if not hasattr(mod, fn):
            problems.append(f"{A2A}.{fn} is gone")
    if hasattr(mod, "get_ep_all2all_manager"):
        src = inspect.getsource(mod.get_ep_all2all_manager)
        if "device_communicator" not in src or "all2all_manager" not in src:
            problems.append(f"{A2A}.get_ep_all2all_manager no longer reads ep_group.device_communicator.all2all_manager")
    for name in sorted(conditional_imports(inspect.getsource(mod)) - set(_CONDITIONAL_PF_NAMES)):
        problems.append(f"{A2A} imports {name} under an import-time condition the reload list does not name (standins 3)")
    for name in sorted(_probed_c_ops()):
        if name not in REVIEWED_GPU_PROBES and name not in CPU_BUILD_OPS and not name.endswith("_cpu") and name not in _MANAGED_BY_SIM:
            problems.append(f"the MoE/quantization code probes torch.ops._C.{name}: not reviewed (standins 7)")
    reg = importlib.import_module("vllm.model_executor.models.registry")
    if not hasattr(reg, "_run_in_subprocess"):
        problems.append("vllm.model_executor.models.registry._run_in_subprocess is gone (standins 9)")
    if not hasattr(getattr(reg, "_LazyRegisteredModel", None), "load_model_cls"):
        problems.append("vllm.model_executor.models.registry._LazyRegisteredModel.load_model_cls is gone (standins 9)")
    try:
        importlib.import_module("vllm.config").CompilationMode
    except (ImportError, AttributeError):
        problems.append("vllm.config.CompilationMode is gone")
    try:
        gate = importlib.import_module(GATE_LINEAR).GateLinear
    except (ImportError, AttributeError):
        gate = None
    if gate is not None and _WARMUP in vars(gate) and _warmup_sets_state(inspect.getsource(vars(gate)[_WARMUP])):
        problems.append(f"{GATE_LINEAR}.GateLinear.{_WARMUP} now sets state: it is more than a warm-up (standins 13)")
    fi_ar = importlib.util.find_spec("vllm.distributed.device_communicators.flashinfer_all_reduce")
    if fi_ar is not None and fi_ar.origin and not _flashinfer_comm_import_guarded(open(fi_ar.origin).read()):
        problems.append("vllm.distributed.device_communicators.flashinfer_all_reduce imports flashinfer.comm without catching ImportError (standins 14)")
    return problems + all2all_self_check() + unloaded_self_check()
