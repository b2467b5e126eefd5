"""Make a vLLM release's selection code believe it runs on a given machine (worker side only).

Imports vLLM and torch: only the verification worker imports this module.

What is simulated, and nothing else (vLLM's own capability methods always run):

* **Platform.** One platform object is installed as ``vllm.platforms.current_platform``
  before any vLLM module binds it. Per deployment its class is swapped to a subclass of
  vLLM's own ``CudaPlatform`` / ``RocmPlatform`` / ``CpuPlatform`` / ``XPUPlatform`` /
  ``TpuPlatform`` that pins only the device capability (CUDA), the GPU arch (ROCm: the
  module-level arch flags of ``vllm.platforms.rocm`` are recomputed by re-running that
  module's own assignments) or the CPU architecture and AMX support (CPU).
* **Compiled capability queries** (``torch.ops._C.*``), answered from the capability as
  the vLLM 0.33.0 binary answers them (``/work/shared/reference/differential_testing.md``):
  ``cutlass_scaled_mm_supports_fp8``: cap > 88; ``..._block_fp8``: cap > 89;
  ``cutlass_group_gemm_supported``: 90 <= cap <= 119; ``mxfp4_experts_quant_supported``:
  100 <= cap <= 119; ``cutlass_scaled_mm_supports_fp4``: 100 <= cap <= 129. They exist
  only on CUDA (elsewhere they raise ``AttributeError`` as on a build without them).
* **Extension modules** that only register custom ops (``vllm._C_stable_libtorch`` ...)
  are empty stand-ins; ``vllm.vllm_flash_attn`` (attention only) is a stub.
* **Compiled ops whose presence selection probes** (``hasattr(torch.ops..., name)``), present as
  on the build for the deployment's platform, absent otherwise. Assumptions about the builds:

  - vLLM's CPU build registers ``torch.ops._C.cpu_fused_moe_int8`` on Arm (aarch64) and POWER
    (ppc64le): ``ArmCPUExpertsInt8`` and ``PowerCPUExpertsInt8`` (vLLM 0.29.0-0.33.0
    P/experts/cpu_moe.py) probe it and exist to call it; no x86 class probes it.
  - vLLM's ROCm build registers ``torch.ops._rocm_C.moe_gptq_gemm_rdna3``; the Python gate adds
    ``on_gfx1100()`` (0.29.0 Q/compressed_tensors/compressed_tensors_moe/rocm_moe_rdna.py,
    0.30.0+ P/experts/rdna3_moe.py).
  - An x86_64 CPU without AMX that has the ``zentorch`` package is an AMD Zen CPU with AVX-512
    (``_is_amd_zen_cpu``), so vLLM runs its ``ZenCpuPlatform`` (vllm/platforms/__init__.py
    ``cpu_platform_plugin``), and zentorch registers ``torch.ops.zentorch.zentorch_fused_moe`` and
    ``zentorch_woq_repack_weight`` (the ops vLLM's Zen MoE classes probe with ``has_zentorch_op``).
    An x86_64 CPU with AMX is Intel: plain ``CpuPlatform`` even with zentorch installed.
  - ``torch.ops.aten._dyn_quant_matmul_4bit`` / ``_dyn_quant_pack_4bit_weight`` (the W4A8-int8 CPU
    class's probe) are the CPU torch's own, present in the torch that runs the harness.
* **Optional packages**: ``vllm.utils.import_utils._has_module`` / ``_has_module_spec``
  answer from the deployment for the modules in :data:`MODULE_PACKAGES`; every
  ``has_flashinfer*`` probe returns False when FlashInfer is absent and runs for real
  (against the FlashInfer the release pins, on ``sys.path``) when it is present.
  ``has_flashinfer_cubin`` runs for real: it reads ``VLLM_HAS_FLASHINFER_CUBIN`` and finds
  ``flashinfer_cubin`` where the deployment declares flashinfer-cubin (a stand-in module,
  :class:`StubFinder`). References bound into other modules are rebound. FlashInfer's
  CuTe-DSL modules need nvidia-cutlass-dsl (a dependency of flashinfer-python this environment
  lacks): the probes see the names their source defines (``ModuleView``). b12x is probed once
  at import by ``vllm.utils.b12x``; its answer follows the deployment (``_refresh_b12x``).
* **Host tool lookups** (FlashInfer's JIT toolchain): ``vllm.utils.flashinfer`` looks nvcc and
  ninja up with ``shutil.which`` (0.29.0-0.31.0 ``which("nvcc")``; 0.32.0+ ``_flashinfer_nvcc_path``,
  which derives a CUDA home and looks up ``<home>/bin/nvcc``, and ``which("ninja")``). The module's
  ``shutil`` is :class:`ToolLookup`, which answers those lookups from the deployment's declared
  tools (``nvcc``: a bare ``nvcc`` lookup; ``jit_nvcc``: any ``.../bin/nvcc`` path; ``ninja``) and
  passes every other call to ``shutil``; vLLM's own code derives the CUDA home and combines the
  answers. Self-check: every ``which(`` of the module is ``shutil.which(``, the module still
  holds the stand-in, and has_flashinfer still reads has_flashinfer_cubin. DeepGEMM's 0.34.0 nvcc gate: ``sim_standins.install_deep_gemm_standins``.
* **All2all prepare/finalize classes bound at import**: ``P/all2all_utils.py`` imports the DeepEP,
  MoRI, NIXL and MoonEP prepare/finalize classes only when the package probe is true at import
  (on a CUDA-alike platform). The module is re-executed (``importlib.reload``) whenever the
  deployment changes which of those packages are present or whether the platform is CUDA-alike, so
  the names exist exactly when vLLM would have imported them: the layer's own
  ``maybe_roundup_sizes`` (DeepEP / NIXL hidden-size padding) then runs as vLLM's code.
* **NCCL runtime version** (``vllm.utils.import_utils._get_runtime_nccl_version``, read by
  ``has_deep_ep_v2``): the version DeepEP v2 requires (``DEEPEP_V2_MIN_NCCL_VERSION_RAW``), as on
  a host where DeepEP v2 is installed; without ``deep_ep`` the probe is false before it is read.
* **Environment variables**: ``os.environ`` per deployment (vLLM reads ``vllm.envs``
  lazily; the ``VLLM_*`` variables and MoRI's ``MORI_ENABLE_SDMA``, which vLLM 0.34.0 reads from
  ``os.environ``); AITER's cached flags are refreshed with vLLM's own ``refresh_env_variables``.
* **MoRI** (vLLM 0.34.0 ``mori``): the stand-in ``mori`` package has ``mori.cco`` and
  ``mori.ops.dispatch_combine_v2`` and ``__version__`` :data:`.cases.MORI_STANDIN_VERSION` (EPv2
  available); the EPv1/EPv2 resolution itself is vLLM's (``VllmSide._resolve_mori``).
* **Caches**: every ``functools`` cache inside ``vllm.*`` is cleared when the platform,
  the packages or the environment change.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterable

from .cases import Deployment
from .sim_platforms import simulated_platforms
from .sim_standins import MODULE_PACKAGES, CACHED, conditional_imports, EXTENSION_STANDINS, GroupStandIn, ModuleView, StubFinder, StubModule, ToolLookup, ZENTORCH_OPS, check_deep_gemm_toolchain, check_tool_lookup, compiled_op, defined_names, flashinfer_source, install_deep_gemm_standins

__all__ = ["Simulation", "MODULE_PACKAGES"]


_CUDA_QUERIES: dict[str, Callable[[int], bool]] = {
    "cutlass_scaled_mm_supports_fp8": lambda cap: cap > 88,
    "cutlass_scaled_mm_supports_block_fp8": lambda cap: cap > 89,
    "cutlass_group_gemm_supported": lambda cap: 90 <= cap <= 119,
    "mxfp4_experts_quant_supported": lambda cap: 100 <= cap <= 119,
    "cutlass_scaled_mm_supports_fp4": lambda cap: 100 <= cap <= 129,
}


_ALL2ALL_UTILS = "vllm.model_executor.layers.fused_moe.all2all_utils"
_ALL2ALL_PACKAGES = frozenset({"deep_ep", "nixl_ep", "mori", "moonep"})
"""Packages whose presence ``all2all_utils`` tests at import (vLLM 0.29.0-0.34.0)."""


# Compiled ops probed with hasattr (see the module docstring for the build assumptions).
_CPU_INT8_MOE_ARCHES = frozenset({"aarch64", "arm64", "ppc64le", "ppc64"})


class Simulation:
    """One process-wide simulated machine for one vLLM release.

    Args:
        release: the version string the release tree declares (checked against
            ``vllm.__version__``; the self-check that the right release is exercised).
        tree: the release's source tree (``<tree>/vllm``), expected first on ``sys.path``.

    Raises:
        RuntimeError: the imported vLLM is not ``release`` from ``tree``.
    """

    def __init__(self, release: str, tree: Path | None = None) -> None:
        self.release = release
        self.tree = tree
        self._state: tuple[Any, ...] | None = None
        self._packages: frozenset[str] = frozenset()
        self._tools: frozenset[str] = frozenset()
        # Modules are imported as on an H100 (some compute capability flags at import).
        self._platform = "cuda"
        self._capability = 90
        self._cpu_arch = "x86_64"
        self._install_standins()
        self._stubs: set[str] = set()
        self._hide_stubs = False
        self._fi_unimportable: set[str] = set()
        sys.meta_path.insert(0, StubFinder(self))
        import torch

        self.torch = torch
        import vllm
        import vllm.platforms as platforms
        from vllm.platforms import interface

        self._check_release(vllm)
        # FlashInfer (the real package the release pins) is imported once here, while no
        # stand-in exists: with a stand-in `cutlass` present, FlashInfer's own import would
        # take the stand-in for the CUTLASS DSL and fail. Its presence per deployment is
        # simulated by the has_flashinfer* probes below.
        try:
            importlib.import_module("flashinfer")
        except Exception:  # noqa: BLE001 - a release whose pinned FlashInfer is not on sys.path
            pass
        # One object, installed before any module binds `current_platform`; its class
        # changes per deployment.
        self.shim = object.__new__(interface.UnspecifiedPlatform)
        platforms._current_platform = self.shim
        self.interface = interface
        self._classes = self._platform_classes()
        self.shim.__class__ = self._classes["cuda"]
        self._set_cuda(90)
        self._import_selection_modules()
        from vllm.config import VllmConfig, set_current_vllm_config

        self._vllm_config_ctx = set_current_vllm_config(VllmConfig())
        self._vllm_config_ctx.__enter__()
        self._probe_originals: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {}
        self._install_probes()
        self._a2a_names = conditional_imports(Path(importlib.import_module(_ALL2ALL_UTILS).__file__).read_text())
        self._a2a_key: tuple[bool, frozenset[str]] = (True, frozenset())  # as imported above (H100, no packages)
        self.a2a_error: str | None = None
        self._caches: list[Any] = []
        self._modules_seen = 0
        self._rebind()
        problems = self.self_check()
        if problems:
            raise RuntimeError(f"self-check: the simulation no longer fits vLLM {self.release}:\n  - " + "\n  - ".join(problems))

    # ------------------------------------------------------------------ set-up

    def self_check(self) -> list[str]:
        """What a vLLM upgrade moved among the internals this simulation touches (empty: all fit).

        Every internal replaced or read here must exist where the simulation expects it, and no
        module may still hold an original optional-package probe after rebinding: otherwise the
        simulation would silently test something else.
        """
        import vllm.platforms as platforms

        problems: list[str] = []
        if platforms._current_platform is not self.shim:
            problems.append("vllm.platforms._current_platform is not the installed platform object")
        for name in ("cuda", "cpu"):
            if name not in self._classes:
                problems.append(f"no simulated {name} platform class")
        if self._rocm is None:
            problems.append("vllm.platforms.rocm did not import")
        else:
            for attr in ("_GCN_ARCH", "_capability_from_gcn_arch", "RocmPlatform"):
                if not hasattr(self._rocm, attr):
                    problems.append(f"vllm.platforms.rocm.{attr} is gone")
            if not self._rocm_flags.co_names:
                problems.append("vllm.platforms.rocm has no module-level _ON_* arch flags to recompute")
        import vllm.utils.import_utils as iu

        if not hasattr(iu, "_has_module"):
            problems.append("vllm.utils.import_utils._has_module is gone (optional packages are probed elsewhere)")
        if hasattr(iu, "has_deep_ep_v2") and not hasattr(iu, "_get_runtime_nccl_version"):
            problems.append("vllm.utils.import_utils.has_deep_ep_v2 no longer reads _get_runtime_nccl_version (the NCCL stand-in)")
        if not self._a2a_names:
            problems.append(f"{_ALL2ALL_UTILS} binds no prepare/finalize class under an import-time condition any more (nothing to re-execute)")
        fi = sys.modules.get("vllm.utils.flashinfer")
        if fi is None or not hasattr(fi, "has_flashinfer_cubin"):
            problems.append("vllm.utils.flashinfer.has_flashinfer_cubin is gone")
        else:
            problems += check_tool_lookup(fi)
        problems += check_deep_gemm_toolchain(sys.modules.get("vllm.utils.deep_gemm"))
        ops = getattr(sys.modules.get("vllm._aiter_ops"), "rocm_aiter_ops", None)
        if ops is None or not hasattr(ops, "refresh_env_variables"):
            problems.append("vllm._aiter_ops.rocm_aiter_ops.refresh_env_variables is gone")
        custom_ops = sys.modules.get("vllm._custom_ops")
        if custom_ops is not None:
            source = Path(custom_ops.__file__).read_text()
            for query in _CUDA_QUERIES:
                if f"torch.ops._C.{query}(" not in source:
                    problems.append(f"vllm._custom_ops no longer calls torch.ops._C.{query}")
        problems += self._check_compiled_ops()
        originals = [orig for orig, _ in self._probe_originals.values()]
        for mod_name, mod in list(sys.modules.items()):
            if not mod_name.startswith("vllm") or not isinstance(mod, types.ModuleType):
                continue
            for attr, value in list(vars(mod).items()):
                if any(value is o for o in originals):
                    problems.append(f"{mod_name}.{attr} still holds an original optional-package probe")
        return problems

    def _check_compiled_ops(self) -> list[str]:
        """Every compiled op the simulation registers is still probed by the release's MoE code,
        and the platform classes the CPU simulation resolves to still exist."""
        import vllm

        root = Path(vllm.__file__).parent / "model_executor"
        text = "".join(f.read_text() for sub in ("layers/fused_moe", "layers/quantization", "kernels/linear") for f in (root / sub).rglob("*.py"))
        problems = [f"no MoE module probes the compiled op {op} any more" for op in ("cpu_fused_moe_int8", "moe_gptq_gemm_rdna3", *ZENTORCH_OPS) if op not in text]
        if "zen_cpu" not in self._classes:
            problems.append("vllm.platforms.zen_cpu.ZenCpuPlatform is gone")
        return problems

    def _check_release(self, vllm: types.ModuleType) -> None:
        version = getattr(vllm, "__version__", None)
        if version is None:
            try:
                from vllm._version import __version__ as version  # type: ignore[no-redef]
            except ImportError:
                version = None
        if version != self.release:
            raise RuntimeError(f"self-check: expected vLLM {self.release}, imported {version!r} from {vllm.__file__}")
        if self.tree is not None and not Path(vllm.__file__).resolve().is_relative_to(self.tree.resolve()):
            raise RuntimeError(f"self-check: vLLM {self.release} should come from {self.tree}, imported {vllm.__file__}")

    def _install_standins(self) -> None:
        for name in EXTENSION_STANDINS:
            sys.modules.setdefault(name, types.ModuleType(name))
        sys.modules.setdefault("vllm.vllm_flash_attn", StubModule("vllm.vllm_flash_attn"))
        import torch

        sim = self

        def query(name: str, fn: Callable[[int], bool]) -> Callable[[int], bool]:
            def answer(capability: int) -> bool:
                if sim._platform != "cuda":
                    raise AttributeError(f"'_OpNamespace' '_C' object has no attribute {name!r}")
                return fn(capability)

            answer.__name__ = name
            return answer

        for name, fn in _CUDA_QUERIES.items():
            setattr(torch.ops._C, name, query(name, fn))

        def cpu_has_amx_fp8() -> bool:
            # The CPU build's query (vLLM 0.31.0+ vllm/_custom_ops.py cpu_has_amx_fp8): no CPU the
            # harness simulates (Sapphire/Emerald/Granite Rapids class AMX, Arm, POWER) has AMX-FP8.
            if sim._platform != "cpu":
                raise AttributeError("'_OpNamespace' '_C' object has no attribute 'cpu_has_amx_fp8'")
            return False

        torch.ops._C.cpu_has_amx_fp8 = cpu_has_amx_fp8

    def _platform_classes(self) -> dict[str, type]:
        self._rocm = self._import_rocm()
        return simulated_platforms(self)

    def _import_rocm(self) -> types.ModuleType | None:
        torch = self.torch
        original = torch.cuda.get_device_properties
        torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(gcnArchName="gfx942")  # type: ignore[assignment]
        try:
            rocm = importlib.import_module("vllm.platforms.rocm")
        except Exception:  # noqa: BLE001
            return None
        finally:
            torch.cuda.get_device_properties = original  # type: ignore[assignment]
        # The module's own arch-flag assignments, re-run whenever the arch changes.
        source = Path(rocm.__file__).read_text()
        tree = ast.parse(source)
        stmts = [n for n in tree.body if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id.startswith("_ON_") for t in n.targets)]
        self._rocm_flags = compile(ast.Module(body=stmts, type_ignores=[]), rocm.__file__, "exec")
        return rocm

    def _import_selection_modules(self) -> None:
        """Import every module of the fused-MoE and quantization packages that imports here."""
        self.import_errors: dict[str, str] = {}
        import pkgutil

        for pkg_name in ("vllm.model_executor.layers.fused_moe", "vllm.model_executor.layers.quantization"):
            pkg = importlib.import_module(pkg_name)
            for info in pkgutil.walk_packages(pkg.__path__, pkg_name + "."):
                try:
                    importlib.import_module(info.name)
                except Exception as exc:  # noqa: BLE001 - recorded; vLLM imports lazily too
                    self.import_errors[info.name] = f"{type(exc).__name__}: {exc}"[:200]

    def _install_probes(self) -> None:
        """Replace the optional-package probes with ones that answer from the deployment."""
        import vllm.utils.import_utils as iu

        sim = self
        if hasattr(iu, "_get_runtime_nccl_version") and hasattr(iu, "DEEPEP_V2_MIN_NCCL_VERSION_RAW"):
            iu._get_runtime_nccl_version = lambda: iu.DEEPEP_V2_MIN_NCCL_VERSION_RAW
        orig_has_module = iu._has_module
        orig_has_spec = getattr(iu, "_has_module_spec", None)

        def has_module(module_name: str) -> bool:
            pkg = MODULE_PACKAGES.get(module_name)
            if pkg is not None:
                return pkg in sim._packages
            return orig_has_module(module_name)

        self._register(orig_has_module, has_module)
        if orig_has_spec is not None:

            def has_module_spec(module_name: str) -> bool:
                pkg = MODULE_PACKAGES.get(module_name)
                if pkg is not None:
                    return pkg in sim._packages
                return orig_has_spec(module_name)

            self._register(orig_has_spec, has_module_spec)
        try:
            fi = importlib.import_module("vllm.utils.flashinfer")
        except Exception:  # noqa: BLE001
            fi = None
        if fi is not None:
            for name, value in list(vars(fi).items()):
                if not name.startswith("has_flashinfer") or not callable(value):
                    continue
                if name == "has_flashinfer_cubin":
                    continue  # runs for real: the variable, and flashinfer_cubin found per deployment
                self._register(value, self._flashinfer_probe(value))
            if hasattr(fi, "_get_submodule"):
                fi._get_submodule = self._flashinfer_submodule
            if hasattr(fi, "shutil"):
                fi.shutil = ToolLookup(lambda: sim._tools)
        install_deep_gemm_standins(lambda: sim._tools)

    def _flashinfer_submodule(self, module_name: str) -> Any:
        """``vllm.utils.flashinfer._get_submodule`` for a FlashInfer that has its CuTe DSL.

        flashinfer-python requires nvidia-cutlass-dsl (``Requires-Dist: nvidia-cutlass-dsl>=4.6.2a0``
        in 0.6.18 ... 0.7.2.post1), which this environment does not install: FlashInfer's CuTe-DSL
        modules fail to import here, and FlashInfer's own ``__init__`` silently skips the names it
        imports from them. vLLM's probes only ask whether a module has a name, so they get a
        :class:`ModuleView`: the module as it imports here, plus every name its source defines at
        any nesting (read with ``ast``, never executed). A ``cutlass`` stand-in is never what
        FlashInfer imports (the stand-ins are hidden while FlashInfer modules import).
        """
        if "flashinfer" not in self._packages:
            return None
        path = flashinfer_source(module_name)
        if path is None:
            return None
        real = sys.modules.get(module_name)
        if real is None and module_name not in self._fi_unimportable:
            self._hide_stubs = True
            try:
                real = importlib.import_module(module_name)
            except Exception:  # noqa: BLE001 - the CuTe DSL (or a GPU library) is missing here
                self._fi_unimportable.add(module_name)
            finally:
                self._hide_stubs = False
        return ModuleView(module_name, real, defined_names(path))

    def _flashinfer_probe(self, original: Callable[..., Any]) -> Callable[..., Any]:
        sim = self
        real = getattr(original, "__wrapped__", original)

        @functools.wraps(real)
        def probe(*args: Any, **kwargs: Any) -> Any:
            if "flashinfer" not in sim._packages:
                return False
            return real(*args, **kwargs)

        return probe

    def _register(self, original: Callable[..., Any], replacement: Callable[..., Any]) -> None:
        self._probe_originals[id(original)] = (original, replacement)
        cached = getattr(original, "__wrapped__", None)
        if cached is not None:
            self._probe_originals[id(cached)] = (cached, replacement)

    def _rebind(self) -> None:
        """Point every reference to an original probe (in any ``vllm.*`` module) at its replacement."""
        mods = [m for name, m in list(sys.modules.items()) if name.startswith("vllm") and isinstance(m, types.ModuleType)]
        self._modules_seen = self._vllm_module_count()
        caches = []
        for mod in mods:
            namespace = vars(mod)
            for attr, value in list(namespace.items()):
                hit = self._probe_originals.get(id(value))
                if hit is not None and hit[0] is value:
                    namespace[attr] = hit[1]
                    continue
                if isinstance(value, CACHED) and str(getattr(value, "__module__", "")).startswith("vllm"):
                    caches.append(value)
                elif isinstance(value, type) and value.__module__ == mod.__name__:
                    for member in list(vars(value).values()):
                        func = getattr(member, "__func__", member)
                        if isinstance(func, CACHED):
                            caches.append(func)
        self._caches = caches
        self._aiter_found_modules = [m for m in mods if "IS_AITER_FOUND" in vars(m)]

    def _vllm_module_count(self) -> int:
        # Modules other than our stand-ins: a new one may have bound a probe or a cache.
        return len(sys.modules) - len(self._stubs)

    # ------------------------------------------------------------------ per deployment

    def _cpu_arch_enum(self) -> Any:
        enum = self.interface.CpuArchEnum
        arch = self._cpu_arch
        if arch in ("x86_64", "amd64"):
            return enum.X86
        if arch in ("aarch64", "arm64"):
            return enum.ARM
        if arch in ("ppc64le", "ppc64"):
            return enum.POWERPC
        return getattr(enum, "UNKNOWN", enum.X86)

    def _set_cuda(self, capability: int) -> None:
        self._capability = capability

    def apply(self, dep: Deployment) -> None:
        """Make vLLM see ``dep``'s platform, packages and environment (cheap when unchanged).

        Raises:
            ValueError: a platform this release cannot be simulated on.
        """
        state = dep.state_key()
        if self._vllm_module_count() != self._modules_seen:
            self._rebind()
        if state == self._state:
            return
        cls = self._classes.get(self._platform_class(dep))
        if cls is None:
            raise ValueError(f"platform {dep.platform!r} cannot be simulated for vLLM {self.release}")
        self._platform = dep.platform
        self._packages = frozenset(dep.packages)
        self._tools = frozenset(dep.tools)
        if dep.platform == "cuda":
            self._capability = int(dep.capability or 90)
        elif dep.platform == "rocm" and self._rocm is not None:
            self._rocm._GCN_ARCH = dep.arch or "gfx942"
            exec(self._rocm_flags, vars(self._rocm))  # noqa: S102 - the module's own statements
        elif dep.platform == "cpu":
            self._cpu_arch = dep.arch or "x86_64"
            amx = bool(dep.cpu_amx)
            self.torch.cpu._is_amx_tile_supported = lambda: amx  # type: ignore[attr-defined]
        self.shim.__class__ = cls
        self._set_compiled_ops(dep)
        for name in self._stubs:
            sys.modules.pop(name, None)
        self._stubs.clear()
        for key in [k for k in os.environ if k.startswith("VLLM_") or k == "MORI_ENABLE_SDMA"]:
            del os.environ[key]
        os.environ.update(dep.env_map)
        self._refresh_aiter()
        self._refresh_b12x()
        self._refresh_all2all()
        for cache in self._caches:
            try:
                cache.cache_clear()
            except Exception:  # noqa: BLE001 - a cache that cannot be cleared is recorded nowhere; skip
                pass
        self._state = state

    @staticmethod
    def _platform_class(dep: Deployment) -> str:
        """Which platform class vLLM would resolve (see the module docstring for the Zen rule)."""
        if dep.platform == "cpu" and (dep.arch or "x86_64") in ("x86_64", "amd64") and not dep.cpu_amx and "zentorch" in dep.packages:
            return "zen_cpu"
        return dep.platform

    def _set_compiled_ops(self, dep: Deployment) -> None:
        """Register the probed compiled ops the deployment's vLLM build has; remove the others."""
        torch = self.torch
        present = {
            ("_C", "cpu_fused_moe_int8"): dep.platform == "cpu" and (dep.arch or "x86_64") in _CPU_INT8_MOE_ARCHES,
            ("_rocm_C", "moe_gptq_gemm_rdna3"): dep.platform == "rocm",
        }
        zen = self._platform_class(dep) == "zen_cpu"
        present.update({("zentorch", op): zen for op in ZENTORCH_OPS})
        for (ns_name, op), want in present.items():
            ns = getattr(torch.ops, ns_name)
            if want:
                setattr(ns, op, compiled_op(f"torch.ops.{ns_name}.{op}"))
            elif op in vars(ns):
                delattr(ns, op)

    def _refresh_b12x(self) -> None:
        """``vllm.utils.b12x`` probes the package once, at import (``importlib.util.find_spec``),
        not through ``_has_module``: its module-level answer and submodules follow the deployment.

        The fused-MoE submodule's ``is_supported()`` is b12x 1.5.1's ``default_is_supported``:
        SM 12.0/12.1, nvidia-cutlass-dsl >= 4.6.0 and triton. b12x pins nvidia-cutlass-dsl==4.8.0
        and CUDA torch ships triton, so wherever b12x is installed only the device decides.
        """
        mod = sys.modules.get("vllm.utils.b12x")
        if mod is None or not hasattr(mod, "_B12X_SUBMODULES"):
            return
        present = "b12x" in self._packages
        mod._HAS_B12X = present
        sim = self
        subs = {}
        for name in list(mod._B12X_SUBMODULES):
            stub = StubModule(name) if present else None
            if stub is not None and name == "b12x.moe.fused_moe":
                stub.is_supported = lambda device=None: sim._platform == "cuda" and sim._capability in (120, 121)
            subs[name] = stub
        mod._B12X_SUBMODULES = subs

    def _refresh_all2all(self) -> None:
        """Re-execute ``all2all_utils`` when its import-time conditions change (see the module docstring)."""
        key = (self._platform in ("cuda", "rocm"), self._packages & _ALL2ALL_PACKAGES)
        if key == self._a2a_key:
            return
        mod = importlib.import_module(_ALL2ALL_UTILS)
        for name in self._a2a_names:
            vars(mod).pop(name, None)
        self._a2a_key = key
        self.a2a_error = None
        try:
            importlib.reload(mod)
        except Exception as exc:  # noqa: BLE001 - e.g. 0.29.0 nixl_ep imports flashinfer.comm, which needs cuda-python
            # The names bound before the failing import stay; the others are missing, and a layer
            # that needs one is not driven (VllmSide.round_up).
            self.a2a_error = f"re-executing all2all_utils failed here: {type(exc).__name__}: {exc}"[:200]
            self.import_errors[f"{_ALL2ALL_UTILS} (re-executed for {sorted(key[1])})"] = self.a2a_error

    def _refresh_aiter(self) -> None:
        mod = sys.modules.get("vllm._aiter_ops")
        if mod is None:
            return
        found = "aiter" in self._packages
        for m in self._aiter_found_modules:
            m.IS_AITER_FOUND = found
        ops = getattr(mod, "rocm_aiter_ops", None)
        if ops is not None and hasattr(ops, "refresh_env_variables"):
            try:
                ops.refresh_env_variables()
            except Exception:  # noqa: BLE001
                pass

    def set_tp_world(self, tp_size: int) -> None:
        """Make ``get_tensor_model_parallel_world_size()`` answer ``tp_size`` (rank 0's view)."""
        import vllm.distributed.parallel_state as ps

        ps._TP = GroupStandIn(tp_size)

    def modules_loaded(self) -> Iterable[str]:
        return sorted(n for n in sys.modules if n.startswith("vllm"))
