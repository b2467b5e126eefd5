"""Hardware catalog: a marketing name -> platform and exact device capability.

Sources: NVIDIA CUDA GPU compute capability table (developer.nvidia.com/cuda-gpus):
A100 8.0, L40S 8.9, H100/H200 9.0, B200/GB200 10.0, B300/GB300 10.3,
RTX PRO 6000 Blackwell / RTX 5090 12.0, DGX Spark (GB10) 12.1.
AMD ROCm GPU support matrix: MI300X gfx942 (CDNA3), MI355X gfx950 (CDNA4).
Intel: Arc B580 / Arc Pro B60 are Battlemage (Xe2) GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .config import Device
from .errors import ConfigError, InputIssue
from .vocab import Platform

__all__ = ["GPU_CATALOG", "HardwareEntry", "lookup_hardware"]


@dataclass(frozen=True)
class HardwareEntry:
    """One catalog entry: the device record plus facts used by benchmarks.

    Attributes:
        device: platform, exact capability / arch.
        description: human name.
        dense_bf16_tflops: vendor dense bf16 peak (TFLOP/s), ``None`` for CPUs.
        memory_bandwidth_gbs: vendor HBM/DRAM bandwidth (GB/s), ``None`` if not applicable.
    """

    device: Device
    description: str
    dense_bf16_tflops: float | None = None
    memory_bandwidth_gbs: float | None = None


def _cuda(name: str, sm: int, desc: str, tflops: float | None, gbs: float | None) -> HardwareEntry:
    return HardwareEntry(Device(Platform.CUDA, capability=sm, name=name), desc, tflops, gbs)


def _rocm(name: str, arch: str, desc: str, tflops: float, gbs: float) -> HardwareEntry:
    return HardwareEntry(Device(Platform.ROCM, arch=arch, name=name), desc, tflops, gbs)


_ENTRIES = {
    "A100": _cuda("A100", 80, "NVIDIA A100 (Ampere, SM 8.0)", 312.0, 2039.0),
    "L40S": _cuda("L40S", 89, "NVIDIA L40S (Ada, SM 8.9)", 362.0, 864.0),
    "H100": _cuda("H100", 90, "NVIDIA H100 SXM (Hopper, SM 9.0)", 989.0, 3350.0),
    "H200": _cuda("H200", 90, "NVIDIA H200 SXM (Hopper, SM 9.0)", 989.0, 4800.0),
    "B200": _cuda("B200", 100, "NVIDIA B200 (Blackwell, SM 10.0)", 2250.0, 8000.0),
    "GB200": _cuda("GB200", 100, "NVIDIA GB200 (Grace Blackwell, SM 10.0)", 2500.0, 8000.0),
    "B300": _cuda("B300", 103, "NVIDIA B300 (Blackwell Ultra, SM 10.3)", 2250.0, 8000.0),
    "GB300": _cuda("GB300", 103, "NVIDIA GB300 (Grace Blackwell Ultra, SM 10.3)", 2500.0, 8000.0),
    "RTX_PRO_6000": _cuda("RTX_PRO_6000", 120, "NVIDIA RTX PRO 6000 Blackwell (SM 12.0)", 503.8, 1792.0),
    "RTX_5090": _cuda("RTX_5090", 120, "NVIDIA GeForce RTX 5090 (SM 12.0)", 209.5, 1792.0),
    "DGX_SPARK": _cuda("DGX_SPARK", 121, "NVIDIA DGX Spark, GB10 (SM 12.1)", None, 273.0),
    "MI300X": _rocm("MI300X", "gfx942", "AMD Instinct MI300X (CDNA3, gfx942)", 1307.4, 5300.0),
    "MI355X": _rocm("MI355X", "gfx950", "AMD Instinct MI355X (CDNA4, gfx950)", 2516.6, 8000.0),
    "ARC_B580": HardwareEntry(Device(Platform.XPU, arch="xe2", name="ARC_B580"), "Intel Arc B580 (Battlemage, Xe2)"),
    "ARC_PRO_B60": HardwareEntry(Device(Platform.XPU, arch="xe2", name="ARC_PRO_B60"), "Intel Arc Pro B60 (Battlemage, Xe2)"),
    "CPU_X86_64": HardwareEntry(Device(Platform.CPU, arch="x86_64", name="CPU_X86_64"), "x86-64 CPU (AMX unknown)"),
    "CPU_X86_64_AMX": HardwareEntry(Device(Platform.CPU, arch="x86_64", cpu_amx=True, name="CPU_X86_64_AMX"), "x86-64 CPU with AMX tiles (Sapphire Rapids+)"),
    "CPU_PPC64LE": HardwareEntry(Device(Platform.CPU, arch="ppc64le", cpu_amx=False, name="CPU_PPC64LE"), "IBM Power CPU (VSX)"),
    "CPU_AARCH64": HardwareEntry(Device(Platform.CPU, arch="aarch64", cpu_amx=False, name="CPU_AARCH64"), "AArch64 CPU"),
}

GPU_CATALOG: Mapping[str, HardwareEntry] = MappingProxyType(_ENTRIES)

_ALIASES = {
    "GB10": "DGX_SPARK",
    "SPARK": "DGX_SPARK",
    "RTX_PRO_6000_BLACKWELL": "RTX_PRO_6000",
    "RTXPRO6000": "RTX_PRO_6000",
    "5090": "RTX_5090",
    "CPU": "CPU_X86_64",
    "X86_64": "CPU_X86_64",
    "AARCH64": "CPU_AARCH64",
    "ARM64": "CPU_AARCH64",
}


def _key(name: str) -> str:
    return name.strip().upper().replace("-", "_").replace(" ", "_")


def lookup_hardware(name: str) -> HardwareEntry:
    """Catalog entry by name; case, dashes and spaces are ignored.

    >>> lookup_hardware("rtx-pro-6000").device.capability
    120

    Raises:
        ConfigError: unknown name (with a did-you-mean and the full list).
    """
    key = _key(name)
    key = _ALIASES.get(key, key)
    if key in _ENTRIES:
        return _ENTRIES[key]
    raise ConfigError([InputIssue("--gpu", "unknown hardware name", name, sorted(_ENTRIES))])
