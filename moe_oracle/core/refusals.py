"""Deployments the engine refuses before choosing a kernel, and inputs that change nothing.

Both are pure functions of the inputs (no host access), used by the engine (notes) and the
command line (a refusal is bad input, exit code 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from packaging.specifiers import SpecifierSet

from .errors import InputIssue

if TYPE_CHECKING:
    from .versions import EngineRelease

__all__ = ["EPLB_PLATFORMS", "FLAG", "Origin", "PCP_REFUSES_DP", "eplb_platforms", "no_effect_notes", "refusals", "where_given"]


@dataclass(frozen=True)
class Origin:
    """Where a deployment field was given, so that a refusal names that input and its advice
    says how to change it there.

    Attributes:
        kind: ``flag`` (moe-oracle's own flag, ``--eplb``), ``serve`` (the ``--serve`` line's
            vLLM flag, ``--enable-eplb``) or ``file`` (a MoEConfig file's YAML path,
            ``$.parallel.enable_eplb``).
        file: the MoEConfig file, with ``kind="file"`` only.

    Raises:
        ValueError: an unknown ``kind``, or ``file`` given with another kind or missing with ``file``.
    """

    kind: str
    file: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Origin.kind: {self.kind!r} is not one of {', '.join(_KINDS)}")
        if (self.kind == "file") != (self.file is not None):
            raise ValueError(f"Origin.file: {self.file!r}: a file is given with kind 'file' and only then")


_KINDS = ("flag", "serve", "file")
FLAG = Origin("flag")

# field -> (moe-oracle flag, vLLM 0.33.0-0.34.0 serve flag as this package's --serve reads it)
_INPUTS = {
    "parallel.enable_eplb": ("--eplb", "--enable-eplb"),
    "parallel.use_ep": ("--ep", "--enable-expert-parallel"),
    "parallel.num_redundant_experts": ("--redundant-experts", "--eplb-config num_redundant_experts"),
    "parallel.pcp_size": ("--pcp", "--prefill-context-parallel-size"),
    "parallel.tp_size": ("--tp", "--tensor-parallel-size"),
    "parallel.all2all_backend": ("--all2all", "--all2all-backend"),
}


def where_given(field: str, origin: Origin) -> str:
    """The issue path naming where ``field`` was given: ``--eplb``, ``--serve --enable-eplb`` or ``$.parallel.enable_eplb``.

    >>> where_given("parallel.use_ep", Origin("serve"))
    '--serve --enable-expert-parallel'
    """
    flag, serve_flag = _INPUTS[field]
    return {"flag": flag, "serve": f"--serve {serve_flag}", "file": f"$.{field}"}[origin.kind]


def _turn_on(field: str, origin: Origin) -> str:
    """Advice to turn a boolean field on, in the words of the input the refused value came from.

    >>> _turn_on("parallel.use_ep", Origin("file", "dep.yaml"))
    'set $.parallel.use_ep: true in dep.yaml'
    """
    flag, serve_flag = _INPUTS[field]
    return {"flag": f"add {flag}", "serve": f"add {serve_flag} to the vllm serve line", "file": f"set $.{field}: true in {origin.file}"}[origin.kind]


EPLB_PLATFORMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("<0.31.0", ("cuda", "rocm")),
    (">=0.31.0", ("cuda", "rocm", "xpu")),
)
"""vLLM release range -> the platforms EPLB runs on (vllm/config/parallel.py
``ParallelConfig.__post_init__``: ``current_platform.is_cuda_alike()`` in 0.29.0-0.30.0, ``or
is_xpu()`` from 0.31.0; tests/differential/test_release_sources.py reads the condition in every
modelled release's source)."""


PCP_REFUSES_DP = "<0.30.0"
"""vLLM releases that refuse prefill context parallelism together with data parallelism
(vLLM 0.29.0 vllm/config/parallel.py ``ParallelConfig._validate_parallel_config``: ``if pcp > 1
and self.data_parallel_size > 1: raise ValueError("PCP does not support data parallelism
yet.")``; gone in 0.30.0-0.34.0; tests/differential/test_release_sources.py reads it in every
modelled release's source)."""


def eplb_platforms(release: str) -> tuple[str, ...]:
    """The platforms vLLM ``release`` (a modelled release) runs EPLB on (:data:`EPLB_PLATFORMS`).

    >>> eplb_platforms("0.30.0"), eplb_platforms("0.33.0")
    (('cuda', 'rocm'), ('cuda', 'rocm', 'xpu'))
    """
    return next(platforms for spec, platforms in EPLB_PLATFORMS if release in SpecifierSet(spec))


def _who(release: "EngineRelease | None") -> tuple[str, tuple[str, ...]]:
    """(the words naming the engine, the platforms it runs EPLB on): ``vLLM 0.31.0``; for an
    unmodelled release, the release standing in for it (``vLLM 0.29.0 (standing in for
    0.28.0)``); without a release (a catalog built without an engine table), ``vLLM`` and the
    newest range's facts."""
    if release is None:
        return "vLLM", EPLB_PLATFORMS[-1][1]
    return release.facts_named(), eplb_platforms(release.stand_in)


def refusals(config: Any, *, release: "EngineRelease | None" = None, origins: Mapping[str, Origin] | None = None) -> list[InputIssue]:
    """What the engine release refuses before any kernel is chosen: the server does not start.

    Sources (the same in vLLM 0.29.0-0.34.0 but where noted): vllm/config/parallel.py
    ``ParallelConfig._validate_parallel_config`` (EPLB needs ``enable_expert_parallel``,
    ``tensor_parallel_size * prefill_context_parallel_size * data_parallel_size > 1`` and a platform
    of :data:`EPLB_PLATFORMS`, which gained XPU in 0.31.0; redundant experts need EPLB; PCP with
    DP is refused in the releases of :data:`PCP_REFUSES_DP`) and P/layer.py (with EPLB, the
    physical experts must split evenly over the EP ranks, TP x PCP x DP of them).

    ``release``: the release the answer is for (``Catalog.release(env)``); its messages name it,
    and an unmodelled release is answered with the facts of the release standing in for it.
    ``origins``: field (``parallel.enable_eplb``) -> where it was given (:class:`Origin`;
    absent: not given, so a refused field is named as moe-oracle's flag). Each issue names the
    refused field as its input names it; the advice changes the other field where that one was
    given, else in the refused field's input (``add --ep``, ``add --enable-expert-parallel to the
    vllm serve line``, ``set $.parallel.use_ep: true in FILE``).
    """
    p = config.parallel
    world = p.world
    issues = []
    origins = origins or {}
    who, eplb_on = _who(release)

    def issue(field: str, message: str, value: Any, turn_on: str | None = None) -> None:
        origin = origins.get(field, FLAG)
        if turn_on is not None:
            message += f"; {_turn_on(turn_on, origins.get(turn_on, origin))}"
        issues.append(InputIssue(where_given(field, origin), message, value, None, origin.file, keyword="engine_refuses"))

    if p.enable_eplb:
        if not p.use_ep:
            issue("parallel.enable_eplb", f"{who} refuses EPLB without expert parallelism (\"enable_expert_parallel must be True to use EPLB\", vllm/config/parallel.py)", True, "parallel.use_ep")
        elif world <= 1:
            issue("parallel.enable_eplb", f"{who} refuses EPLB without tensor, prefill-context or data parallelism (\"EPLB requires tensor, prefill-context, or data parallelism\": TP={p.tp_size}, PCP={p.pcp_size}, DP={p.dp_size}; vllm/config/parallel.py)", True)
        platform = config.device.platform.value
        if platform not in eplb_on:
            names = " and ".join(", ".join(_PLATFORM_NAMES[x] for x in eplb_on).rsplit(", ", 1))
            issue("parallel.enable_eplb", f"{who} supports EPLB only on {names} devices, not {platform} (vllm/config/parallel.py)", platform)
        physical = config.num_experts + p.num_redundant_experts
        if p.use_ep and world > 1 and physical % world:
            issue("parallel.enable_eplb", f"{who} refuses EPLB when the {physical} physical experts ({config.num_experts} + {p.num_redundant_experts} redundant) do not split evenly over {world} EP ranks (P/layer.py)", physical)
    elif p.num_redundant_experts:
        issue("parallel.num_redundant_experts", f"{who} refuses {p.num_redundant_experts} redundant experts without EPLB (\"Either enable EPLB or unset num_redundant_experts\", vllm/config/parallel.py)", p.num_redundant_experts, "parallel.enable_eplb")
    if p.pcp_size > 1 and p.dp_size > 1 and release is not None and release.stand_in in SpecifierSet(PCP_REFUSES_DP):
        issue("parallel.pcp_size", f"{who} refuses prefill context parallelism with data parallelism (\"PCP does not support data parallelism yet.\": PCP={p.pcp_size}, DP={p.dp_size}; vllm/config/parallel.py)", p.pcp_size)
    return issues


_PLATFORM_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}


