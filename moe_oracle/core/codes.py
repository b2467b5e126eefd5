"""What every reason code and warning code means, and what an operator can change about it.

The reason codes are the closed set :class:`moe_oracle.core.vocab.ReasonCode`; the warning codes are
the ``code`` enum of a Decision's warnings in ``schemas/decision.schema.json``. Tests assert that
every member of each has an entry here, so a new code cannot ship unexplained. ``moe-oracle codes``
prints both tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .vocab import ReasonCode

__all__ = ["CODE_DOCS", "WARNING_DOCS", "CodeDoc", "render_codes"]


@dataclass(frozen=True)
class CodeDoc:
    """One reason code explained.

    Attributes:
        meaning: what the failure says, one sentence.
        change: what an operator can change (``nothing`` when no input of theirs fixes it).
        disruption: how disruptive that change usually is, 0 (a flag) to 3 (other hardware);
            why-not uses it to rank fixes that touch these fields.
    """

    meaning: str
    change: str
    disruption: int


CODE_DOCS: Mapping[ReasonCode, CodeDoc] = MappingProxyType(
    {
        ReasonCode.PLATFORM_UNSUPPORTED: CodeDoc("The kernel does not run on this platform at all (CUDA, ROCm, CPU, XPU).", "other hardware (--gpu)", 3),
        ReasonCode.SM_UNSUPPORTED: CodeDoc("Right platform, but the exact GPU architecture (SM / gfx target / CPU ISA) is not one the kernel was built for.", "other hardware (--gpu)", 3),
        ReasonCode.PACKAGE_MISSING: CodeDoc("A Python package the kernel needs is not installed.", "install it (--package NAME==VER to ask what if)", 1),
        ReasonCode.PACKAGE_VERSION_UNSUPPORTED: CodeDoc("The package is installed, at a version outside the supported range.", "upgrade or downgrade it", 1),
        ReasonCode.ENV_DISABLED: CodeDoc("An environment variable turns the kernel off (e.g. VLLM_USE_DEEP_GEMM=0).", "change the variable (--env VAR=VALUE)", 0),
        ReasonCode.QUANT_UNSUPPORTED: CodeDoc("The kernel does not implement this (weight, activation) quantization pair.", "another checkpoint, or vllm serve --quantization (a redeployment; ask with --quant)", 2),
        ReasonCode.ACTIVATION_UNSUPPORTED: CodeDoc("The kernel does not implement the model's expert activation (or its gated/non-gated form).", "nothing: the model fixes it", 3),
        ReasonCode.ROUTING_UNSUPPORTED: CodeDoc("A monolithic kernel routes inside and does not implement the model's routing method.", "nothing: the model fixes it", 3),
        ReasonCode.ROUTER_DTYPE_UNSUPPORTED: CodeDoc("The router-logits dtype is not accepted (alone, or with this routing method).", "nothing: the model fixes it", 3),
        ReasonCode.DTYPE_UNSUPPORTED: CodeDoc("The model activation dtype (in_dtype) is not accepted.", "--dtype on the vllm serve line", 1),
        ReasonCode.PARALLEL_UNSUPPORTED: CodeDoc("The TP/DP/EP layout or the all2all backend rules the kernel out.", "deployment flags: --ep, --all2all, --tp/--dp", 1),
        ReasonCode.EPLB_UNSUPPORTED: CodeDoc("The kernel does not support the expert-parallel load balancer.", "drop --eplb (--no-eplb)", 0),
        ReasonCode.LORA_UNSUPPORTED: CodeDoc("The kernel does not support LoRA adapters on the experts.", "drop --lora (vllm serve --enable-lora; --no-lora)", 0),
        ReasonCode.BATCH_INVARIANCE_UNSUPPORTED: CodeDoc("Batch invariance is requested (VLLM_BATCH_INVARIANT=1) and the kernel is not batch invariant.", "drop the request", 0),
        ReasonCode.BIAS_UNSUPPORTED: CodeDoc("The experts carry a bias and the kernel has none.", "nothing: the model fixes it", 3),
        ReasonCode.SHAPE_UNSUPPORTED: CodeDoc("A size is outside a limit of the kernel (experts, hidden size, top-k, tokens per call).", "the TP/EP split, or --max-num-batched-tokens for token limits", 2),
        ReasonCode.SHAPE_UNALIGNED: CodeDoc("A size is not a multiple of the kernel's alignment (e.g. the TP shard of the intermediate size vs the 128 FP8 block).", "a TP size that shards evenly, or EP instead of TP (--ep)", 1),
        ReasonCode.FEATURE_UNSUPPORTED: CodeDoc("The model uses a feature the kernel would silently ignore (SwiGLU clamp, hash routing, ...).", "nothing: the model fixes it", 3),
        ReasonCode.PAIRING_INCOMPATIBLE: CodeDoc("No prepare/finalize for this dispatch produces what the kernel consumes (interface or activation format).", "the all2all backend (--all2all) or EP/DP layout", 1),
        ReasonCode.KNOWN_BAD: CodeDoc("A known correctness bug or crash for this condition (rules/known_bad.yaml names the upstream report).", "a package version outside the bad range, or nothing", 1),
        ReasonCode.PATH_NOT_ENABLED: CodeDoc("Capable, but the engine does not take this path unless asked (opt-in backends, outside the priority order).", "request it: --moe-backend NAME", 0),
        ReasonCode.NOT_REQUESTED: CodeDoc("Another backend was requested (--moe-backend or an environment override).", "request this one, or auto", 0),
    }
)


WARNING_DOCS: Mapping[str, CodeDoc] = MappingProxyType(
    {
        "known_bad": CodeDoc("The selected kernel matches a known bug or crash (rules/known_bad.yaml names the upstream report); the engine selects it anyway, so the faithful answer keeps it and names the safe alternative.", "--policy safe to see the alternative; a package version outside the bad range", 1),
        "unchecked": CodeDoc("The engine returns the winner without a check that fails for it (a shortcut's early return, or a check vLLM makes only when it builds the kernel); the warning names the failing check.", "--policy safe applies every check; or change what the failing check reads", 1),
        "engine_release": CodeDoc("The answer is for a vLLM release the tables do not model (newer, older, or between modelled releases), or a package newer than the tables know: facts of the nearest modelled release are assumed.", "declare a modelled release (--package vllm==0.33.0), or accept the assumption", 1),
    }
)
"""Warning codes (``DecisionWarning.code``): the answer stands, with this caveat."""


def render_codes() -> str:
    """The ``moe-oracle codes`` text: one block per reason code, in declaration order, then one per warning code."""
    lines = ["Reason codes (a failure carries one; `explain` lists every failure of every candidate):", ""]
    for code in ReasonCode:
        doc = CODE_DOCS[code]
        lines.append(code.value)
        lines.append(f"    {doc.meaning}")
        lines.append(f"    to change: {doc.change}")
    lines += ["", "Warning codes (a warning carries one; the answer stands, with this caveat):", ""]
    for name, doc in WARNING_DOCS.items():
        lines += [name, f"    {doc.meaning}", f"    to change: {doc.change}"]
    return "\n".join(lines) + "\n"
