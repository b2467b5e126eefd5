"""The pieces the vLLM simulation (:mod:`moe_oracle.verify.vllm_sim`) stands in with on a CPU
machine: stub values and modules for CUDA-only extensions, the import finder that serves them,
compiled-op stand-ins, a process-group stand-in, and read-only views of FlashInfer submodules
(what they define, read from source). The simulation's self-check holds each to the release."""

from __future__ import annotations

import ast
import enum
import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .cases import MORI_STANDIN_VERSION

if TYPE_CHECKING:
    from .vllm_sim import Simulation

__all__ = ["MODULE_PACKAGES", "STANDIN_ABSENT", "STANDIN_ATTRS", "STUB_TOPS", "CACHED", "EXTENSION_STANDINS", "GroupStandIn", "ModuleView", "SIMULATED_COMPUTE_UNITS", "SIMULATED_JIT_NVCC", "StubFinder", "StubLoader", "StubModule", "StubValue", "ToolLookup", "ZENTORCH_OPS", "aiter_fused_moe", "check_deep_gemm_toolchain", "check_tool_lookup", "compiled_op", "deep_gemm_nvcc_path", "conditional_imports", "defined_names", "flashinfer_source", "install_deep_gemm_standins", "unread_nvcc_version"]

MODULE_PACKAGES: dict[str, str] = {
    "deep_gemm": "deep_gemm",
    "vllm.third_party.deep_gemm": "deep_gemm",
    "deep_ep": "deep_ep",
    "triton_kernels": "triton_kernels",
    "vllm.third_party.triton_kernels": "triton_kernels",
    "aiter": "aiter",
    "mori": "mori",
    "nixl_ep": "nixl_ep",
    "moonep": "moonep",
    "humming": "humming",
    "b12x": "b12x",
    "flydsl": "flydsl",
    "cutlass": "cutlass",
    "zentorch": "zentorch",
    "quark": "quark",
    "hpc": "hpc",
    "flashinfer": "flashinfer",
    "flashinfer_cubin": "flashinfer_cubin",
}
"""Module name vLLM probes -> the deployment package that makes it present."""

STUB_TOPS: dict[str, str] = {name: pkg for name, pkg in MODULE_PACKAGES.items() if "." not in name and name != "flashinfer"}


CACHED = functools._lru_cache_wrapper  # what functools.cache / lru_cache return


EXTENSION_STANDINS = (
    "vllm._C",
    "vllm._C_stable_libtorch",
    "vllm._moe_C",
    "vllm._moe_C_stable_libtorch",
    "vllm._qutlass_C",
    "vllm._rocm_C",
    "vllm._flashmla_C",
    "vllm._flashmla_extension_C",
    "vllm.cumem_allocator",
    "vllm_xpu_kernels",
    "vllm_xpu_kernels._C",
    "vllm_xpu_kernels._moe_C",
    "vllm_xpu_kernels._xpu_C",
)


