"""Normalization: MoEConfig + Environment -> flat field values with a source per field.

Derived fields follow vLLM ``FusedMoEParallelConfig.make`` and ``FusedMoEConfig``:

* the TP size is flattened across DP and PCP; EP is on when ``--enable-expert-parallel`` and
  ``tp * pcp * dp > 1``, and then ``ep_size = tp * pcp * dp`` and the MoE TP size is 1
  (vLLM 0.29.0-0.34.0 ``P/config.py`` ``FusedMoEParallelConfig.make``);
* all2all kernels run iff ``use_ep and (dp_size > 1 or pcp_size > 1)`` (``use_all2all_kernels``;
  its third condition, sequence parallelism, needs DP > 1, so it adds nothing);
* ``sequence_parallel`` is the ``is_sequence_parallel`` the model class passes to the MoE layer
  (``ParallelConfig.sequence_parallel``: vLLM 0.29.0-0.34.0 ``P/layer.py`` ``make_parallel_config``
  sets ``sp_size = tp_size`` with it): false without EP, TP > 1 and DP > 1, ``None`` (abstain)
  where the model class is not known;
* ``expert_placement`` is the placement the layer's experts get: the requested
  ``parallel.expert_placement_strategy``, or ``linear`` where vLLM falls back from ``round_robin``
  (vLLM 0.29.0-0.34.0 ``P/expert_map_manager.py`` ``determine_expert_placement_strategy``:
  :func:`moe_oracle.core.placement.placement_strategy`); ``linear`` without EP;
* the prepare/finalize kind (``dispatch``) is the all2all backend when all2all
  runs, ``allgather_reducescatter`` for DP without all2all (naive DP/EP; ``P/all2all_utils.py``
  ``maybe_make_prepare_finalize`` reads ``dp_size > 1`` alone, so PCP without EP keeps ``none``), else ``none``;
  ``passthrough`` (bound to MoE backends that dispatch and combine themselves) is its own
  dispatch in every topology;
* the activation format is ``batched_experts`` iff dispatch is DeepEP low-latency
  or NIXL-EP (``use_batched_activation_format``);
* ``intermediate_size_per_partition = intermediate_size // moe_tp_size``, and
  ``intermediate_divisible`` says whether that division is exact;
* ``weight_block`` is the checkpoint's FP8 weight block (``"128x128"`` when a block key has no
  ``weight_block_size``) and ``weight_block_aligned`` the ``create_weights`` check (vLLM 0.29-0.33
  Q/utils/fp8_utils.py ``validate_fp8_block_shape_moe``: the shard is a multiple of ``block_n``,
  and of ``block_k`` when the attention TP group has more than one rank); a quantization front
  end's block rule then refines or pads (:func:`apply_block_rules`).

Unknown inputs stay ``None`` so that predicates on them abstain.
"""

from __future__ import annotations

import math
from functools import cache
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .config import Device, MoEConfig
from .environment import ABSENT, HOST_TOOLS, Environment
from .envvars import EnvVarSpec, parse_env_value
from .fields import NONE
from .mori import MoriResolution, per_tensor_fp8_activations, resolve_mori_ep
from .padding import all2all_hidden_size
from .placement import placement_strategy
from .quant import QUANT_KEYS, QuantScheme, method_weight_key
from .trtllm_routing import fp8_block_groups_fit, grouped_routing_fits, groups_at_most_one
from .vocab import ActivationFormat, All2AllBackend, Platform, Source

if TYPE_CHECKING:
    from .catalog import BlockRule

__all__ = ["TABLE_QUANT_METHOD", "EnvVarSpec", "Normalized", "apply_block_rules", "mxfp4_selector", "normalize", "parse_env_value", "table_quant_method"]

_BLOCK_KEYS = frozenset({"fp8_static_block128", "fp8_static_block128_e8m0"})

_BATCHED_DISPATCH = frozenset({All2AllBackend.DEEPEP_LOW_LATENCY.value, All2AllBackend.NIXL_EP.value})
BATCHED_DISPATCH = _BATCHED_DISPATCH
"""Dispatch kinds whose prepare/finalize produces the batched-experts format (the format the
engine derives from the dispatch; compile.link compares each release's P/F with it)."""

# Quantization methods whose MoE layer falls back to MoeWNA16 when Marlin cannot serve it
# (vLLM 0.29.0-0.33.0 Q/auto_gptq.py and Q/auto_awq.py get_quant_method).
_MARLIN_OR_WNA16 = frozenset({"gptq", "awq"})
_ACT_ORDER_STRICT = frozenset({"group", "dynamic"})


def _partition(config: MoEConfig) -> int:
    """intermediate_size_per_partition (the MoE TP size is 1 with expert parallelism)."""
    par = config.parallel
    flat = par.world
    return config.intermediate_size // (1 if (par.use_ep and flat > 1) else flat)


