"""Drift between our FlashInfer kernel tables and what the installed FlashInfer declares.

Our tables state, per FlashInfer kernel, the exact CUDA device capabilities it runs
on (``platforms.cuda.device_capability`` narrowed by SM-coupled constraints such as
``flashinfer_cutlass.sm90_only_schemes``). FlashInfer states the same thing in its
own metadata. When ``flashinfer`` is importable, this module compares the two and
reports every difference with both sets, the FlashInfer symbol it asked and the
FlashInfer version, as lint findings (code ``drift``; warning per mismatch).

Only declared metadata is read, and only with integer capabilities (major*10+minor):

* the unified MoE API's per-backend ``<Config>.supported(arch)`` classmethods
  (``flashinfer.fused_moe.api``, the allow-lists ``MoELayer`` filters on);
* ``@supported_compute_capability`` metadata, ``is_compute_capability_supported(cc)``,
  on the flat entry points that carry it (``b12x_fused_moe``,
  ``cute_dsl_fused_moe_nvfp4``);
* ``@backend_requirement`` APIs through ``is_backend_supported(backend, cc)`` (a
  :class:`Query` with ``backend`` set; no FlashInfer MoE experts API of 0.7.4 has one).

Nothing is launched, nothing is JIT-built, no CUDA device is needed. Not usable as a
query: ``is_trtllm_moe_supported`` (reads the current CUDA device; it only says
major >= 10) and the ``gen_cutlass_fused_moe_sm*_module`` JIT generators (they build
nvcc flag lists from the local toolkit; their dispatch is summarised by the
``Cutlass*Config`` allow-lists). Variant guards that FlashInfer applies only inside a
runner's ``check_support`` on a real device (TRT-LLM W4A16 off on SM 10.3) are
invisible to these queries; see :data:`DRIFT_PROBES`.

Each of our kernels maps to one query (:class:`Probe`); a kernel whose SM set
differs per quant scheme (``flashinfer_cutlass``, ``flashinfer_trtllm_fp8_monolithic``)
maps to one query per scheme. A probe may list alternatives: the first that imports
is asked (the flat CuTe-DSL entry points need ``nvidia-cutlass-dsl``; the unified
API's config for the same kernel does not). A probe whose symbols all fail to import
or answer becomes a ``could not query`` note, never an exception.

Run ``python -m moe_oracle.tools.drift`` for the full comparison table (``--json`` for data).
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core.catalog import Catalog, ExpertsEntry
from .findings import Finding
from ..explain.matrix import cell_for_values, cuda_values
from ..core.quant import SCHEMES

__all__ = [
    "CANDIDATE_CCS",
    "DRIFT_PROBES",
    "FLASHINFER_PACKAGE",
    "DriftReport",
    "DriftResult",
    "Probe",
    "Query",
    "check_drift",
    "drift_findings",
    "ours_sm_set",
]

FLASHINFER_PACKAGE = "flashinfer-python"
CODE = "drift"

#: Capabilities asked of both sides: every major 7..13 with minor 0..9 (membership
#: queries are cheap; a new FlashInfer arch such as 110 or 122 shows up on its own).
CANDIDATE_CCS: tuple[int, ...] = tuple(major * 10 + minor for major in range(7, 14) for minor in range(10))


@dataclass(frozen=True)
class Query:
    """One FlashInfer metadata call: ``module:attr.path``, called as ``f(cc)`` or ``f(backend, cc)``."""

    symbol: str
    backend: str | None = None

    def describe(self) -> str:
        return f"{self.symbol}({self.backend!r}, cc)" if self.backend else f"{self.symbol}(cc)"


@dataclass(frozen=True)
class Probe:
    """Our kernel (for one quant scheme, or all its schemes when ``scheme`` is None) -> FlashInfer query.

    ``queries`` are alternatives for the same kernel, most specific first: the first
    that can be imported and answers is used.
    """

    kernel: str
    queries: tuple[Query, ...]
    scheme: str | None = None
    why: str = ""

    @property
    def subject(self) -> str:
        return f"{self.kernel}[{self.scheme}]" if self.scheme else self.kernel


_API = "flashinfer.fused_moe.api"


def _cfg(name: str) -> Query:
    return Query(f"{_API}:{name}.supported")


# The mapping, as data. Which FlashInfer config serves which of our kernels follows
# flashinfer/fused_moe/layer.py _BACKEND_RUNNERS and each runner's
# supported_quant_variants (0.7.4): DeepSeek FP8 block *and* MXFP8 x MXFP8 are
# TrtllmFp8BlockRunner; NVFP4, MXFP4 x MXFP8 and MXFP4 x BF16 are TrtllmFp4RoutedRunner.
DRIFT_PROBES: tuple[Probe, ...] = (
    # --- flashinfer_trtllm: trtllm_* flat entry points; the unified API's Trtllm*Config allow-lists
    Probe("flashinfer_trtllm_bf16_monolithic", (_cfg("TrtllmBf16Config"),), why="trtllm_bf16_moe"),
    Probe("flashinfer_trtllm_bf16", (_cfg("TrtllmBf16Config"),), why="trtllm_bf16_routed_moe"),
    Probe("flashinfer_trtllm_bf16_lora", (_cfg("TrtllmBf16Config"),), why="trtllm_bf16_routed_moe + LoRA deltas"),
    Probe("flashinfer_trtllm_fp8_monolithic", (_cfg("TrtllmFp8BlockConfig"),), scheme="fp8_block", why="trtllm_fp8_block_scale_moe"),
    Probe("flashinfer_trtllm_fp8", (_cfg("TrtllmFp8BlockConfig"),), scheme="fp8_block", why="trtllm_fp8_block_scale_routed_moe"),
    Probe("flashinfer_trtllm_fp8_monolithic", (_cfg("TrtllmFp8PerTensorConfig"),), scheme="fp8_tensor_static", why="trtllm_fp8_per_tensor_scale_moe"),
    Probe("flashinfer_trtllm_fp8_monolithic", (_cfg("TrtllmFp8BlockConfig"),), scheme="mxfp8", why="trtllm_fp8_block_scale_moe, MXFP8 x MXFP8"),
    Probe("flashinfer_trtllm_fp8", (_cfg("TrtllmFp8BlockConfig"),), scheme="mxfp8", why="trtllm_fp8_block_scale_routed_moe, MXFP8 x MXFP8"),
    Probe("flashinfer_trtllm_nvfp4_monolithic", (_cfg("TrtllmFp4Config"),), why="trtllm_fp4_block_scale_moe"),
    Probe("flashinfer_trtllm_nvfp4", (_cfg("TrtllmFp4Config"),), why="trtllm_fp4_block_scale_routed_moe"),
    # TrtllmFp4Config.supported covers the FP4 family; FlashInfer drops MXFP4 x BF16 (W4A16)
    # on SM103 only in TrtllmFp4RoutedRunner.check_support (needs a device), so these
    # probes compare the union over the kernel's schemes.
    Probe("flashinfer_trtllm_mxfp4_monolithic", (_cfg("TrtllmFp4Config"),), why="trtllm_fp4_block_scale_moe, MXFP4 x BF16 (the config covers W4A16 and W4A8)"),
    Probe("flashinfer_trtllm_mxfp4", (_cfg("TrtllmFp4Config"),), why="trtllm_fp4_block_scale_routed_moe, MXFP4 x BF16 (the config covers W4A16 and W4A8)"),
    Probe("flashinfer_trtllm_mxfp4_mxfp8_monolithic", (_cfg("TrtllmFp4Config"),), why="trtllm_fp4_block_scale_moe, MXFP4 x MXFP8"),
    Probe("flashinfer_trtllm_mxfp4_mxfp8", (_cfg("TrtllmFp4Config"),), why="trtllm_fp4_block_scale_routed_moe, MXFP4 x MXFP8"),
    Probe("flashinfer_trtllm_mxfp4_lora", (_cfg("TrtllmFp4Config"),), why="trtllm_fp4_block_scale_routed_moe + LoRA deltas, MXFP4 x BF16"),
    Probe("flashinfer_trtllm_mxint4_monolithic", (_cfg("TrtllmMxInt4Config"),), why="trtllm_mxint4_block_scale_moe"),
    # --- flashinfer_cutlass: cutlass_fused_moe; the unified API's Cutlass*Config allow-lists per scheme
    Probe("flashinfer_cutlass", (_cfg("CutlassBf16Config"),), scheme="unquantized", why="cutlass_fused_moe, BF16"),
    Probe("flashinfer_cutlass", (_cfg("CutlassFp8PerTensorConfig"),), scheme="fp8_tensor_static", why="cutlass_fused_moe, FP8 per-tensor"),
    Probe("flashinfer_cutlass", (_cfg("CutlassFp8BlockConfig"),), scheme="fp8_block", why="cutlass_fused_moe(use_deepseek_fp8_block_scale=True)"),
    Probe("flashinfer_cutlass_mxfp4", (_cfg("CutlassW4A16Config"),), why="cutlass_fused_moe, MXFP4 x BF16 (CUTLASS W4A16)"),
    Probe("flashinfer_cutlass_mxfp4_mxfp8", (_cfg("CutlassMxfp8Mxfp4Config"),), why="cutlass_fused_moe, MXFP4 x MXFP8"),
    Probe("flashinfer_cutlass", (_cfg("CutlassNvfp4Config"),), scheme="nvfp4", why="cutlass_fused_moe, NVFP4"),
    # --- flashinfer_cutedsl: cute_dsl_fused_moe_nvfp4 (needs nvidia-cutlass-dsl to import), else the unified CuteDslConfig
    Probe("flashinfer_cutedsl", (Query("flashinfer.fused_moe.cute_dsl.fused_moe:cute_dsl_fused_moe_nvfp4.is_compute_capability_supported"), _cfg("CuteDslConfig")), why="cute_dsl_fused_moe_nvfp4 / CuteDslMoEWrapper"),
    Probe("flashinfer_cutedsl_batched", (Query("flashinfer.fused_moe.cute_dsl.fused_moe:cute_dsl_fused_moe_nvfp4.is_compute_capability_supported"), _cfg("CuteDslConfig")), why="grouped_gemm_nt_masked carries no SM metadata; the CuTe-DSL NVFP4 MoE's is used"),
    # --- flashinfer_b12x: b12x_fused_moe (@supported_compute_capability), else the unified B12x configs
    Probe("flashinfer_b12x", (Query("flashinfer.fused_moe.cute_dsl.b12x_moe:b12x_fused_moe.is_compute_capability_supported"), _cfg("B12xNvfp4Config")), why="b12x_fused_moe / B12xMoEWrapper"),
)


@dataclass(frozen=True)
class DriftResult:
    """One probe's outcome. ``theirs`` is None when FlashInfer could not be queried (``error`` says why)."""

    kernel: str
    scheme: str | None
    ours: tuple[int, ...]
    theirs: tuple[int, ...] | None
    symbol: str | None
    error: str | None = None
    skipped: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        return f"{self.kernel}[{self.scheme}]" if self.scheme else self.kernel

    @property
    def status(self) -> str:
        if self.theirs is None:
            return "unqueried"
        return "match" if self.theirs == self.ours else "mismatch"

    @property
    def only_ours(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.ours) - set(self.theirs or ())))

    @property
    def only_theirs(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.theirs or ()) - set(self.ours)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "scheme": self.scheme,
            "status": self.status,
            "ours": list(self.ours),
            "theirs": None if self.theirs is None else list(self.theirs),
            "only_ours": list(self.only_ours),
            "only_theirs": list(self.only_theirs),
            "symbol": self.symbol,
            "error": self.error,
            "skipped": list(self.skipped),
        }