def no_effect_notes(config: Any, values: Mapping[str, Any], catalog: Any) -> tuple[str, ...]:
    """Inputs that change nothing for this selection, one sentence each.

    * ``--max-tokens`` when no rule of any table reads the tokens per call;
    * ``--ep`` at world size 1 (vLLM 0.29.0-0.34.0 P/config.py ``FusedMoEParallelConfig.make``:
      ``use_ep`` needs ``dp_size_ * pcp_size_ * tp_size_ > 1``);
    * more EP ranks than physical experts: those ranks hold no expert (P/expert_map_manager.py
      gives them ``global_num_experts // ep_size`` = 0).
    """
    notes = []
    if config.max_num_tokens is not None:
        if "max_num_tokens" not in catalog.fields_read:  # computed once per catalog view
            notes.append(f"max tokens per call ({config.max_num_tokens}) has no effect: no rule in these tables limits tokens per call")
    p = config.parallel
    if p.use_ep and p.world == 1:
        notes.append("expert parallelism has no effect at world size 1: vLLM turns EP on only when TP x PCP x DP > 1")
    ep = values.get("ep_size") or 1
    physical = config.num_experts + (p.num_redundant_experts if p.enable_eplb else 0)
    if ep > physical:
        notes.append(f"{ep} EP ranks for {physical} experts: {ep - physical} ranks hold no expert")
    return tuple(notes)