def _marlin_moe_supported(config: MoEConfig, platform: Platform) -> bool | None:
    """vLLM ``check_moe_marlin_supports_config`` (Q/utils/marlin_utils.py, the same in 0.29.0-0.33.0).

    Callers allow tile padding except with runtime activation ordering (0.29.0 compressed-tensors
    and GPTQ pass ``not actorder``; 0.30.0+ pass ``True`` and refuse that ordering earlier); AWQ
    has no activation ordering and always allows it (0.29.0-0.34.0 Q/auto_awq.py
    ``allow_tile_padding=True``), whatever ``act_order`` says.
    ``None`` when the group size, or an ordering that decides the answer, is unknown.
    """
    if platform is Platform.ROCM:
        return False
    group = config.weight_group_size
    if group is None:
        return None
    ipp = _partition(config)
    hidden_ok = config.hidden_size % 128 == 0
    group_ok = group in (-1, 32, 64, 128)
    padded = hidden_ok and (group <= 0 or ipp % group == 0) and group_ok
    strict = hidden_ok and ipp % max(64, group) == 0 and group_ok
    if group <= 0 or TABLE_QUANT_METHOD.get(config.quant_method, config.quant_method) == "awq":
        return padded  # activation ordering is a no-op per channel (GPTQ normalizes desc_act off)
    if config.act_order is None:
        return padded if padded == strict else None
    return strict if config.act_order in _ACT_ORDER_STRICT else padded


@dataclass(frozen=True)
class Normalized:
    """Field values and their sources for one (config, environment) pair.

    ``values`` and ``sources`` are read-only mappings keyed by field name
    (``packages.<name>`` and ``env.<VAR>`` included for the names the catalog reads, ``tools.<name>`` for every host tool).
    ``lookup`` is the mapping behind ``values`` when it is a read-only view of a dict (the engine's
    check index reads it directly: a view adds a call to each of a few hundred lookups); never
    written to.
    """

    values: Mapping[str, Any]
    sources: Mapping[str, Source]
    lookup: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        from .records import jsonable

        sources = self.sources
        # ``_value_`` is the member's value without the ``Enum.value`` descriptor (the slow part here).
        return {k: {"value": jsonable(v), "source": sources[k]._value_} for k, v in sorted(self.values.items(), key=lambda kv: kv[0])}


# vLLM's name for the method an override class ends with -> the checkpoint format the tables key
# ``quant_method`` on (the value moe_oracle/checkpoint/quant_formats.py _fam gives such a
# checkpoint; vLLM 0.29.0-0.33.0 vllm/config/model.py _verify_quantization's overrides): a
# ModelOpt NVFP4/MXFP8/MIXED_PRECISION checkpoint ends as modelopt_fp4/_mxfp8/_mixed, an fp8
# DeepSeek-V4 one as deepseek_v4_fp8, GPTQ as auto_gptq, AWQ as auto_awq (awq_marlin). The
# names the engine reads itself stay: gpt_oss_mxfp4 (GptOssMxfp4Config: the generic MXFP4
# selector whatever the model type, mxfp4_selector), mxfp8 and nvfp4_per_token (online methods).
# vLLM 0.34.0's w4afp8 (Q/w4afp8.py W4AFP8Config) hands its routed experts to compressed-tensors'
# CompressedTensorsW4A8Fp8MoEMethod, so the compressed-tensors W4A8-FP8 rules hold for them.
TABLE_QUANT_METHOD: Mapping[str, str] = MappingProxyType({
    "modelopt_fp4": "modelopt", "modelopt_mxfp8": "modelopt", "modelopt_mixed": "modelopt",
    "deepseek_v4_fp8": "fp8", "auto_gptq": "gptq", "auto_awq": "awq", "awq_marlin": "awq",
    "w4afp8": "compressed-tensors",
})


def table_quant_method(name: str | None) -> str | None:
    """The ``quant_method`` the tables read for a layer whose config names ``name``: vLLM's name
    for an override's method becomes the checkpoint format it overrides (:data:`TABLE_QUANT_METHOD`),
    any other name is read as given.

    >>> table_quant_method("modelopt_fp4"), table_quant_method("gpt_oss_mxfp4"), table_quant_method(None)
    ('modelopt', 'gpt_oss_mxfp4', None)
    """
    return TABLE_QUANT_METHOD.get(name, name) if name is not None else None


