"""Hardware catalog: a marketing name -> platform and exact device capability.

Sources: NVIDIA CUDA GPU compute capability table (developer.nvidia.com/cuda-gpus):
A100 8.0, A10G 8.6, L4/L40/L40S 8.9, H100/H200/H20/H800/GH200 9.0, B200/GB200 10.0,
B300/GB300 10.3, RTX PRO 6000 Blackwell / RTX 5090 12.0, DGX Spark (GB10) 12.1.
AMD ROCm GPU support matrix (rocm.docs.amd.com, "GPU hardware specifications"):
MI210/MI250/MI250X gfx90a (CDNA2), MI300X/MI325X gfx942 (CDNA3), MI355X gfx950 (CDNA4).
Intel: Arc B580 / Arc Pro B60 are Battlemage (Xe2) GPUs.

Names are looked up as typed in the catalog (``H200``), with dashes, spaces and case
ignored (``rtx-pro-6000``), or as ``nvidia-smi`` / ``torch.cuda.get_device_name()``
print them (``NVIDIA H200``, ``NVIDIA A100-SXM4-80GB``, ``AMD Instinct MI300X``): the vendor
words are dropped and the longest run of leading words that names a catalog entry wins. A name
whose other words name another catalog entry (``H200 B200``, ``MI300X H200``, ``H200/B200``) is
ambiguous and refused, naming both; ROCm's own ``MI250X/MI250`` (one product family, one gfx
target) is an alias. A name longer than :data:`MAX_NAME_CHARS` is refused before any lookup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ..core.config import Device
from ..core.fields import CUDA_CAPABILITIES
from ..core.errors import ConfigError, InputIssue
from ..core.names import ascii_lower, ascii_upper, non_ascii
from ..core.vocab import Platform

__all__ = ["CUDA_CAPABILITIES", "GPU_ARCHES", "GPU_CATALOG", "MAX_NAME_CHARS", "HardwareEntry", "HardwareIssue", "check_known_device", "device_hint", "lookup_hardware", "suggest_hardware", "unknown_arch", "unknown_capability"]


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
    "A10G": _cuda("A10G", 86, "NVIDIA A10G (Ampere, SM 8.6)", None, 600.0),
    "L4": _cuda("L4", 89, "NVIDIA L4 (Ada, SM 8.9)", 121.0, 300.0),
    "L40": _cuda("L40", 89, "NVIDIA L40 (Ada, SM 8.9)", 181.0, 864.0),
    "L40S": _cuda("L40S", 89, "NVIDIA L40S (Ada, SM 8.9)", 362.0, 864.0),
    "H20": _cuda("H20", 90, "NVIDIA H20 (Hopper, SM 9.0)", 148.0, 4000.0),
    "H100": _cuda("H100", 90, "NVIDIA H100 SXM (Hopper, SM 9.0)", 989.0, 3350.0),
    "H800": _cuda("H800", 90, "NVIDIA H800 SXM (Hopper, SM 9.0)", 989.0, 3350.0),
    "H200": _cuda("H200", 90, "NVIDIA H200 SXM (Hopper, SM 9.0)", 989.0, 4800.0),
    "GH200": _cuda("GH200", 90, "NVIDIA GH200 Grace Hopper, 96 GB HBM3 (SM 9.0)", 989.0, 4000.0),
    "B200": _cuda("B200", 100, "NVIDIA B200 (Blackwell, SM 10.0)", 2250.0, 8000.0),
    "GB200": _cuda("GB200", 100, "NVIDIA GB200 (Grace Blackwell, SM 10.0)", 2500.0, 8000.0),
    "B300": _cuda("B300", 103, "NVIDIA B300 (Blackwell Ultra, SM 10.3)", 2250.0, 8000.0),
    "GB300": _cuda("GB300", 103, "NVIDIA GB300 (Grace Blackwell Ultra, SM 10.3)", 2500.0, 8000.0),
    "RTX_PRO_6000": _cuda("RTX_PRO_6000", 120, "NVIDIA RTX PRO 6000 Blackwell (SM 12.0)", 503.8, 1792.0),
    "RTX_5090": _cuda("RTX_5090", 120, "NVIDIA GeForce RTX 5090 (SM 12.0)", 209.5, 1792.0),
    "DGX_SPARK": _cuda("DGX_SPARK", 121, "NVIDIA DGX Spark, GB10 (SM 12.1)", None, 273.0),
    "MI210": _rocm("MI210", "gfx90a", "AMD Instinct MI210 (CDNA2, gfx90a)", 181.0, 1638.4),
    "MI250": _rocm("MI250", "gfx90a", "AMD Instinct MI250 (CDNA2, gfx90a)", 362.1, 3276.8),
    "MI250X": _rocm("MI250X", "gfx90a", "AMD Instinct MI250X (CDNA2, gfx90a)", 383.0, 3276.8),
    "MI300X": _rocm("MI300X", "gfx942", "AMD Instinct MI300X (CDNA3, gfx942)", 1307.4, 5300.0),
    "MI325X": _rocm("MI325X", "gfx942", "AMD Instinct MI325X (CDNA3, gfx942)", 1307.4, 6000.0),
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
    "DGX_SPARK": "DGX_SPARK",
    "RTX_PRO_6000_BLACKWELL": "RTX_PRO_6000",
    "RTXPRO6000": "RTX_PRO_6000",
    "5090": "RTX_5090",
    "CPU": "CPU_X86_64",
    "X86_64": "CPU_X86_64",
    "AARCH64": "CPU_AARCH64",
    "ARM64": "CPU_AARCH64",
    "ARC_B580_GRAPHICS": "ARC_B580",
    "ARC_PRO_B60_GRAPHICS": "ARC_PRO_B60",
    # The name ROCm prints for the MI250 family ("AMD Instinct MI250X/MI250"): one gfx target, not two GPUs.
    "MI250X_MI250": "MI250X",
}

MAX_NAME_CHARS = 128
"""The longest device name looked up: ``nvidia-smi``, ``rocm-smi`` and torch print names of at most
about 50 characters ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "AMD Instinct MI300X
(gfx942:sramecc+:xnack-)"); a longer value is refused up front, so no lookup or did-you-mean
runs over it."""

# Words nvidia-smi, rocm-smi and torch put around the model name; dropped before the lookup.
_VENDOR_WORDS = frozenset({"NVIDIA", "GEFORCE", "TESLA", "QUADRO", "AMD", "INSTINCT", "RADEON", "INTEL"})


GPU_ARCHES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "rocm": ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201", "gfx1250"),
    "xpu": ("xe2", "xe3"),
})
"""The ROCm gfx targets and XPU generations some table rule or catalog device names (held to the
tables by tests/unit/test_operator_trial24c.py): an arch outside them matches no arch-gated rule,
so the answer for it would be a guess (vLLM's ROCm platform tests these targets by name:
vllm/platforms/rocm.py on_gfx9 / on_gfx942 / on_gfx950 / on_gfx1x)."""


def unknown_capability(capability: int | None) -> str | None:
    """A message when ``capability`` is not one of :data:`~moe_oracle.core.fields.CUDA_CAPABILITIES` (the
    capabilities ``--sm`` takes: another number is no GPU, and the answer would be a guess), else ``None``.

    >>> unknown_capability(90) is None, unknown_capability(15)[:31]
    (True, 'is not a CUDA compute capabilit')
    """
    if capability is None or capability in CUDA_CAPABILITIES:
        return None
    return "is not a CUDA compute capability of an NVIDIA GPU moe-oracle knows: the tables' capability rules were written for the known ones, so the answer for it would be a guess (give a known one, or --gpu NAME)"


def unknown_arch(platform: str, arch: str | None) -> str | None:
    """A message when ``arch`` is not a target of :data:`GPU_ARCHES` for a ROCm/XPU ``platform``,
    else ``None`` (other platforms, no arch)."""
    known = GPU_ARCHES.get(ascii_lower(str(platform)))
    if known is None or arch is None or ascii_lower(arch.strip()) in known:
        return None
    what = "a ROCm gfx target" if ascii_lower(str(platform)) == "rocm" else "an XPU generation"
    return f"is not {what} moe-oracle knows: every arch-gated kernel rule would treat it as unsupported, so the answer would be a guess (give a known one, or --gpu NAME)"


def check_known_device(device: Device, *, capability_field: str, arch_field: str) -> Device:
    """``device`` when the tables were written for its capability and arch: the one check of a
    device the operator describes, used by the ``--platform/--sm/--arch`` flags and by a
    ``--config`` file's ``device`` mapping alike (a catalog ``--gpu`` is known by construction).

    ``capability_field`` / ``arch_field`` name the input in the door's words (``--sm``,
    ``$.device.capability``).

    Raises:
        ConfigError: every unknown value (:func:`unknown_arch`, :func:`unknown_capability`), each
            issue naming its field, the value and the known ones.
    """
    platform = device.platform.value
    issues = []
    if (unknown := unknown_arch(platform, device.arch)) is not None:
        issues.append(InputIssue(arch_field, unknown, device.arch, list(GPU_ARCHES[platform])))
    if (unknown := unknown_capability(device.capability)) is not None:
        issues.append(InputIssue(capability_field, unknown, device.capability, list(CUDA_CAPABILITIES)))
    if issues:
        raise ConfigError(issues)
    return device


def _key(name: str) -> str:
    return ascii_upper(name.strip()).replace("-", "_").replace(" ", "_")


def _words(name: str) -> list[str]:
    """Upper-case words of a device name, split at spaces, dashes, underscores and slashes.

    >>> _words("NVIDIA A100-SXM4-80GB")
    ['A100', 'SXM4', '80GB']
    """
    words = [w for w in re.split(r"[\s_/\-]+", ascii_upper(name.strip())) if w]
    return [w for w in words if w not in _VENDOR_WORDS]


def _run_at(words: list[str], start: int) -> tuple[str, int] | None:
    """The catalog key the longest run of ``words`` from ``start`` names, and where the run ends."""
    for end in range(len(words), start, -1):
        candidate = "_".join(words[start:end])
        candidate = _ALIASES.get(candidate, candidate)
        if candidate in _ENTRIES:
            return candidate, end
    return None


def _named(name: str) -> list[str]:
    """Catalog keys ``name`` names: the exact key or alias, else the longest leading run of words
    that is one, followed by every other catalog entry a later run of words names (none for a
    real device name; two for ``H200 B200``).

    >>> _named("NVIDIA H100 80GB HBM3"), _named("H200/B200"), _named("RTX 4090")
    (['H100'], ['H200', 'B200'], [])
    """
    key = _key(name)
    key = _ALIASES.get(key, key)
    if key in _ENTRIES:
        return [key]
    # "AMD Instinct MI300X (gfx942:sramecc+:xnack-)", "Intel(R) Arc(TM) B580": parentheses are not the name.
    words = _words(re.sub(r"\([^)]*\)", " ", name))
    first = _run_at(words, 0)
    if first is None:
        return []
    named, at = [first[0]], first[1]
    while at < len(words):
        found = _run_at(words, at)
        if found is None:
            at += 1
            continue
        if found[0] not in named:
            named.append(found[0])
        at = found[1]
    return named


def _designation(text: str) -> str | None:
    """The model designation: the letters before, and the first run of, digits (``H200``, ``MI325``, ``RTX5090``).

    >>> _designation("mi325x"), _designation("RTX_PRO_6000")
    ('MI325', 'RTXPRO6000')
    """
    letters = re.sub(r"[^A-Z0-9]", "", ascii_upper(text))
    # Linear: the first run of digits and the letters right before it (a regex search for
    # [A-Z]*[0-9]+ retries from every letter of a digitless name, quadratic in its length).
    digits = re.search(r"[0-9]+", letters)
    if digits is None:
        return None
    start = digits.start()
    while start > 0 and letters[start - 1].isalpha():
        start -= 1
    return letters[start : digits.end()]


def _architecture(key: str) -> tuple[object, ...]:
    d = _ENTRIES[key].device
    return (d.platform, d.capability, d.arch, d.cpu_amx)


def suggest_hardware(name: str) -> str | None:
    """A did-you-mean for an unknown name that never crosses architectures, or ``None``.

    Vendors name architectures by the model designation, the letters and first digits of a
    name (H100 vs H200, MI325X vs MI355X, L4 vs L40): a digit changed is another product, so
    spelling distance alone would guess across architectures. A suggestion therefore shares
    the designation and differs only after it (``H200X``), or differs by one doubled
    keystroke (``H2000``); candidates of several architectures give no guess.

    >>> suggest_hardware("H200X"), suggest_hardware("H2000"), suggest_hardware("MI330X")
    ('H200', 'H200', None)
    """
    import difflib

    if len(name) > MAX_NAME_CHARS:
        return None
    wanted = _designation(name)
    if wanted is None:
        return None
    undoubled = {wanted[:i] + wanted[i + 1 :] for i in range(1, len(wanted)) if wanted[i] == wanted[i - 1]}
    for targets in ({wanted}, undoubled):
        same = [k for k in _ENTRIES if _designation(k) in targets]
        if same:
            if len({_architecture(k) for k in same}) > 1:
                return None
            return difflib.get_close_matches(_key(name), same, n=1, cutoff=0.0)[0]
    return None


def lookup_hardware(name: str) -> HardwareEntry:
    """Catalog entry by name; case, dashes and spaces are ignored, nvidia-smi names accepted.

    >>> lookup_hardware("rtx-pro-6000").device.capability
    120
    >>> lookup_hardware("NVIDIA H100 80GB HBM3").device.name
    'H100'

    Raises:
        ConfigError: a name longer than :data:`MAX_NAME_CHARS`; a name that names two catalog
            entries (both named); an unknown name (with a did-you-mean of the same architecture,
            a ``--platform``/``--sm``/``--arch`` hint where the name says which, and the full list).
    """
    if isinstance(name, str) and len(name) > MAX_NAME_CHARS:
        raise ConfigError([InputIssue("--gpu", f"is {len(name)} characters long; a device name has at most {MAX_NAME_CHARS} (nvidia-smi and rocm-smi names have about 50)", name, None)])
    named = _named(name) if isinstance(name, str) else []
    if len(named) == 1:
        return _ENTRIES[named[0]]
    if len(named) > 1:
        raise ConfigError([InputIssue("--gpu", f"names {len(named)} catalog GPUs ({', '.join(named)}): give one device (a deployment has one GPU type)", name, None)])
    hint = device_hint(name) if isinstance(name, str) else None
    odd = non_ascii(name) if isinstance(name, str) else None  # case is folded on ASCII letters only: Mı300X (U+0131) is no MI300X
    what = f"unknown hardware name (it holds {odd}; catalog names are ASCII)" if odd else "unknown hardware name"
    raise ConfigError([HardwareIssue("--gpu", what + (f"; {hint}" if hint else ""), name, sorted(_ENTRIES))])


# NVIDIA GPUs outside the catalog, by the words of their name, with their compute capability
# (NVIDIA's CUDA GPUs list, developer.nvidia.com/cuda-gpus): enough to point at --platform cuda --sm N.
_OTHER_NVIDIA = (
    (re.compile(r"\b(rtx\s*)?50[5-9]0\b|rtx\s*pro\s*[0-9]+\s*blackwell"), 120, "a GeForce RTX 50 series (Blackwell) GPU"),
    (re.compile(r"\b(rtx\s*)?40[5-9]0\b"), 89, "a GeForce RTX 40 series (Ada) GPU"),
    (re.compile(r"rtx\s*[0-9]+\s*ada|\bl20\b"), 89, "an Ada GPU"),
    (re.compile(r"\ba800\b"), 80, "an A800: the Ampere A100's export variant"),
    (re.compile(r"\b(rtx\s*)?30[5-9]0\b|\ba[2-6]000\b|\ba40\b|\ba30\b|\ba16\b|\ba10\b|\ba2\b"), 86, "an Ampere GPU"),
    (re.compile(r"\b(rtx\s*)?20[6-8]0\b|\bt4\b|titan\s*rtx"), 75, "a Turing GPU"),
    (re.compile(r"\bv100\b"), 70, "a Volta GPU"),
)


def capability_hint(name: str) -> tuple[int, str] | None:
    """``(sm, what)`` for an NVIDIA GPU the catalog lacks, from its name (``NVIDIA GeForce RTX 4090``
    -> ``(89, ...)``); ``None`` when the name says nothing known.

    >>> capability_hint("NVIDIA GeForce RTX 4090")[0], capability_hint("NVIDIA A800-SXM4-80GB")[0], capability_hint("NVIDIA A10")[0]
    (89, 80, 86)
    """
    low = ascii_lower(name)
    # A -SXM4-80GB suffix is not a word boundary for \b after the model number: split at dashes.
    low = low.replace("-", " ").replace("_", " ")
    for pattern, sm, what in _OTHER_NVIDIA:
        if pattern.search(low):
            return sm, f"{name!r} ({what})"
    return None


def device_hint(name: str) -> str | None:
    """How to describe a device the catalog lacks when its name says what it is: a CUDA compute
    capability (:func:`capability_hint`), or a ROCm gfx target / XPU generation of
    :data:`GPU_ARCHES` given as a name (``gfx942``); ``None`` otherwise.

    >>> device_hint("gfx942")
    "'gfx942' is a ROCm gfx target, not a device name: describe it with --platform rocm --arch gfx942"
    """
    arch = ascii_lower(name.strip())
    for platform, arches in GPU_ARCHES.items():
        if arch in arches:
            what = "a ROCm gfx target" if platform == "rocm" else "an XPU generation"
            return f"{name!r} is {what}, not a device name: describe it with --platform {platform} --arch {arch}"
    hint = capability_hint(name)
    if hint is None:
        return None
    sm, what = hint
    return f"{what} is a CUDA GPU of compute capability {sm // 10}.{sm % 10}: describe it with --platform cuda --sm {sm}"


class HardwareIssue(InputIssue):
    """An unknown device name; its did-you-mean follows :func:`suggest_hardware`, not spelling alone."""

    def suggestion(self) -> str | None:
        return suggest_hardware(self.value) if isinstance(self.value, str) else None
