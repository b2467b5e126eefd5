"""Normalization: MoEConfig + Environment -> flat field values with a source per field.

Derived fields follow vLLM ``FusedMoEParallelConfig.make`` and ``FusedMoEConfig``:

* the TP size is flattened across DP; with EP, ``ep_size = tp * dp`` and the MoE
  TP size is 1 (``P/config.py``);
* all2all kernels run iff ``use_ep and dp_size > 1`` (``use_all2all_kernels``);
* the prepare/finalize kind (``dispatch``) is the all2all backend when all2all
  runs, ``allgather_reducescatter`` for DP without all2all (naive DP/EP), else ``none``;
* the activation format is ``batched_experts`` iff dispatch is DeepEP low-latency
  or NIXL-EP (``use_batched_activation_format``);
* ``intermediate_size_per_partition = intermediate_size // moe_tp_size``, and
  ``intermediate_divisible`` says whether that division is exact.

Unknown inputs stay ``None`` so that predicates on them abstain.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from types import MappingProxyType
from typing import Any, Mapping

from .config import MoEConfig
from .environment import Environment
from .envvars import EnvVarSpec, parse_env_value
from .fields import NONE
from .vocab import ActivationFormat, All2AllBackend, Platform, Source

__all__ = ["EnvVarSpec", "Normalized", "normalize", "parse_env_value"]

_BATCHED_DISPATCH = frozenset({All2AllBackend.DEEPEP_LOW_LATENCY.value, All2AllBackend.NIXL_EP.value})


@dataclass(frozen=True)
class Normalized:
    """Field values and their sources for one (config, environment) pair.

    ``values`` and ``sources`` are read-only mappings keyed by field name
    (``packages.<name>`` and ``env.<VAR>`` included for the names the catalog reads).
    """

    values: Mapping[str, Any]
    sources: Mapping[str, Source]

    def to_dict(self) -> dict[str, Any]:
        from .records import jsonable

        sources = self.sources
        # ``_value_`` is the member's value without the ``Enum.value`` descriptor (the slow part here).
        return {k: {"value": jsonable(v), "source": sources[k]._value_} for k, v in sorted(self.values.items(), key=lambda kv: kv[0])}


def normalize(config: MoEConfig, env: Environment, package_names: tuple[str, ...], env_vars: tuple[EnvVarSpec, ...], assumed: Mapping[str, str] | None = None) -> Normalized:
    """Flatten ``config`` and ``env`` into the field namespace of :mod:`moe_oracle.fields`.

    Args:
        config: the layer and deployment.
        env: packages and environment variables.
        package_names: canonical package names the catalog's predicates read.
        env_vars: the closed list of environment variables the catalog reads.
        assumed: package -> version to assume where ``env`` does not know the package (the
            versions a known engine release pins; source ``engine_pin``).
    """
    dev = config.device
    par = config.parallel
    given = Source.USER_FLAG
    recorded = {p.field: p.source for p in config.provenance}

    defaults = {f.name: f.default for f in dataclass_fields(type(config))}
    par_defaults = {f.name: f.default for f in dataclass_fields(type(par))}

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

    def put(name: str, value: Any, source: Source) -> None:
        values[name] = value
        sources[name] = source

    hw = _source(config, "device", Source.HARDWARE)
    put("platform", dev.platform.value, hw)
    put("device_capability", dev.capability if dev.platform is Platform.CUDA else NONE, hw)
    put("gpu_arch", dev.arch if dev.platform in (Platform.ROCM, Platform.XPU) else NONE, hw)
    put("cpu_arch", dev.arch if dev.platform is Platform.CPU else NONE, hw)
    put("cpu_amx", dev.cpu_amx if dev.platform is Platform.CPU else False, hw)

    q = config.quant
    qsrc = _source(config, "quant", given)
    put("quant_scheme", q.name, qsrc)
    put("weight_quant", q.weight or NONE, qsrc)
    put("activation_quant", q.activation or NONE, qsrc)
    put("quant_family", q.family.value, Source.DERIVED)
    put("quant_method", config.quant_method if config.quant_method is not None else (NONE if q.weight is None else None), _source(config, "quant_method", given))

    put("activation", config.activation.value, _source(config, "activation", given))
    put("is_gated", config.activation.is_gated, Source.DERIVED)
    put("swiglu_clamp", config.swiglu_limit is not None, _source(config, "swiglu_limit", Source.DERIVED))
    put("routing_method", config.routing_method.value, _source(config, "routing_method", given))
    logits = config.router_logits_dtype or config.in_dtype
    put("router_logits_dtype", logits.value, _source(config, "router_logits_dtype", Source.DEFAULT if config.router_logits_dtype is None else given))
    put("in_dtype", config.in_dtype.value, _source(config, "in_dtype", given))
    put("has_bias", config.has_bias, _source(config, "has_bias", given))

    flat_tp = par.tp_size * par.dp_size
    use_ep = par.use_ep and flat_tp > 1
    ep_size = flat_tp if use_ep else 1
    moe_tp = 1 if use_ep else flat_tp
    use_all2all = use_ep and par.dp_size > 1
    all2all = par.all2all_backend.value if use_all2all else NONE
    if use_all2all:
        dispatch = all2all
    elif par.dp_size > 1:
        dispatch = All2AllBackend.ALLGATHER_REDUCESCATTER.value
    else:
        dispatch = NONE
    fmt = ActivationFormat.BATCHED_EXPERTS if dispatch in _BATCHED_DISPATCH else ActivationFormat.STANDARD

    for name in ("num_experts", "top_k", "hidden_size", "intermediate_size"):
        put(name, getattr(config, name), _source(config, name, given))
    local = -(-config.num_experts // ep_size) + (par.num_redundant_experts if use_ep else 0)
    put("num_local_experts", local, Source.DERIVED)
    put("intermediate_size_per_partition", config.intermediate_size // moe_tp, Source.DERIVED)
    put("intermediate_divisible", config.intermediate_size % moe_tp == 0, Source.DERIVED)

    put("tp_size", par.tp_size, _par_source("tp_size"))
    put("dp_size", par.dp_size, _par_source("dp_size"))
    put("moe_tp_size", moe_tp, Source.DERIVED)
    put("ep_size", ep_size, Source.DERIVED)
    put("use_ep", use_ep, _par_source("use_ep"))
    put("all2all_backend", par.all2all_backend.value, _par_source("all2all_backend"))
    put("all2all", all2all, Source.DERIVED)
    put("dispatch", dispatch, Source.DERIVED)
    put("activation_format", fmt.value, Source.DERIVED)
    put("enable_eplb", par.enable_eplb, _par_source("enable_eplb"))
    put("num_redundant_experts", par.num_redundant_experts, _par_source("num_redundant_experts"))

    put("model_type", config.model_type, _source(config, "model_type", given))
    put("architecture", config.architecture, _source(config, "architecture", given))
    put("has_hash_routing", config.has_hash_routing, _source(config, "has_hash_routing", Source.DEFAULT))
    put("require_decomposed", config.require_decomposed, _source(config, "require_decomposed", Source.DEFAULT))
    put("lora", config.lora, _source(config, "lora", given))
    env_by_name = {spec.name: spec for spec in env_vars}
    bi_raw = env.env_value("VLLM_BATCH_INVARIANT")
    if config.batch_invariant:
        put("batch_invariant", True, _source(config, "batch_invariant", given))
    elif bi_raw is not None and "VLLM_BATCH_INVARIANT" in env_by_name:
        put("batch_invariant", parse_env_value(env_by_name["VLLM_BATCH_INVARIANT"], bi_raw), Source.ENV_VAR)
    else:
        put("batch_invariant", False, _source(config, "batch_invariant", Source.DEFAULT))
    put("max_num_tokens", config.max_num_tokens, _source(config, "max_num_tokens", given))
    put("moe_backend", config.moe_backend, _source(config, "moe_backend", Source.DEFAULT if config.moe_backend == "auto" else given))

    for name in package_names:
        version = env.package_canonical(name)
        if version is None and assumed and name in assumed:
            put(f"packages.{name}", assumed[name], Source.ENGINE_PIN)
        else:
            put(f"packages.{name}", version, Source.PACKAGE)
    for spec in env_vars:
        raw = env.env_value(spec.name)
        if raw is None:
            put(f"env.{spec.name}", spec.default, Source.DEFAULT)
        else:
            put(f"env.{spec.name}", parse_env_value(spec, raw), Source.ENV_VAR)

    return Normalized(MappingProxyType(values), MappingProxyType(sources))