# Quant methods whose MoE layer is vLLM's Mxfp4MoEMethod for MXFP4 experts (DeepSeek-V4 selector):
# Fp8Config with MXFP4-stored experts and the DeepSeek-V4/V4.1 checkpoint configs.
_MXFP4_DSV4_METHODS = frozenset({"fp8", "deepseek_v4_fp8", "deepseek_v41_fp8"})
# Quant methods that call the generic selector without the checkpoint's activation key.
_MXFP4_UNKEYED_METHODS = frozenset({"mxfp4", "gpt_oss_mxfp4", "compressed-tensors"})


_GPT_OSS_ROUTINGS = frozenset({"renormalize", "renormalize_naive", "default", "unspecified"})


def gpt_oss_ruled_out(activation: str | None, routing_method: str | None, has_hash_routing: bool = False, has_bias: bool | None = None) -> str | None:
    """Why a layer cannot be GPT-OSS's, or ``None`` when it may be.

    vLLM 0.33.0-0.34.0 ``gpt_oss.py MLPBlock`` always builds its experts with activation swigluoai, with
    expert biases, softmax scoring and renormalize=True (a softmax routing method); a hash-routed
    layer, a DeepSeek-V4/V3 or sigmoid routing, another activation or bias-free experts are not
    GPT-OSS's.

    >>> gpt_oss_ruled_out("silu", "deepseek_v4")
    'routing deepseek_v4 (GPT-OSS routes with softmax)'
    >>> gpt_oss_ruled_out("swigluoai", "renormalize", has_bias=True) is None
    True
    """
    if has_hash_routing:
        return "hash-routed layer (GPT-OSS has none)"
    if routing_method is not None and routing_method not in _GPT_OSS_ROUTINGS:
        return f"routing {routing_method} (GPT-OSS routes with softmax)"
    if activation is not None and activation != "swigluoai":
        return f"activation {activation} (GPT-OSS experts use swigluoai)"
    if has_bias is False:
        return "experts without biases (GPT-OSS experts carry biases)"
    return None


def mxfp4_selector(weight: str | None, quant_method: str | None, model_type: str | None, not_gpt_oss: str | None = None) -> str:
    """Which vLLM MXFP4 entry point selects the experts of a layer with ``weight`` weights.

    vLLM 0.29.0-0.33.0: ``quant_method: mxfp4`` resolves to ``GptOssMxfp4Config`` only for
    ``model_type: gpt_oss`` (``Q/mxfp4.py GptOssMxfp4Config.override_quantization_method``), whose
    ``GptOssMxfp4MoEMethod`` calls ``select_mxfp4_moe_backend`` (``generic``); any other model
    gets ``Mxfp4Config`` and ``Mxfp4MoEMethod``, which calls
    ``select_deepseek_v4_mxfp4_moe_backend`` (``deepseek_v4``), as do FP8 configs with
    MXFP4-stored experts. compressed-tensors MXFP4 is ``CompressedTensorsW4A4Mxfp4MoEMethod``
    (``compressed_tensors``: a fixed choice, the generic selector only for a b12x or MoE-EP
    request). Every other quant method (Quark OCP-MX, online MXFP4, INC) calls the generic
    selector; an unknown quant method is taken as the generic selector too (the ``direct``
    question). With ``quant_method: mxfp4`` and an unknown model type the checkpoint is taken as
    GPT-OSS (``generic``): the published checkpoints that declare ``mxfp4`` are GPT-OSS, other MXFP4
    models reach ``Mxfp4MoEMethod`` through another quant method (DeepSeek-V4's ``fp8``) or vLLM's
    rewrite at load (Kimi-K3's compressed-tensors). ``not_gpt_oss`` (:func:`gpt_oss_ruled_out`):
    the layer's own fields rule GPT-OSS out, so an unknown model type is not taken as GPT-OSS and
    ``Mxfp4Config`` (``deepseek_v4``) answers, as vLLM does for any model type but ``gpt_oss``.

    Returns:
        ``none`` (weights are not MXFP4), ``generic``, ``deepseek_v4`` or ``compressed_tensors``.
    """
    if weight != "mxfp4_static":
        return NONE
    if quant_method == "mxfp4":
        if model_type is None:
            return "deepseek_v4" if not_gpt_oss else "generic"
        return "deepseek_v4" if model_type != "gpt_oss" else "generic"
    if quant_method == "compressed-tensors":
        return "compressed_tensors"
    if quant_method in _MXFP4_DSV4_METHODS:
        return "deepseek_v4"
    return "generic"


@cache
def _defaults(cls: type) -> Mapping[str, Any]:
    """Field name -> dataclass default of ``cls`` (a pure function of the class: computed once)."""
    return MappingProxyType({f.name: f.default for f in dataclass_fields(cls)})


