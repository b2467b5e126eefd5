"""Which MoRI EP generation the ``mori`` all2all backend runs (vLLM 0.34.0+): EPv1 or EPv2.

vLLM 0.34.0 decides it once at start, in ``vllm/config/parallel.py resolve_mori_all2all``
(``_resolve_mori_ep_v2`` / ``_mori_epv2_unsupported_reason``), called only from
``RocmPlatform.check_and_update_config`` (``vllm/platforms/rocm.py``; ``validated_arch`` is
gfx950 or gfx1250, ``lsa_spans_hosts`` and ``not sdma_picks_epv1`` are gfx1250). Elsewhere
``ParallelConfig.mori_ep_v2`` stays ``None`` and ``FusedMoEParallelConfig`` reads it as false:
EPv1. ``VLLM_MORI_EP_V2`` unset prefers EPv2 and falls back to EPv1 on the first unsupported
reason; ``1`` keeps EPv2 whatever the reason (vLLM warns); ``0`` selects EPv1.

The result becomes the ``dispatch`` kind (``mori_epv1`` / ``mori_epv2``), which picks the
prepare/finalize entry (``prepare_finalize/others.yaml``).

Deliberate choices (docs/architecture.md, "MoRI EPv1 / EPv2"):

* Whether EP spans hosts: a deployment gives no host count. vLLM's own guess for a launch
  without ``--nnodes`` / ``--data-parallel-size-local`` is one host (``_ep_spans_hosts``:
  ``data_parallel_size_local`` defaults to ``data_parallel_size``), and so is ours; the answer
  says so in a note.
* The MoRI version: EPv2 needs MoRI >= 1.2.4 with its ``mori.cco`` and
  ``mori.ops.dispatch_combine_v2`` modules (``vllm/utils/import_utils.py
  mori_epv2_unavailable_reason``). A MoRI whose version is not known is assumed to have EPv2,
  and the answer says so; a version below 1.2.4 (or an unparsable one) cannot, as in vLLM.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from .envvars import _int_value
from .errors import ConfigError, InputIssue

__all__ = ["EPV2_ARCHES", "EPV2_MIN_VERSION", "MoriResolution", "per_tensor_fp8_activations", "resolve_mori_ep"]

EPV2_MIN_VERSION = "1.2.4"
"""vLLM 0.34.0 vllm/utils/import_utils.py MORI_EPV2_MIN_VERSION."""

EPV2_ARCHES = frozenset({"gfx950", "gfx1250"})
"""GPUs vLLM 0.34.0 validates EPv2 on (RocmPlatform.check_and_update_config validated_arch)."""

_PER_TENSOR_FP8 = frozenset({"fp8_static_tensor", "fp8_dynamic_tensor"})


@dataclass(frozen=True)
class MoriResolution:
    """What vLLM resolves for ``--all2all-backend mori``.

    Attributes:
        ep_v2: MoRI EPv2 (else EPv1).
        reason: why EPv2 is unsupported here (``None``: supported), vLLM's wording where it has one.
        forced: ``VLLM_MORI_EP_V2`` was set (1: EPv2 despite ``reason``; 0: EPv1).
        assumptions: what was assumed because the inputs do not say.
    """

    ep_v2: bool
    reason: str | None
    forced: bool
    assumptions: tuple[str, ...] = ()

    @property
    def dispatch(self) -> str:
        return "mori_epv2" if self.ep_v2 else "mori_epv1"

    def note(self) -> str:
        """One line for the answer: which generation, and why."""
        if self.forced:
            why = "VLLM_MORI_EP_V2=1" + (f", although EPv2 does not support {self.reason}" if self.reason else "") if self.ep_v2 else "VLLM_MORI_EP_V2=0"
        elif self.ep_v2:
            why = "VLLM_MORI_EP_V2 unset and EPv2 supports this deployment"
        else:
            why = f"VLLM_MORI_EP_V2 unset and EPv2 does not support {self.reason}"
        text = f"--all2all mori runs MoRI EP{'v2' if self.ep_v2 else 'v1'} ({why}; vLLM 0.34.0 vllm/config/parallel.py resolve_mori_all2all)"
        if self.assumptions:
            text += "; assumed: " + "; ".join(self.assumptions)
        return text


def per_tensor_fp8_activations(quant_method: str | None, weight_key: str | None, activation_key: str | None) -> bool:
    """Whether vLLM 0.34.0's ``_quantizes_activations_per_tensor`` holds for the checkpoint: ``fp8``
    without a weight block, ModelOpt FP8, compressed-tensors or Quark with per-tensor FP8 inputs."""
    if quant_method == "fp8":
        return weight_key is not None and "block" not in weight_key
    if quant_method in ("modelopt", "compressed-tensors", "quark"):
        return activation_key in _PER_TENSOR_FP8
    return False


def resolve_mori_ep(
    *,
    platform: str,
    gpu_arch: str | None,
    ep_v2_env: str | None,
    sdma_env: str | None,
    mori_installed: bool | None,
    mori_version: str | None,
    moe_backend: str,
    in_dtype: str,
    per_tensor_fp8: bool,
) -> MoriResolution:
    """Resolve EPv1 / EPv2 as vLLM 0.34.0 does for one deployment on one host.

    Args:
        platform: our platform value (only ``rocm`` resolves; elsewhere EPv1).
        gpu_arch: the ROCm gfx target.
        ep_v2_env, sdma_env: raw ``VLLM_MORI_EP_V2`` / ``MORI_ENABLE_SDMA`` (``None``: unset).
        mori_installed: whether MoRI is installed (``None``: the environment does not say).
        mori_version: the installed MoRI's version (``None``: not known).
        moe_backend: ``--moe-backend``.
        in_dtype: the model dtype.
        per_tensor_fp8: :func:`per_tensor_fp8_activations` of the checkpoint.
    """
    if platform != "rocm":
        return MoriResolution(False, "this platform (vLLM resolves mori only on ROCm, RocmPlatform.check_and_update_config; mori_ep_v2 stays unset, read as EPv1)", False)
    forced = ep_v2_env is not None
    if forced and not _env_bool(ep_v2_env):
        return MoriResolution(False, None, True)
    assumptions: list[str] = ["expert parallelism within one host (vLLM's guess without --nnodes / --data-parallel-size-local)"]
    reason = _mori_unavailable(mori_installed, mori_version, assumptions)
    gfx1250 = gpu_arch == "gfx1250"
    if reason is None and gpu_arch not in EPV2_ARCHES:
        reason = "this GPU (EPv2 is validated on gfx950 and gfx1250)"
    if reason is None and (sdma_env or "0").lower() in ("1", "true") and not gfx1250:
        reason = "MORI_ENABLE_SDMA=1 (SDMA is EPv1-only)"
    if reason is None and moe_backend == "aiter_mega_moe":
        reason = "moe_backend=aiter_mega_moe (MegaMoE runs on MoRI EPv1 shmem)"
    if reason is None and in_dtype != "bfloat16":
        reason = f"dtype={in_dtype} (EPv2 requires bfloat16)"
    if reason is None and per_tensor_fp8:
        reason = "per-tensor FP8 activations (AITER cannot quantize them after dispatch)"
    return MoriResolution(forced or reason is None, reason, forced, tuple(assumptions))


def _env_bool(raw: str) -> bool:
    """vLLM 0.34.0 vllm/envs.py maybe_convert_bool: ``bool(int(value))``; a value int() refuses
    makes vLLM fail at start, so it is bad input here."""
    value = _int_value(raw)
    if value is None:
        issue = InputIssue("--env VLLM_MORI_EP_V2", f"vLLM 0.34.0 reads VLLM_MORI_EP_V2 with bool(int(...)) (vllm/envs.py), so {raw!r} makes vLLM raise ValueError at start; use 1 or 0 (or leave it unset)", raw, {"enum": ["0", "1"]})
        raise ConfigError([issue], headline="bad --env VLLM_MORI_EP_V2")
    return bool(value)


def _mori_unavailable(installed: bool | None, version: str | None, assumptions: list[str]) -> str | None:
    if installed is None:
        assumptions.append(f"MoRI installed with EPv2 (>= {EPV2_MIN_VERSION}); the environment does not say")
        return None
    if not installed:
        return "this MoRI (MoRI is not installed; upgrade MoRI)"
    if version is None:
        assumptions.append(f"the installed MoRI has EPv2 (>= {EPV2_MIN_VERSION}); its version is not known")
        return None
    try:
        too_old = Version(version) < Version(EPV2_MIN_VERSION)
    except InvalidVersion:
        too_old = True
    return f"this MoRI (MoRI {version} is older than {EPV2_MIN_VERSION}; upgrade MoRI)" if too_old else None
