"""The corpus: every MoE ``config.json`` shipped (``examples/models``) or collected
(``../shared/models``), each under a handful of deployments.

A :class:`Case` is JSON-only so both sides can read it: the vLLM worker
(:mod:`.worker`) and our side (:mod:`.ours`). A ``*.hf_quant_config.json`` is paired with the
``config.json`` of the same stem, or, where none exists (Nemotron-3-Nano NVFP4), with the BF16
config its source notes name (:data:`QUANT_PAIRS`).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

__all__ = ["Case", "DEPLOYMENTS", "QUICK_DEPLOYMENTS", "PCP_DEPLOYMENTS", "model_files", "cases", "QUANT_PAIRS"]

QUANT_PAIRS: dict[str, str] = {
    "nvidia-nemotron-3-nano-30b-a3b-nvfp4": "nvidia-nemotron-3-nano-30b-a3b-bf16",
    "mimov2flashforcausallm-fp8-synthetic": "mimov2flashforcausallm-synthetic",
    "step3textforcausallm-fp8-synthetic": "step3textforcausallm-synthetic",
    "step3vlforconditionalgeneration-fp8-synthetic": "step3vlforconditionalgeneration-synthetic",
    "glm4moeliteforcausallm-nvfp4-synthetic": "glm4moeliteforcausallm-synthetic",
    "step3p5forcausallm-nvfp4-synthetic": "step3p5forcausallm-synthetic",
    "afmoeforcausallm-fp8block-synthetic": "afmoeforcausallm-synthetic",
    "afmoeforcausallm-nvfp4-synthetic": "afmoeforcausallm-synthetic",
    "granitemoehybridforcausallm-fp8-synthetic": "granitemoehybridforcausallm-synthetic",
    "mixtral-gptq-synthetic": "mixtral-8x7b-instruct-v0.1",
    "mixtral-awq-synthetic": "mixtral-8x7b-instruct-v0.1",
    "mixtral-quark-fp8-synthetic": "mixtral-8x7b-instruct-v0.1",
    "glm-5-mixed-nvfp4-fp8-synthetic": "glm-5",
    "gemma-4-26b-a4b-fp8dynamic-synthetic": "gemma-4-26b-a4b",
    "gemma-4-26b-a4b-quark-mxfp4-synthetic": "gemma-4-26b-a4b",
    "gemma-4-26b-a4b-fp8static-synthetic": "gemma-4-26b-a4b",
    "longcatflashforcausallm-fp8-synthetic": "longcatflashforcausallm-synthetic",
    "minimax-m3-mxfp8-synthetic": "minimax-m3",
    "exaonemoeforcausallm-fp8-synthetic": "exaonemoeforcausallm-synthetic",
    "glm4moeforcausallm-w8a8-synthetic": "glm4moeforcausallm-synthetic",
    "qwen3-30b-a3b-w4a16-synthetic": "qwen3-30b-a3b",
    "qwen3-30b-a3b-gptq-int4-synthetic": "qwen3-30b-a3b",
    "qwen2moeforcausallm-fp8-synthetic": "qwen2moeforcausallm-synthetic",
    "lagunaforcausallm-nvfp4-synthetic": "lagunaforcausallm-synthetic",
    "hyv3forcausallm-w4a16-synthetic": "hyv3forcausallm-synthetic",
    "inklingforcausallm-fp8dynamic-synthetic": "inklingforcausallm-synthetic",
    "glm5nextforcausallm-fp8-synthetic": "glm5nextforcausallm-synthetic",
    "phimoeforcausallm-awq-synthetic": "phimoeforcausallm-synthetic",
}
"""hf_quant_config stem -> config.json stem, where the stems differ (shared/models/SOURCES.md; the
registry variants: examples/models/registry/SOURCES.md, "Quantized variants"). A registry
variant's document need not be ModelOpt's: vLLM 0.29.0-0.34.0 ``transformers_utils/config.py``
(``get_config``) take whatever ``hf_quant_config.json`` holds as ``quantization_config`` when
config.json has none, so one file overlays a quantization document on a BF16 config."""


@dataclass(frozen=True)
class Deployment:
    """A machine and a parallel shape, as both sides are told.

    Attributes:
        name: short label (``H200-tp8``).
        gpu: our hardware catalog name (``--gpu``).
        platform, capability, arch: what the vLLM simulation pins (must be what ``gpu`` means).
        tp, dp, ep, all2all: parallelism (``all2all`` ``None``: the release's default).
        pcp: prefill-context-parallel size (``-pcp``): vLLM's engine arguments
            (``prefill_context_parallel_size``), the PCP group stand-in and our ``--pcp``.
        packages: optional packages present, by the harness's short names (CUDA deployments carry
            FlashInfer and the CUTLASS DSL: every vLLM 0.29-0.33 wheel requires
            ``flashinfer-python`` and ``nvidia-cutlass-dsl``, so a CUDA install has them; none
            carries ``flashinfer-cubin``, which no vLLM wheel requires)
            (:data:`moe_oracle.verify.cases.PACKAGES`); every other one is absent on both sides.
        tools: host tools found (:data:`moe_oracle.core.environment.HOST_TOOLS`); every other
            one is not found on both sides. Without flashinfer-cubin they decide whether vLLM
            counts FlashInfer as available (vllm/utils/flashinfer.py has_flashinfer).
        speculative: MTP speculative decoding for models that carry MTP layers.
    """

    name: str
    gpu: str
    platform: str
    capability: int | None
    arch: str | None
    tp: int = 1
    dp: int = 1
    ep: bool = False
    all2all: str | None = None
    pcp: int = 1
    packages: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    speculative: bool = False


_TOOLKIT = ("jit_nvcc", "ninja", "nvcc")
_NVCC_ONLY = ("jit_nvcc", "nvcc")

DEPLOYMENTS: tuple[Deployment, ...] = (
    Deployment("H200-tp8", "H200", "cuda", 90, None, tp=8, packages=("flashinfer", "cutlass", "deep_gemm"), tools=_TOOLKIT),
    Deployment("B200-dp8-ep-deepep_ht-mtp", "B200", "cuda", 100, None, dp=8, ep=True, all2all="deepep_high_throughput", packages=("flashinfer", "cutlass", "deep_gemm", "deep_ep"), tools=_NVCC_ONLY, speculative=True),
    Deployment("MI300X-tp8", "MI300X", "rocm", None, "gfx942", tp=8, packages=("aiter",)),
    Deployment("H100-tp2-dp4-ep-deepep_ll", "H100", "cuda", 90, None, tp=2, dp=4, ep=True, all2all="deepep_low_latency", packages=("flashinfer", "cutlass", "deep_gemm", "deep_ep")),
    Deployment("B200-tp2-dp4-ep", "B200", "cuda", 100, None, tp=2, dp=4, ep=True, packages=("flashinfer", "cutlass"), tools=_TOOLKIT),
)
"""The deployments of the extended corpus (``MOE_ORACLE_MODEL_BUILD=full``). None has
flashinfer-cubin; the host tools differ so that vLLM's FlashInfer gate goes both ways: H200 has a
CUDA toolkit and ninja (FlashInfer available in every release), B200 nvcc without ninja
(available in 0.29.0-0.31.0, off from 0.32.0), H100 neither (off in every release). B200 TP2 DP4 EP
over the default allgather-reducescatter is sequence-parallel MoE for the model classes that pass
``use_sequence_parallel_moe`` (the QA report: the monolithic TRT-LLM FP8 kernel is refused there)."""

QUICK_DEPLOYMENTS: tuple[Deployment, ...] = DEPLOYMENTS[:3]
"""The CI subset: H200 TP8, B200 DP8+EP over DeepEP HT with MTP, MI300X TP8."""

PCP_DEPLOYMENTS: tuple[Deployment, ...] = (
    Deployment("H200-tp4-pcp2", "H200", "cuda", 90, None, tp=4, pcp=2, packages=("flashinfer", "cutlass", "deep_gemm"), tools=_TOOLKIT),
    Deployment("H200-tp1-pcp2-ep", "H200", "cuda", 90, None, tp=1, pcp=2, ep=True, packages=("flashinfer", "cutlass", "deep_gemm"), tools=_TOOLKIT),
)
"""Prefill context parallelism (``-pcp 2``): the MoE TP group flattened across PCP, and EP over
TP x PCP. Only MLA models build with it (vLLM 0.34.0's attention selector: FLASH_ATTN,
FLASHINFER, TRITON_ATTN ... "PCP not supported"), and in this CPU environment only 0.34.0:
0.29.0-0.33.0 select Model Runner V1 without Triton (config/vllm.py ``use_v2_model_runner``), which
refuses PCP (``_validate_v1_model_runner``: "Model Runner V1 does not support: prefill context
parallel"); on a GPU host the V2 runner is chosen."""


@dataclass(frozen=True)
class Case:
    """One model under one deployment."""

    id: str
    model: str
    config: str
    hf_quant_config: str | None
    deployment: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def model_files(dirs: Iterable[Path]) -> list[tuple[str, Path, Path | None]]:
    """``(name, config.json, hf_quant_config.json | None)`` for every model in ``dirs``,
    deduplicated by content (the first directory wins a name); an overlay of :data:`QUANT_PAIRS`
    takes its base from its own folder, else from the first folder that has it."""
    seen_names: set[str] = set()
    seen_content: set[str] = set()
    out = []
    dirs = [d for d in dirs if d.is_dir()]
    # An overlay's BF16 base may sit in another corpus folder (a registry overlay of a shipped copy).
    everywhere: dict[str, Path] = {}
    for d in dirs:
        for p in sorted(d.glob("*.json")):
            if not p.name.endswith(".hf_quant_config.json"):
                everywhere.setdefault(p.stem, p)
    for d in dirs:
        files = sorted(d.glob("*.json"))
        quant = {p.name[: -len(".hf_quant_config.json")]: p for p in files if p.name.endswith(".hf_quant_config.json")}
        configs = {p.stem: p for p in files if not p.name.endswith(".hf_quant_config.json")}
        for stem, cfg in configs.items():
            digest = hashlib.sha256(cfg.read_bytes() + (quant[stem].read_bytes() if stem in quant else b"")).hexdigest()
            if stem in seen_names or digest in seen_content:
                continue
            seen_names.add(stem)
            seen_content.add(digest)
            out.append((stem, cfg, quant.get(stem)))
        for qstem, qpath in quant.items():
            if qstem in configs:
                continue
            base = QUANT_PAIRS.get(qstem)
            if base is None or base not in everywhere or qstem in seen_names:
                continue
            seen_names.add(qstem)
            out.append((qstem, configs.get(base, everywhere[base]), qpath))
    return out


def _has_mtp(config: Path) -> bool:
    import json

    cfg = json.loads(config.read_text())
    text = cfg.get("text_config", cfg)
    return bool(text.get("num_nextn_predict_layers") or text.get("mtp_num_hidden_layers") or text.get("num_mtp_layers"))


def cases(dirs: Iterable[Path], deployments: Iterable[Deployment]) -> list[Case]:
    """Every model under every deployment (speculative decoding only where the model has MTP layers)."""
    out = []
    models = model_files(dirs)
    for dep in deployments:
        for name, cfg, quant in models:
            d = asdict(dep)
            d["packages"] = list(dep.packages)
            d["tools"] = list(dep.tools)
            spec = dep.speculative and _has_mtp(cfg)
            d["speculative"] = {"method": "mtp", "num_speculative_tokens": 1} if spec else None
            out.append(Case(f"{name}@{dep.name}", name, str(cfg), str(quant) if quant else None, d))
    return out
