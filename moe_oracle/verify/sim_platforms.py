"""The platform classes the simulation (:class:`moe_oracle.verify.vllm_sim.Simulation`) installs
as ``current_platform``: each release's own CUDA, ROCm, CPU (and Zen CPU), XPU platform class,
subclassed so that what a CPU box cannot query answers the simulated deployment (device
capability and name, compute units, CPU architecture), and a bare TPU platform. Everything else
is the release's own code.
"""

from __future__ import annotations

from typing import Any

from .sim_standins import SIMULATED_COMPUTE_UNITS

__all__ = ["simulated_platforms"]


def simulated_platforms(sim: Any) -> dict[str, type]:
    """Platform value -> the simulated class, for ``sim`` (a ``Simulation``: its ``interface``
    module, ``_capability``, ``_rocm`` module or ``None``, ``_cpu_arch_enum()``). A platform whose
    module cannot load in this release (Zen CPU, XPU) is left out."""
    classes: dict[str, type] = {}
    interface = sim.interface

    import vllm.platforms.cuda as cuda_mod

    class SimCuda(cuda_mod.CudaPlatform):  # type: ignore[misc, valid-type]
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> Any:
            cap = sim._capability
            return interface.DeviceCapability(major=cap // 10, minor=cap % 10)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return f"simulated SM {sim._capability}"

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            # Sizes the Marlin workspace that vLLM 0.29.0's GPTQ/AWQ create_weights allocate;
            # no selection reads it.
            return SIMULATED_COMPUTE_UNITS

    classes["cuda"] = SimCuda
    if sim._rocm is not None:
        rocm = sim._rocm

        class SimRocm(rocm.RocmPlatform):  # type: ignore[misc, name-defined]
            @classmethod
            def get_device_capability(cls, device_id: int = 0) -> Any:
                cap = rocm._capability_from_gcn_arch(rocm._GCN_ARCH)
                return interface.DeviceCapability(major=cap[0], minor=cap[1]) if cap else None

            @classmethod
            def get_device_name(cls, device_id: int = 0) -> str:
                return f"simulated {rocm._GCN_ARCH}"

            @classmethod
            def num_compute_units(cls, device_id: int = 0) -> int:
                return SIMULATED_COMPUTE_UNITS

        classes["rocm"] = SimRocm
    import vllm.platforms.cpu as cpu_mod

    class SimCpu(cpu_mod.CpuPlatform):  # type: ignore[misc, name-defined]
        @classmethod
        def get_cpu_architecture(cls) -> Any:
            return sim._cpu_arch_enum()

    classes["cpu"] = SimCpu
    try:
        import vllm.platforms.zen_cpu as zen_mod

        class SimZenCpu(zen_mod.ZenCpuPlatform):  # type: ignore[misc, name-defined]
            @classmethod
            def get_cpu_architecture(cls) -> Any:
                return sim._cpu_arch_enum()

        classes["zen_cpu"] = SimZenCpu
    except Exception:  # noqa: BLE001 - a release without the Zen platform
        pass
    try:
        import vllm.platforms.xpu as xpu_mod

        class SimXpu(xpu_mod.XPUPlatform):  # type: ignore[misc, name-defined]
            @classmethod
            def get_device_capability(cls, device_id: int = 0) -> Any:
                return None

            @classmethod
            def get_device_name(cls, device_id: int = 0) -> str:
                return "simulated XPU"

            @classmethod
            def num_compute_units(cls, device_id: int = 0) -> int:
                return SIMULATED_COMPUTE_UNITS

        classes["xpu"] = SimXpu
    except Exception:  # noqa: BLE001 - a release whose XPU platform cannot load here
        pass

    class SimTpu(interface.Platform):  # type: ignore[misc, name-defined]
        _enum = interface.PlatformEnum.TPU
        device_name = "tpu"
        device_type = "tpu"

    classes["tpu"] = SimTpu
    return classes
