"""Deployments the engine refuses before choosing a kernel, and inputs that change nothing.

Both are pure functions of the inputs (no host access), used by the engine (notes) and the
command line (a refusal is bad input, exit code 2).
"""

from __future__ import annotations

from typing import Any, Mapping

from .errors import InputIssue

__all__ = ["no_effect_notes", "refusals"]


_FLAG_OF = {
    "parallel.enable_eplb": "--eplb",
    "parallel.use_ep": "--ep",
    "parallel.num_redundant_experts": "--redundant-experts",
    "parallel.tp_size": "--tp",
    "device": "--gpu",
}


def refusals(config: Any, *, flags: bool = True) -> list[InputIssue]:
    """What vLLM 0.33.0 refuses before any kernel is chosen: the server does not start.

    Sources: vLLM 0.33.0 vllm/config/parallel.py ``ParallelConfig.__post_init__`` (EPLB needs
    ``enable_expert_parallel``, TP/PCP/DP > 1 and a CUDA, ROCm or XPU platform; redundant
    experts need EPLB) and P/layer.py (with EPLB, the physical experts must split evenly over
    the EP ranks).

    ``flags``: name the moe-oracle flags (``--eplb``), else the config-file paths.
    """
    p = config.parallel
    world = p.tp_size * p.dp_size
    issues = []

    def issue(field: str, message: str, value: Any) -> None:
        issues.append(InputIssue(_FLAG_OF[field] if flags else f"$.{field}", message, value, None, keyword="engine_refuses"))

    if p.enable_eplb:
        if not p.use_ep:
            issue("parallel.enable_eplb", "vLLM 0.33.0 refuses EPLB without expert parallelism (\"enable_expert_parallel must be True to use EPLB\", vllm/config/parallel.py); add --ep", True)
        elif world <= 1:
            issue("parallel.enable_eplb", f"vLLM 0.33.0 refuses EPLB without tensor, prefill-context or data parallelism (TP={p.tp_size}, DP={p.dp_size}; vllm/config/parallel.py)", True)
        platform = config.device.platform.value
        if platform not in ("cuda", "rocm", "xpu"):
            issue("parallel.enable_eplb", f"vLLM 0.33.0 supports EPLB only on CUDA, ROCm and XPU devices, not {platform} (vllm/config/parallel.py)", platform)
        physical = config.num_experts + p.num_redundant_experts
        if p.use_ep and world > 1 and physical % world:
            issue("parallel.enable_eplb", f"vLLM 0.33.0 refuses EPLB when the {physical} physical experts ({config.num_experts} + {p.num_redundant_experts} redundant) do not split evenly over {world} EP ranks (P/layer.py)", physical)
    elif p.num_redundant_experts:
        issue("parallel.num_redundant_experts", f"vLLM 0.33.0 refuses {p.num_redundant_experts} redundant experts without EPLB (\"Either enable EPLB or unset num_redundant_experts\", vllm/config/parallel.py); add --eplb", p.num_redundant_experts)
    return issues


def no_effect_notes(config: Any, values: Mapping[str, Any], catalog: Any) -> tuple[str, ...]:
    """Inputs that change nothing for this selection, one sentence each.

    * ``--max-tokens`` when no rule of any table reads the tokens per call;
    * ``--ep`` at world size 1 (vLLM 0.33.0 P/config.py: ``use_ep`` needs TP x DP x PCP > 1);
    * more EP ranks than physical experts: those ranks hold no expert (P/expert_map_manager.py
      gives them ``global_num_experts // ep_size`` = 0).
    """
    notes = []
    if config.max_num_tokens is not None:
        if "max_num_tokens" not in catalog.fields_read:  # computed once per catalog view
            notes.append(f"max tokens per call ({config.max_num_tokens}) has no effect: no rule in these tables limits tokens per call")
    p = config.parallel
    if p.use_ep and p.tp_size * p.dp_size == 1:
        notes.append("expert parallelism has no effect at world size 1: vLLM turns EP on only when TP x DP > 1")
    ep = values.get("ep_size") or 1
    physical = config.num_experts + (p.num_redundant_experts if p.enable_eplb else 0)
    if ep > physical:
        notes.append(f"{ep} EP ranks for {physical} experts: {ep - physical} ranks hold no expert")
    return tuple(notes)