@dataclass(frozen=True)
class DriftReport:
    """The whole comparison. ``available`` is False when flashinfer could not be imported (``reason``)."""

    available: bool
    version: str | None
    results: tuple[DriftResult, ...] = ()
    unmapped: tuple[str, ...] = ()
    reason: str | None = None
    required: bool = False

    @property
    def mismatches(self) -> tuple[DriftResult, ...]:
        return tuple(r for r in self.results if r.status == "mismatch")

    @property
    def unqueried(self) -> tuple[DriftResult, ...]:
        return tuple(r for r in self.results if r.status == "unqueried")

    def findings(self) -> list[Finding]:
        """Lint findings: a warning per mismatch, notes for the rest and one summary note."""
        pkg = FLASHINFER_PACKAGE
        if not self.available:
            if self.required:
                return [Finding("error", CODE, pkg, f"drift check requested but flashinfer cannot be imported: {self.reason}")]
            return [Finding("note", CODE, pkg, f"drift check skipped: {self.reason}")]
        out = []
        for r in self.mismatches:
            out.append(Finding("warning", CODE, r.subject, _mismatch_message(r, self.version)))
        for r in self.unqueried:
            out.append(Finding("note", CODE, r.subject, f"could not query FlashInfer {self.version}: {r.error}"))
        for kernel in self.unmapped:
            out.append(Finding("note", CODE, kernel, f"needs {pkg} but moe_oracle.tools.drift.DRIFT_PROBES maps it to no FlashInfer query; drift not checked"))
        kernels = len({r.kernel for r in self.results})
        out.append(
            Finding(
                "note",
                CODE,
                pkg,
                f"compared {len(self.results)} probe(s) of {kernels} kernel(s) with FlashInfer {self.version}: "
                f"{len(self.mismatches)} mismatch(es), {len(self.unqueried)} not queried, {len(self.unmapped)} unmapped",
            )
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "version": self.version,
            "reason": self.reason,
            "results": [r.to_dict() for r in self.results],
            "unmapped": list(self.unmapped),
        }

    def render_markdown(self) -> str:
        """A table of every probe: kernel, our SM set, FlashInfer's, the symbol queried."""
        if not self.available:
            return f"drift not checked: {self.reason}\n"
        lines = [
            f"FlashInfer {self.version}",
            "",
            "| kernel | status | ours | FlashInfer | only ours | only FlashInfer | symbol | alternatives not usable |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in self.results:
            theirs = _fmt(r.theirs) if r.theirs is not None else f"could not query: {r.error}"
            symbol = f"`{r.symbol}`" if r.symbol else "-"
            lines.append(f"| `{r.subject}` | {r.status} | {_fmt(r.ours)} | {theirs} | {_fmt(r.only_ours)} | {_fmt(r.only_theirs)} | {symbol} | {'; '.join(r.skipped)} |")
        for k in self.unmapped:
            lines.append(f"| `{k}` | unmapped | | | | | | |")
        return "\n".join(lines) + "\n"


def _fmt(ccs: Iterable[int] | None) -> str:
    ccs = tuple(ccs or ())
    return "{" + ", ".join(str(c) for c in ccs) + "}" if ccs else "{}"


def _mismatch_message(r: DriftResult, version: str | None) -> str:
    parts = [f"tables declare SM {_fmt(r.ours)}; FlashInfer {version} {r.symbol} declares SM {_fmt(r.theirs)}"]
    if r.only_theirs:
        parts.append(f"only FlashInfer: {_fmt(r.only_theirs)}")
    if r.only_ours:
        parts.append(f"only tables: {_fmt(r.only_ours)}")
    return "; ".join(parts)


def _kernel_schemes(entry: ExpertsEntry) -> list[str]:
    declared = (entry.declared.get("supports") or {}).get("quant_scheme")
    if isinstance(declared, list):
        return [s for s in declared if s in SCHEMES]
    return list(SCHEMES)


def ours_sm_set(entry: ExpertsEntry, scheme: str | None = None, ccs: Sequence[int] = CANDIDATE_CCS) -> tuple[int, ...]:
    """CUDA capabilities on which our tables let ``entry`` run ``scheme`` (any of its schemes when None).

    Uses the support-matrix evaluation: device and quant checks only (a check that
    abstains on another field, e.g. all2all, does not remove a capability).
    """
    schemes = [scheme] if scheme is not None else _kernel_schemes(entry)
    return tuple(cc for cc in ccs if any(cell_for_values(entry, cuda_values(cc, s)).status != "no" for s in schemes))


def uses_flashinfer(entry: ExpertsEntry) -> bool:
    return FLASHINFER_PACKAGE in (entry.declared.get("packages") or {})


def _resolve(symbol: str) -> Callable[..., Any]:
    module_name, _, attr_path = symbol.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{symbol} is not callable")
    return obj


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _ask(query: Query, ccs: Sequence[int]) -> tuple[int, ...]:
    fn = _resolve(query.symbol)
    out = []
    for cc in ccs:
        answer = fn(query.backend, cc) if query.backend is not None else fn(cc)
        if not isinstance(answer, bool):
            raise TypeError(f"{query.describe()} returned {type(answer).__name__} for {cc}, not bool")
        if answer:
            out.append(cc)
    return tuple(out)


def _theirs(probe: Probe, ccs: Sequence[int]) -> tuple[tuple[int, ...] | None, str | None, str | None, tuple[str, ...]]:
    """(set, symbol used, error, alternatives skipped with reasons)."""
    skipped: list[str] = []
    for query in probe.queries:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return _ask(query, ccs), query.symbol, None, tuple(skipped)
        except Exception as exc:  # noqa: BLE001 - any failure to import or answer is a note, never a crash
            skipped.append(f"{query.symbol}: {_short(exc)}")
    return None, None, "; ".join(skipped) or "no query", ()


def _import_flashinfer() -> tuple[Any | None, str | None]:
    """(module, or the reason it is unavailable)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module("flashinfer")
    except ModuleNotFoundError as exc:
        if exc.name == "flashinfer":
            return None, f"{FLASHINFER_PACKAGE} is not installed (pip install {FLASHINFER_PACKAGE} to compare)"
        return None, f"flashinfer is installed but does not import: {_short(exc)}"
    except Exception as exc:  # noqa: BLE001
        return None, f"flashinfer is installed but does not import: {_short(exc)}"
    return module, None


def _version(module: Any) -> str:
    version = getattr(module, "__version__", None)
    if isinstance(version, str) and version:
        return version
    try:
        from importlib.metadata import version as dist_version

        return dist_version(FLASHINFER_PACKAGE)
    except Exception:  # noqa: BLE001
        return "unknown"


def check_drift(catalog: Catalog, *, probes: Sequence[Probe] = DRIFT_PROBES, ccs: Sequence[int] = CANDIDATE_CCS, required: bool = False) -> DriftReport:
    """Compare every FlashInfer kernel of ``catalog`` with the installed FlashInfer.

    Probes naming kernels absent from ``catalog`` are ignored (custom table sets);
    catalog kernels that need flashinfer-python but have no probe are listed as unmapped.
    """
    module, reason = _import_flashinfer()
    if module is None:
        return DriftReport(False, None, reason=reason, required=required)
    version = _version(module)
    entries: Mapping[str, ExpertsEntry] = {e.id: e for e in catalog.experts}
    results = []
    for probe in probes:
        entry = entries.get(probe.kernel)
        if entry is None:
            continue
        ours = ours_sm_set(entry, probe.scheme, ccs)
        theirs, symbol, error, skipped = _theirs(probe, ccs)
        results.append(DriftResult(probe.kernel, probe.scheme, ours, theirs, symbol, error, skipped))
    mapped = {p.kernel for p in probes}
    unmapped = tuple(e.id for e in catalog.experts if uses_flashinfer(e) and e.id not in mapped)
    return DriftReport(True, version, tuple(results), unmapped, required=required)


def drift_findings(catalog: Catalog, *, required: bool = False) -> list[Finding]:
    """:func:`check_drift` as lint findings (``required``: unavailable flashinfer is an error, not a note)."""
    return check_drift(catalog, required=required).findings()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m moe_oracle.tools.drift [--tables DIR] [--json]``: the full comparison table."""
    import argparse
    import json
    from pathlib import Path

    from ..core.loading import load_catalog
    from ..core.oracle import default_catalog

    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.tools.drift", description="Compare the FlashInfer kernels' SM sets in the tables with the installed FlashInfer.")
    parser.add_argument("--tables", metavar="DIR")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.tables:
        root = Path(args.tables)
        catalog = load_catalog([root / "kernels", root / "prepare_finalize", root / "rules"])
    else:
        catalog = default_catalog()
    report = check_drift(catalog)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.render_markdown(), end="")
    if not report.available:
        return 2
    return 1 if report.mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