class StubValue:
    """An attribute of a stand-in package: a distinct, memoized object per dotted path.

    Attribute access yields further stand-ins (so enum members compare by identity);
    calling one raises, because what the real package would answer is unknown.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._children: dict[str, "StubValue"] = {}

    def __getattr__(self, name: str) -> "StubValue":
        if name.startswith("__"):
            raise AttributeError(name)
        child = self._children.get(name)
        if child is None:
            child = self._children[name] = StubValue(f"{self._path}.{name}")
        return child

    def __call__(self, *_a: Any, **_k: Any) -> Any:
        raise RuntimeError(f"{self._path} is a stand-in in the differential harness")

    def __repr__(self) -> str:
        return f"<stand-in {self._path}>"

    # ``deep_ep.Config | None`` in a prepare/finalize module's annotations (evaluated when the
    # class is defined) stays the stand-in, so the module imports as it would with the package.
    def __or__(self, _other: Any) -> "StubValue":
        return self

    __ror__ = __or__


SIMULATED_COMPUTE_UNITS = 132
"""SM / CU / EU count the simulated GPU reports (a device query that sizes workspaces, never selection)."""


ZENTORCH_OPS = ("zentorch_fused_moe", "zentorch_woq_repack_weight")


def compiled_op(name: str) -> Callable[..., Any]:
    def op(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError(f"{name} is a stand-in for a compiled op in the differential harness")

    op.__name__ = name
    return op


class StubModule(types.ModuleType):
    """A stand-in module: every attribute is a :class:`StubValue`."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in STANDIN_ABSENT.get(self.__name__, ()):
            raise AttributeError(name)
        value = StubValue(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


# Attributes a stand-in module must really have because vLLM's selection code computes with
# them (not just compares identities). humming.config.GemmType: vLLM 0.33.0-0.34.0
# P/experts/fused_humming_moe.py compares ``cls.humming_gemm_type().value.lower()`` with the
# names get_humming_moe_gemm_type() derives ("indexed", "grouped_contiguous", "grouped_masked"),
# so each member's value is that name.
def aiter_fused_moe(*args: Any, gate_mode: Any = None, **kwargs: Any) -> Any:
    """Stands in for ``aiter.fused_moe.fused_moe`` of an AITER >= 0.1.14 (ROCm/aiter#3123 added
    ``gate_mode``); vLLM 0.33.0-0.34.0 ``rocm_aiter_ops.fused_moe_supports_gate_mode`` reads its signature."""
    raise RuntimeError("aiter.fused_moe.fused_moe is a stand-in in the differential harness")


class StubLoader(importlib.abc.Loader):
    def __init__(self, created: set[str]) -> None:
        self.created = created

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        self.created.add(spec.name)
        module = StubModule(spec.name)
        module.__path__ = []  # a package: its submodules are stubs too
        module.__is_stand_in__ = True
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        for name, value in STANDIN_ATTRS.get(module.__name__, {}).items():
            setattr(module, name, value)


class StubFinder(importlib.abc.MetaPathFinder):
    """Stand-in modules for optional packages the deployment declares present (none is installed here)."""

    def __init__(self, sim: "Simulation") -> None:
        self.sim = sim

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if self.sim._hide_stubs:
            return None
        pkg = STUB_TOPS.get(fullname.split(".")[0])
        if pkg is None or pkg not in self.sim._packages:
            return None
        return importlib.machinery.ModuleSpec(fullname, StubLoader(self.sim._stubs), is_package=True)


class ToolLookup:
    """``shutil`` as ``vllm.utils.flashinfer`` sees it: ``which`` answers FlashInfer's toolchain
    lookups from the deployment's declared host tools (``tools()``: names of
    :data:`moe_oracle.core.environment.HOST_TOOLS` found), never from this machine's PATH.

    A bare ``nvcc`` is the lookup on PATH (tool ``nvcc``), a path ending in ``bin/nvcc`` the nvcc
    under a CUDA home that vLLM derived (``jit_nvcc``), ``ninja`` the lookup on PATH (``ninja``);
    any other call goes to ``shutil``.
    """

    def __init__(self, tools: Callable[[], frozenset[str]]) -> None:
        self._tools = tools

    def which(self, cmd: str, *args: Any, **kwargs: Any) -> str | None:
        import os
        import shutil

        found = self._tools()
        if cmd == "nvcc":
            return "/simulated/cuda/bin/nvcc" if "nvcc" in found else None
        if cmd == "ninja":
            return "/simulated/bin/ninja" if "ninja" in found else None
        if os.path.basename(cmd) == "nvcc" and os.path.basename(os.path.dirname(cmd)) == "bin":
            return cmd if "jit_nvcc" in found else None
        return shutil.which(cmd, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        import shutil

        return getattr(shutil, name)


def check_tool_lookup(fi: types.ModuleType) -> list[str]:
    """The host-tool stand-in still sees every toolchain lookup of ``vllm.utils.flashinfer``."""
    problems = []
    if not isinstance(getattr(fi, "shutil", None), ToolLookup):
        problems.append("vllm.utils.flashinfer.shutil is not the host-tool stand-in (nvcc/ninja lookups would read this machine)")
    source = Path(fi.__file__).read_text()
    if source.count("which(") != source.count("shutil.which("):
        problems.append("vllm.utils.flashinfer looks a tool up other than through shutil.which")
    tree = ast.parse(source)
    funcs = {n.name: ast.get_source_segment(source, n) or "" for n in tree.body if isinstance(n, ast.FunctionDef)}
    gate = funcs.get("has_flashinfer", "")
    if "has_flashinfer_cubin()" not in gate or not ('shutil.which("nvcc")' in gate or "_flashinfer_nvcc_path()" in gate):
        problems.append("vllm.utils.flashinfer.has_flashinfer no longer gates on has_flashinfer_cubin() and an nvcc lookup")
    if 'find_spec("flashinfer_cubin")' not in funcs.get("has_flashinfer_cubin", ""):
        problems.append("vllm.utils.flashinfer.has_flashinfer_cubin no longer finds flashinfer_cubin with find_spec")
    return problems


SIMULATED_JIT_NVCC = "/simulated/cuda/bin/nvcc"


def deep_gemm_nvcc_path(tools: Callable[[], frozenset[str]]) -> Callable[[], str | None]:
    """``vllm.utils.deep_gemm._deep_gemm_nvcc_path`` (vLLM 0.34.0) answered from the deployment's
    declared host tools: the nvcc DeepGEMM's JIT would run is found exactly when ``jit_nvcc`` is.

    vLLM derives the CUDA home as ``_flashinfer_nvcc_path`` does (``CUDA_HOME``, ``CUDA_PATH``, the
    home of the ``nvcc`` on PATH, ``/usr/local/cuda``), which is what ``jit_nvcc`` means
    (:data:`moe_oracle.core.environment.HOST_TOOLS`), but it also tests that the home exists on this
    machine and honours ``DG_JIT_NVCC_COMPILER``, so the lookup is stood in for whole rather than
    through :class:`ToolLookup`. Neither side models ``DG_JIT_NVCC_COMPILER``.
    """

    def nvcc_path() -> str | None:
        return SIMULATED_JIT_NVCC if "jit_nvcc" in tools() else None

    return nvcc_path


def unread_nvcc_version(nvcc: str) -> None:
    """``vllm.utils.deep_gemm._nvcc_version`` (vLLM 0.34.0): the stand-in nvcc has no readable
    version, so vLLM's own ``version is not None and version < (12, 9)`` check passes, as our tables
    do (the nvcc version is not an input; the 12.9 floor is stated as not modelled)."""
    return None


def install_deep_gemm_standins(tools: Callable[[], frozenset[str]]) -> None:
    """Stand in vLLM 0.34.0's DeepGEMM nvcc gate (vllm/utils/deep_gemm.py ``is_deep_gemm_supported``):
    ``_deep_gemm_nvcc_path`` follows the deployment's ``jit_nvcc`` tool (:func:`deep_gemm_nvcc_path`)
    and ``_nvcc_version`` is unread (:func:`unread_nvcc_version`), so vLLM's own 12.9 floor passes, as
    in our tables, which do not read the nvcc version. Releases without the gate: nothing to do.
    The self-check is :func:`check_deep_gemm_toolchain`."""
    dg = sys.modules.get("vllm.utils.deep_gemm")
    if dg is None:
        try:
            dg = importlib.import_module("vllm.utils.deep_gemm")
        except Exception:  # noqa: BLE001 - a release whose module does not import here has no nvcc gate to simulate
            return
    if hasattr(dg, "_deep_gemm_nvcc_path"):
        dg._deep_gemm_nvcc_path = deep_gemm_nvcc_path(tools)
        dg._nvcc_version = unread_nvcc_version


def check_deep_gemm_toolchain(dg: types.ModuleType | None) -> list[str]:
    """DeepGEMM's nvcc gate (vLLM 0.34.0 ``is_deep_gemm_supported``) reads the stand-ins only."""
    if dg is None or not hasattr(dg, "is_deep_gemm_supported"):
        return ["vllm.utils.deep_gemm.is_deep_gemm_supported is gone"]
    source = Path(dg.__file__).read_text()
    tree = ast.parse(source)
    funcs = {n.name: ast.get_source_segment(source, n) or "" for n in tree.body if isinstance(n, ast.FunctionDef)}
    gate = funcs.get("is_deep_gemm_supported", "")
    problems = []
    if "nvcc" in gate and "_deep_gemm_nvcc_path()" not in gate:
        problems.append("vllm.utils.deep_gemm.is_deep_gemm_supported looks nvcc up other than through _deep_gemm_nvcc_path")
    if "_deep_gemm_nvcc_path" in funcs and getattr(dg._deep_gemm_nvcc_path, "__qualname__", "") != "deep_gemm_nvcc_path.<locals>.nvcc_path":
        problems.append("vllm.utils.deep_gemm._deep_gemm_nvcc_path is not the host-tool stand-in (nvcc would be looked up on this machine)")
    if "_nvcc_version" in funcs and dg._nvcc_version is not unread_nvcc_version:
        problems.append("vllm.utils.deep_gemm._nvcc_version is not the stand-in (this machine's nvcc would be run)")
    return problems


class GroupStandIn:
    """The tensor-parallel group as rank 0 of a ``world_size`` group sees it (no process group).

    Quantization methods read only ``world_size`` while creating weights (vLLM 0.29-0.33
    Q/utils/fp8_utils.py validate_fp8_block_shape_moe); anything else raises.
    """

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self.rank_in_group = 0

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the differential harness simulates no process group: GroupCoordinator.{name} was read")


@functools.cache
def flashinfer_source(module_name: str) -> Path | None:
    """The source file of a FlashInfer module (package ``__init__.py`` or ``.py``), found without importing it."""
    top = sys.modules.get("flashinfer")
    if top is None or getattr(top, "__file__", None) is None or not module_name.startswith("flashinfer"):
        return None
    base = Path(top.__file__).parent.joinpath(*module_name.split(".")[1:])
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def defined_names(path: Path) -> frozenset[str]:
    """Names a module's source binds at top level, including under ``try``/``with``/``if``."""
    names: set[str] = set()
    stack = list(ast.parse(path.read_text()).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Try, ast.With, ast.If)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return frozenset(names)


def conditional_imports(source: str) -> frozenset[str]:
    """Names a module's ``source`` imports inside module-level ``if`` blocks (at any nesting):
    the names it binds only when a condition holds at import (``all2all_utils``' package probes;
    read by the selection tier's simulation and the model-construction stand-ins' self-check)."""
    names: set[str] = set()

    def visit(nodes: list[ast.stmt], inside: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.If):
                visit(node.body, True)
                visit(node.orelse, True)
            elif isinstance(node, ast.ImportFrom) and inside:
                names.update(a.asname or a.name for a in node.names)

    visit(ast.parse(source).body, False)
    return frozenset(names)


class ModuleView:
    """A FlashInfer module as vLLM's probes see it where its CuTe DSL is installed (see
    :meth:`Simulation._flashinfer_submodule`): the imported module's attributes, else a stand-in
    for any name its source defines."""

    def __init__(self, name: str, real: types.ModuleType | None, names: frozenset[str]) -> None:
        self._name, self._real, self._names = name, real, names

    def __getattr__(self, attr: str) -> Any:
        if self._real is not None and hasattr(self._real, attr):
            return getattr(self._real, attr)
        if attr in self._names:
            return StubValue(f"{self._name}.{attr}")
        raise AttributeError(attr)

STANDIN_ABSENT: dict[str, frozenset[str]] = {
    # vLLM 0.29.0-0.34.0 P/prepare_finalize/nixl_ep.py reads getattr(nixl_ep, "topk_idx_t",
    # torch.int64) at import and asserts a torch dtype: without the name it takes its own default.
    "nixl_ep": frozenset({"topk_idx_t"}),
}
"""Names a stand-in module does not have, where vLLM falls back to its own value when one is missing."""

STANDIN_ATTRS: dict[str, dict[str, Any]] = {
    "humming.config": {
        "GemmType": enum.Enum("GemmType", {"INDEXED": "indexed", "GROUPED_CONTIGUOUS": "grouped_contiguous", "GROUPED_MASKED": "grouped_masked"}),
    },
    "aiter.fused_moe": {"fused_moe": aiter_fused_moe},
    "mori": {"__version__": MORI_STANDIN_VERSION},
}