def normalize(config: MoEConfig, env: Environment, package_names: tuple[str, ...], env_vars: tuple[EnvVarSpec, ...], assumed: Mapping[str, str] | None = None) -> Normalized:
    """Flatten ``config`` and ``env`` into the field namespace of :mod:`moe_oracle.core.fields`.

    Args:
        config: the layer and deployment.
        env: packages and environment variables.
        package_names: canonical package names the catalog's predicates read.
        env_vars: the closed list of environment variables the catalog reads.
        assumed: package -> version to assume where ``env`` does not know the package (the
            versions a known engine release pins; source ``engine_pin``).
    """
    # Enum members are read through ``._value_``: ``.value`` is a descriptor call, and this runs
    # on every selection.
    dev = config.device
    par = config.parallel
    given = Source.USER_FLAG
    recorded = {p.field: p.source for p in config.provenance}

    defaults = _defaults(type(config))
    par_defaults = _defaults(type(par))

    def _source(_: MoEConfig, name: str, default: Source) -> Source:
        # A field nobody recorded that still holds its dataclass default is a default, not a user's value.
        if name not in recorded and name in defaults and getattr(config, name) == defaults[name]:
            return Source.DEFAULT
        return recorded.get(name, default)

    def _par_source(name: str) -> Source:
        """Per-field provenance (``parallel.tp_size``), else the block's, unless the field holds its default."""
        if f"parallel.{name}" in recorded:
            return recorded[f"parallel.{name}"]
        if getattr(par, name) == par_defaults[name]:
            return Source.DEFAULT
        return recorded.get("parallel", given)

    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}

    hw = _source(config, "device", Source.HARDWARE)
    values["platform"], sources["platform"] = dev.platform._value_, hw
    values["device_capability"], sources["device_capability"] = dev.capability if dev.platform is Platform.CUDA else NONE, hw
    values["gpu_arch"], sources["gpu_arch"] = dev.arch if dev.platform in (Platform.ROCM, Platform.XPU) else NONE, hw
    values["cpu_arch"], sources["cpu_arch"] = dev.arch if dev.platform is Platform.CPU else NONE, hw
    values["cpu_amx"], sources["cpu_amx"] = dev.cpu_amx if dev.platform is Platform.CPU else False, hw
    values["zentorch_moe"], sources["zentorch_moe"] = _zentorch_moe(dev, env), Source.DERIVED
    # No CPU of the hardware catalog has native AMX-FP8 (vLLM's torch.ops._C.cpu_has_amx_fp8).
    values["cpu_amx_fp8"], sources["cpu_amx_fp8"] = False, Source.DEFAULT

    q = config.quant
    qsrc = _source(config, "quant", given)
    named = TABLE_QUANT_METHOD.get(config.quant_method, config.quant_method)  # vLLM's name -> the format the tables read
    quant_method = named if named is not None else (NONE if q.weight is None else None)
    marlin = _marlin_moe_supported(config, dev.platform)
    moe_method = quant_method
    if quant_method in _MARLIN_OR_WNA16:
        moe_method = None if marlin is None else (quant_method if marlin else "moe_wna16")
    weight = method_weight_key(moe_method, q.weight, config.weight_group_size)
    if weight != q.weight:
        q = QuantScheme(weight, q.activation)
        qsrc = Source.DERIVED
    values["quant_scheme"], sources["quant_scheme"] = q.name, qsrc
    values["weight_quant"], sources["weight_quant"] = q.weight or NONE, qsrc
    values["activation_quant"], sources["activation_quant"] = q.activation or NONE, qsrc
    values["quant_family"], sources["quant_family"] = q.family._value_, Source.DERIVED
    values["quant_method"], sources["quant_method"] = quant_method, _source(config, "quant_method", given)
    not_gpt_oss = None
    if config.model_type is None:  # only fields somebody gave (or a checkpoint set) rule GPT-OSS out
        def _set(name: str) -> bool:
            return _source(config, name, given) is not Source.DEFAULT
        not_gpt_oss = gpt_oss_ruled_out(config.activation._value_ if _set("activation") else None, config.routing_method._value_ if _set("routing_method") else None,
                                        config.has_hash_routing, config.has_bias if _set("has_bias") else None)
    selector = mxfp4_selector(q.weight, named, config.model_type, not_gpt_oss)
    guessed = selector != NONE and (named is None or (named == "mxfp4" and config.model_type is None and not not_gpt_oss))
    values["mxfp4_selector"], sources["mxfp4_selector"] = selector, Source.DEFAULT if guessed else Source.DERIVED
    unkeyed = q.weight == "mxfp4_static" and named in _MXFP4_UNKEYED_METHODS
    values["selector_activation_quant"], sources["selector_activation_quant"] = NONE if unkeyed else (q.activation or NONE), Source.DERIVED
    values["moe_quant_method"], sources["moe_quant_method"] = moe_method, Source.DERIVED
    values["marlin_moe_supported"], sources["marlin_moe_supported"] = marlin, Source.DERIVED
    values["weight_group_size"], sources["weight_group_size"] = config.weight_group_size, _source(config, "weight_group_size", given)
    group = config.weight_group_size
    values["weight_groups_aligned"], sources["weight_groups_aligned"] = None if group is None else (group <= 0 or (config.hidden_size % group == 0 and _partition(config) % group == 0)), Source.DERIVED
    values["act_order"], sources["act_order"] = config.act_order, _source(config, "act_order", given)
    zero_point = config.weight_zero_point
    if zero_point is None and config.quant.weight is not None:
        zero_point = not QUANT_KEYS[config.quant.weight].symmetric
    values["weight_zero_point"], sources["weight_zero_point"] = zero_point, _source(config, "weight_zero_point", Source.DERIVED if config.weight_zero_point is None else given)

    values["activation"], sources["activation"] = config.activation._value_, _source(config, "activation", given)
    values["is_gated"], sources["is_gated"] = config.activation.is_gated, Source.DERIVED
    values["swiglu_clamp"], sources["swiglu_clamp"] = config.swiglu_limit is not None, _source(config, "swiglu_limit", Source.DERIVED)
    swiglu_set = any(getattr(config, n) is not None for n in ("swiglu_limit", "swiglu_alpha", "swiglu_beta"))
    values["swiglu_params"], sources["swiglu_params"] = swiglu_set, Source.DERIVED
    # Activation parameters are inputs a kernel may accept only at given values; a model that
    # sets none is the value 'none' (known), not an unknown input.
    for name in ("swiglu_alpha", "swiglu_beta", "situ_beta", "situ_linear_beta"):
        value = getattr(config, name)
        values[name], sources[name] = NONE if value is None else value, _source(config, name, Source.DEFAULT if value is None else given)
    values["routing_method"], sources["routing_method"] = config.routing_method._value_, _source(config, "routing_method", given)
    logits = config.router_logits_dtype or config.in_dtype
    values["router_logits_dtype"], sources["router_logits_dtype"] = logits._value_, _source(config, "router_logits_dtype", Source.DEFAULT if config.router_logits_dtype is None else given)
    values["in_dtype"], sources["in_dtype"] = config.in_dtype._value_, _source(config, "in_dtype", given)
    values["has_bias"], sources["has_bias"] = config.has_bias, _source(config, "has_bias", given)

    flat_tp = par.world
    use_ep = par.use_ep and flat_tp > 1
    ep_size = flat_tp if use_ep else 1
    moe_tp = 1 if use_ep else flat_tp
    use_all2all = use_ep and (par.dp_size > 1 or par.pcp_size > 1)
    all2all = par.all2all_backend._value_ if use_all2all else NONE
    if par.all2all_backend is All2AllBackend.PASSTHROUGH:
        # vLLM 0.32-0.33 use_passthrough_all2all: not gated on the all2all kernels; the experts
        # dispatch and combine themselves in every topology, TP-only included.
        dispatch = All2AllBackend.PASSTHROUGH._value_
    elif use_all2all and par.all2all_backend is All2AllBackend.MORI:
        dispatch = mori_resolution(config, env, quant_method, q.weight).dispatch
    elif use_all2all:
        dispatch = all2all
    elif par.dp_size > 1:
        dispatch = All2AllBackend.ALLGATHER_REDUCESCATTER._value_
    else:
        dispatch = NONE
    fmt = ActivationFormat.BATCHED_EXPERTS if dispatch in _BATCHED_DISPATCH else ActivationFormat.STANDARD

    for name in ("num_experts", "top_k", "hidden_size", "intermediate_size"):
        values[name], sources[name] = getattr(config, name), _source(config, name, given)
    # vLLM determine_expert_map over the physical experts (logical + EPLB redundant): the
    # first (physical % ep) ranks hold one more; without a rank, the largest share.
    physical = config.num_experts + (par.num_redundant_experts if use_ep else 0)
    if use_ep and par.ep_rank is not None:
        local = physical // ep_size + (1 if par.ep_rank < physical % ep_size else 0)
    else:
        local = -(-physical // ep_size)
    values["num_local_experts"], sources["num_local_experts"] = local, Source.DERIVED
    ispp = config.intermediate_size // moe_tp
    values["intermediate_size_per_partition"], sources["intermediate_size_per_partition"] = ispp, Source.DERIVED
    # What create_weights gets after the all2all kernels' round-up (core/padding.py, step 1).
    padded_hidden = all2all_hidden_size(config.hidden_size, config.in_dtype._value_, all2all)
    values["padded_hidden_size"], sources["padded_hidden_size"] = padded_hidden, Source.DERIVED
    values["padded_weight_groups_aligned"], sources["padded_weight_groups_aligned"] = None if group is None else (group <= 0 or (padded_hidden % group == 0 and ispp % group == 0)), Source.DERIVED
    values["intermediate_divisible"], sources["intermediate_divisible"] = config.intermediate_size % moe_tp == 0, Source.DERIVED
    if q.weight in _BLOCK_KEYS:
        bn, bk = config.weight_block_size or (128, 128)
        block_source = _source(config, "weight_block_size", given if config.weight_block_size else Source.DEFAULT)
        values["weight_block_size"], sources["weight_block_size"] = f"{bn}x{bk}", block_source
        values["weight_block"], sources["weight_block"] = f"{bn}x{bk}", block_source
        values["weight_block_aligned"], sources["weight_block_aligned"] = _block_aligned(ispp, bn, bk, par.tp_size), Source.DERIVED
    else:
        values["weight_block_size"], sources["weight_block_size"] = NONE, Source.DERIVED
        values["weight_block"], sources["weight_block"] = NONE, Source.DERIVED
        values["weight_block_aligned"], sources["weight_block_aligned"] = True, Source.DERIVED
    values["weight_block_pad_refused"], sources["weight_block_pad_refused"] = False, Source.DERIVED

    values["tp_size"], sources["tp_size"] = par.tp_size, _par_source("tp_size")
    values["dp_size"], sources["dp_size"] = par.dp_size, _par_source("dp_size")
    values["pcp_size"], sources["pcp_size"] = par.pcp_size, _par_source("pcp_size")
    values["moe_tp_size"], sources["moe_tp_size"] = moe_tp, Source.DERIVED
    values["ep_size"], sources["ep_size"] = ep_size, Source.DERIVED
    values["use_ep"], sources["use_ep"] = use_ep, _par_source("use_ep")
    values["all2all_backend"], sources["all2all_backend"] = par.all2all_backend._value_, _par_source("all2all_backend")
    values["all2all"], sources["all2all"] = all2all, Source.DERIVED
    values["dispatch"], sources["dispatch"] = dispatch, Source.DERIVED
    values["activation_format"], sources["activation_format"] = fmt._value_, Source.DERIVED
    values["enable_eplb"], sources["enable_eplb"] = par.enable_eplb, _par_source("enable_eplb")
    values["num_redundant_experts"], sources["num_redundant_experts"] = par.num_redundant_experts, _par_source("num_redundant_experts")
    values["experts_even_across_ep"], sources["experts_even_across_ep"] = not use_ep or (config.num_experts + par.num_redundant_experts) % ep_size == 0, Source.DERIVED
    # What the model class passes as is_sequence_parallel (P/layer.py make_parallel_config); only
    # EP with TP > 1 and DP > 1 can have it, else it is false whatever the door knew.
    values["sequence_parallel"], sources["sequence_parallel"] = (par.sequence_parallel if par.sequence_parallel_possible else False), Source.DERIVED
    values["expert_placement_strategy"], sources["expert_placement_strategy"] = par.expert_placement_strategy, _par_source("expert_placement_strategy")
    # The placement the layer's ExpertMapManager ends with (vLLM 0.34.0 MoERunner.expert_placement_strategy).
    values["expert_placement"], sources["expert_placement"] = placement_strategy(par, config.num_expert_group)[0], Source.DERIVED

    values["model_type"], sources["model_type"] = config.model_type, _source(config, "model_type", given)
    values["architecture"], sources["architecture"] = config.architecture, _source(config, "architecture", given)
    values["has_hash_routing"], sources["has_hash_routing"] = config.has_hash_routing, _source(config, "has_hash_routing", Source.DEFAULT)
    groups = config.num_expert_group
    values["expert_groups_divide"], sources["expert_groups_divide"] = groups is None or config.num_experts % groups == 0, Source.DERIVED
    values["trtllm_grouped_routing_fits"], sources["trtllm_grouped_routing_fits"] = grouped_routing_fits(config.num_experts, config.top_k, groups, config.topk_group), Source.DERIVED
    values["trtllm_fp8_block_groups_fit"], sources["trtllm_fp8_block_groups_fit"] = fp8_block_groups_fit(config.num_experts, config.top_k, groups, config.topk_group), Source.DERIVED
    values["expert_groups_at_most_one"], sources["expert_groups_at_most_one"] = groups_at_most_one(groups, config.topk_group), Source.DERIVED
    values["weight_group_size"], sources["weight_group_size"] = config.weight_group_size, _source(config, "weight_group_size", given)
    values["require_decomposed"], sources["require_decomposed"] = config.require_decomposed, _source(config, "require_decomposed", Source.DEFAULT)
    values["lora"], sources["lora"] = config.lora, _source(config, "lora", given)
    bi_raw = env.env_value("VLLM_BATCH_INVARIANT")
    env_by_name = {spec.name: spec for spec in env_vars} if bi_raw is not None else {}
    if config.batch_invariant:
        values["batch_invariant"], sources["batch_invariant"] = True, _source(config, "batch_invariant", given)
    elif bi_raw is not None and "VLLM_BATCH_INVARIANT" in env_by_name:
        values["batch_invariant"], sources["batch_invariant"] = parse_env_value(env_by_name["VLLM_BATCH_INVARIANT"], bi_raw), Source.ENV_VAR
    else:
        values["batch_invariant"], sources["batch_invariant"] = False, _source(config, "batch_invariant", Source.DEFAULT)
    values["max_num_tokens"], sources["max_num_tokens"] = config.max_num_tokens, _source(config, "max_num_tokens", given)
    values["moe_backend"], sources["moe_backend"] = config.moe_backend, _source(config, "moe_backend", Source.DEFAULT if config.moe_backend == "auto" else given)

    env_values, env_sources = _environment_fields(env, package_names, env_vars, assumed)
    values.update(env_values)
    sources.update(env_sources)
    return Normalized(MappingProxyType(values), MappingProxyType(sources), values)


def _environment_fields(env: Environment, package_names: tuple[str, ...], env_vars: tuple[EnvVarSpec, ...], assumed: Mapping[str, str] | None) -> tuple[dict[str, Any], dict[str, Source]]:
    """The ``packages.*`` and ``env.*`` fields: a function of the environment and the view alone,
    so derived once per (environment, view) and kept on the (frozen) environment, as an engine
    probes its packages once per process. The key holds the view's own objects, compared by identity."""
    memo = env.__dict__.setdefault("_normalized_fields", {})
    key = (id(package_names), id(env_vars), id(assumed))
    hit = memo.get(key)
    if hit is not None and hit[0] is package_names and hit[1] is env_vars and hit[2] is assumed:
        return hit[3], hit[4]
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for name in package_names:
        version = env.package_canonical(name)
        field = f"packages.{name}"
        if version is None and assumed and name in assumed:
            values[field], sources[field] = assumed[name], Source.ENGINE_PIN
        else:
            values[field], sources[field] = version, Source.PACKAGE
    for spec in env_vars:
        raw = env.env_value(spec.name)
        field = f"env.{spec.name}"
        if raw is None:
            values[field], sources[field] = spec.default, Source.DEFAULT
        else:
            values[field], sources[field] = parse_env_value(spec, raw), Source.ENV_VAR
    for name in HOST_TOOLS:  # unknown (None) unless declared or probed: a predicate on it abstains
        values[f"tools.{name}"], sources[f"tools.{name}"] = env.tool(name), Source.HOST_TOOL
    if len(memo) >= 8:  # one entry per view the environment is evaluated under: a handful
        memo.clear()
    memo[key] = (package_names, env_vars, assumed, values, sources)
    return values, sources


def _zentorch_moe(dev: Device, env: Environment) -> bool | None:
    """Whether vLLM's ``has_zentorch_op(["zentorch_fused_moe"])`` holds (vLLM 0.29.0-0.34.0
    vllm/model_executor/kernels/linear/zentorch_utils.py): only on ``ZenCpuPlatform``, which vLLM
    picks for an AMD Zen CPU with zentorch installed. The device model has no CPU vendor, so an
    x86_64 CPU without AMX stands for a Zen CPU (as the differential harness's simulated machine
    does: AMX is Intel's); ``None`` while the zentorch package or the CPU's AMX is unknown."""
    if dev.platform is not Platform.CPU or dev.arch != "x86_64" or dev.cpu_amx:
        return False
    version = env.package_canonical("zentorch")
    if version is ABSENT:
        return False
    return True if (version is not None or "zentorch" in env.unversioned) and dev.cpu_amx is False else None


def mori_resolution(config: MoEConfig, env: Environment, quant_method: str | None, weight_key: str | None) -> MoriResolution:
    """The MoRI EP generation vLLM 0.34.0 resolves for ``--all2all mori`` (:mod:`.mori`)."""
    version = env.package_canonical("mori")
    if version is ABSENT:
        installed: bool | None = False
    elif version is not None or "mori" in env.unversioned:
        installed = True
    else:
        installed = None
    return resolve_mori_ep(
        platform=config.device.platform._value_,
        gpu_arch=config.device.arch,
        ep_v2_env=env.env_value("VLLM_MORI_EP_V2"),
        sdma_env=env.env_value("MORI_ENABLE_SDMA"),
        mori_installed=installed,
        mori_version=version if isinstance(version, str) else None,
        moe_backend=config.moe_backend,
        in_dtype=config.in_dtype._value_,
        per_tensor_fp8=per_tensor_fp8_activations(quant_method, weight_key, config.quant.activation),
    )


def _block_aligned(ispp: int, block_n: int, block_k: int, tp_world: int) -> bool:
    # vLLM 0.29-0.33 Fp8MoEMethod / CompressedTensorsW8A8Fp8MoEMethod create_weights
    # (Q/utils/fp8_utils.py validate_fp8_block_shape_moe): the TP world is the attention TP group.
    return ispp % block_n == 0 and (tp_world == 1 or ispp % block_k == 0)


def apply_block_rules(norm: Normalized, rules: Sequence["BlockRule"], requested: Sequence[str] | None) -> Normalized:
    """The weight block the oracle selects with, after the first block rule whose ``when`` holds.

    Follows vLLM's FP8 front end (0.29-0.33 P/oracle/fp8.py ``refine_fp8_moe_block_shape``,
    0.31-0.33 ``resolve_fp8_moe_weight_block_shape`` and ``pad_tp_shard_to_weight_blocks``):

    * refine: when the MoE TP shard cuts a checkpoint block (``ispp % block_n`` or, with MoE TP,
      ``ispp % block_k``), the block becomes ``g x g`` with ``g = gcd(block_n, block_k, ispp,
      hidden)`` if ``g >= min_block``; create_weights then skips its block check;
    * pad: with an explicit backend (``requested`` not ``None``) none of which is ``refinable``,
      a square block that the MoE TP shard cuts is kept and the shard padded to whole blocks
      (``intermediate_size_per_partition`` rounded up), which needs block-aligned global dims,
      no EP, no LoRA and no bias (else ``weight_block_pad_refused``: vLLM raises ValueError);
    * key_block: the oracle sees this block whatever the checkpoint's (create_weights still
      checks the checkpoint's);
    * online (with key_block): the method quantizes the weights at load, so there is no
      checkpoint block: ``weight_block_size`` is ``none`` and ``weight_block_aligned`` holds
      (create_weights checks none; the method rounds the shard up to whole blocks after
      selection, :mod:`moe_oracle.core.padding`).

    Args:
        norm: values from :func:`normalize`.
        rules: the view's block rules, in table order.
        requested: backend ids an explicit ``moe_backend`` requests (``None`` for auto).

    Returns:
        ``norm`` itself when no rule applies, else a new :class:`Normalized`.
    """
    v = norm.values
    if v["weight_block"] == NONE or v["weight_block"] is None:
        return norm
    rule = next((r for r in rules if all(v.get(p.field) is not None and p.test(v[p.field]) for p in r.when)), None)
    if rule is None:
        return norm
    bn, bk = (int(x) for x in v["weight_block"].split("x"))
    ispp, moe_tp, hidden = v["intermediate_size_per_partition"], v["moe_tp_size"], v["hidden_size"]
    out = dict(v)
    if rule.key_block is not None:
        out["weight_block"] = f"{rule.key_block[0]}x{rule.key_block[1]}"
        if rule.online:
            out["weight_block_size"], out["weight_block_aligned"] = NONE, True
            return _replaced(norm, out, ("weight_block", "weight_block_size", "weight_block_aligned"))
        return _replaced(norm, out, ("weight_block",))
    refined = None
    if rule.refine and not (ispp % bn == 0 and (moe_tp == 1 or ispp % bk == 0)):
        g = math.gcd(bn, bk, ispp, hidden)
        refined = g if g >= rule.min_block else None
    if rule.pad and requested is not None:
        can_refine = refined is not None and any(b in rule.refinable for b in requested)
        if not can_refine and bn == bk and moe_tp != 1 and ispp % bn != 0:
            blocked = v["intermediate_size"] % bn or hidden % bn or v["ep_size"] != 1 or v["lora"] or v["has_bias"]
            if blocked:
                out["weight_block_pad_refused"] = True
                return _replaced(norm, out, ("weight_block_pad_refused",))
            out["intermediate_size_per_partition"] = -(-ispp // bn) * bn
            out["weight_block_aligned"] = _block_aligned(out["intermediate_size_per_partition"], bn, bk, v["tp_size"])
            return _replaced(norm, out, ("intermediate_size_per_partition", "weight_block_aligned"))
    if refined is None:
        return norm
    out["weight_block"] = f"{refined}x{refined}"
    out["weight_block_aligned"] = True
    return _replaced(norm, out, ("weight_block", "weight_block_aligned"))


def _replaced(norm: Normalized, values: dict[str, Any], changed: tuple[str, ...]) -> Normalized:
    sources = dict(norm.sources)
    for name in changed:
        sources[name] = Source.DERIVED
    return Normalized(MappingProxyType(values), MappingProxyType(sources), values)
