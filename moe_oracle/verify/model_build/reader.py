"""Read every fused-MoE layer a vLLM release built (worker side: imports vLLM).

A layer is a ``RoutedExperts`` module (vLLM 0.29.0-0.33.0 ``P/routed_experts.py``; the
``FusedMoE`` factory returns a ``MoERunner`` holding it and the router). Per layer the record
holds what the release's own objects say; nothing is derived from the checkpoint here:

* ``prefix`` (the layer name vLLM registered), ``index`` (the first integer after ``layers.``,
  else the trailing integer of the MTP prefix), ``role`` (``target`` | ``draft``).
* From ``moe_config`` (``FusedMoEConfig``): ``num_experts`` (global, physical), ``num_logical_experts``,
  ``num_local_experts``, ``top_k``, ``hidden_size`` (``hidden_dim``, after any all2all padding),
  ``intermediate_per_partition``, ``activation`` (``MoEActivation`` value), ``swiglu_alpha/beta/limit``,
  ``situ_beta``/``situ_linear_beta``, ``has_bias``, ``in_dtype``, ``router_logits_dtype``,
  ``routing_method`` (``RoutingMethodType`` name), ``has_hash_routing`` (0.29.0-0.30.0: from the
  router's hash table, :func:`_hash_routed`), ``require_decomposed``.
* From the router (the runner's ``router``): its class, ``scoring_func``, ``renormalize``,
  ``use_grouped_topk``, ``num_expert_group``, ``topk_group``, ``routed_scaling_factor``,
  ``correction_bias`` (an ``e_score_correction_bias`` is present).
* From the quant method: its class, the ``QuantKey`` constants it holds (by vLLM constant name),
  the backend enum it selected, the experts class it selected.
* ``prepare_finalize``: the class ``maybe_make_prepare_finalize`` returns for the layer's
  ``FusedMoEConfig`` and the method's ``FusedMoEQuantConfig`` (``allow_new_interface=True``,
  ``use_monolithic`` from the experts class, as the releases' ``make_*_moe_kernel`` call it),
  with the process-group pieces of :mod:`.standins` (and the loaded-weight names of
  :mod:`.unloaded`, listed in ``loaded_names_bound``); or the exception it raised.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, Callable

from .all2all_standin import retype_ep_manager
from .unloaded import quant_config_with_loaded_names

__all__ = ["read_layers", "BACKEND_ATTRS", "install_selector_recorder", "prepare_finalize_of"]

P = "vllm.model_executor.layers.fused_moe"
Q = "vllm.model_executor.layers.quantization"

BACKEND_ATTRS = ("wna16_backend", "wna16_moe_backend", "int8_backend", "w4a8_backend", "mxfp4_backend", "nvfp4_backend", "mxfp8_backend", "fp8_backend", "unquantized_backend", "backend", "moe_backend")

_ROUTER_ATTRS = ("scoring_func", "renormalize", "use_grouped_topk", "num_expert_group", "topk_group", "routed_scaling_factor")


def _enum_name(value: Any) -> Any:
    if value is None:
        return None
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


def _dtype(value: Any) -> str | None:
    return None if value is None else str(value).replace("torch.", "")


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)[:80]


def _index(prefix: str) -> int | None:
    m = re.search(r"layers\.(\d+)", prefix)
    if m:
        return int(m.group(1))
    nums = re.findall(r"\.(\d+)\.", prefix + ".")
    return int(nums[-1]) if nums else None


def describe_key(key: Any) -> str:
    """A QuantKey that is no ``quant_utils`` constant, as ``dtype/static|dynamic/group_shape``
    (e.g. a TP-refined FP8 block ``float8_e4m3fn/static/(64, 128)``)."""
    scale = getattr(key, "scale", None)
    if scale is None:
        return repr(key)[:80]
    shape = getattr(scale, "group_shape", None)
    shape_t = tuple(shape) if shape is not None else None
    return f"{_dtype(getattr(key, 'dtype', None))}/{'static' if getattr(scale, 'static', False) else 'dynamic'}/{shape_t}"


class _KeyNames:
    """QuantKey object -> the ``quant_utils`` constant name (``kFp8Static128BlockSym``)."""

    def __init__(self) -> None:
        qu = importlib.import_module(f"{Q}.utils.quant_utils")
        self.cls = getattr(qu, "QuantKey", None)
        self.by_value: list[tuple[Any, str]] = [(v, k) for k, v in vars(qu).items() if k.startswith("k") and self.cls is not None and isinstance(v, self.cls)]

    def name(self, key: Any) -> str:
        for v, k in self.by_value:
            if v is key:
                return k
        for v, k in self.by_value:
            try:
                if v == key:
                    return k
            except Exception:  # noqa: BLE001
                pass
        return describe_key(key)

    def keys_of(self, method: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.cls is None:
            return out
        for attr, value in sorted(vars(method).items()):
            if isinstance(value, self.cls):
                out[attr] = self.name(value)
        return out


_IMPLIED_WEIGHT_KEY = {
    "select_mxfp4_moe_backend": "kMxfp4Static",
    "select_deepseek_v4_mxfp4_moe_backend": "kMxfp4Static",
    "select_mxfp8_moe_backend": "kMxfp8Static",
}
"""Selectors that take no ``weight_key`` (vLLM 0.29.0-0.34.0 ``P/oracle/mxfp4.py``,
``P/oracle/mxfp8.py``: the format is the selector's own) -> the weight key their name implies,
recorded as the call's ``weight_key`` (``weight_key_implied``: true). The unquantized selector
implies none."""

_SELECTOR_CALLS: dict[int, dict[str, Any]] = {}
"""id(FusedMoEConfig) -> the last selector call for it: selector name, weight_key, activation_key."""


def install_selector_recorder() -> int:
    """Wrap every ``select_*_moe_backend`` of the release (in every ``vllm.*`` module that bound
    it) so that the quant keys a quant method passes to its selector are recorded per layer
    (keyed by the layer's ``FusedMoEConfig``). The wrapper calls the original with the same
    arguments and returns its result unchanged. Returns how many bindings were wrapped.

    Where the keys come from: vLLM 0.29-0.33 quant methods build the weight/activation keys as
    locals of their constructor and pass them to the selector (e.g. 0.33.0 ``Q/fp8.py``
    ``Fp8MoEMethod.__init__``); they are not kept on the method.
    """
    import sys
    import types

    keys = _KeyNames()
    originals: dict[int, Any] = {}
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("vllm.model_executor") or not isinstance(mod, types.ModuleType):
            continue
        for attr, value in list(vars(mod).items()):
            if attr.startswith("select_") and attr.endswith("_moe_backend") and callable(value) and not getattr(value, "__moe_oracle_recorder__", False):
                originals.setdefault(id(value), value)
    wrappers: dict[int, Any] = {}
    for oid, original in originals.items():
        sig = inspect.signature(original)

        def make(original: Any = original, sig: Any = sig) -> Any:
            def recorder(*args: Any, **kwargs: Any) -> Any:
                try:
                    bound = sig.bind_partial(*args, **kwargs).arguments
                    config = bound.get("config", bound.get("moe_config", args[0] if args else None))
                    implied = None if "weight_key" in sig.parameters else _IMPLIED_WEIGHT_KEY.get(original.__name__)
                    _SELECTOR_CALLS[id(config)] = {
                        "selector": original.__name__,
                        "weight_key": keys.name(bound["weight_key"]) if bound.get("weight_key") is not None else implied,
                        "weight_key_implied": implied is not None,
                        "activation_key": keys.name(bound["activation_key"]) if bound.get("activation_key") is not None else None,
                    }
                except Exception:  # noqa: BLE001 - recording never changes what vLLM does
                    pass
                return original(*args, **kwargs)

            recorder.__moe_oracle_recorder__ = True  # type: ignore[attr-defined]
            recorder.__name__ = original.__name__
            recorder.__wrapped__ = original  # type: ignore[attr-defined]
            return recorder

        wrappers[oid] = make()
    n = 0
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("vllm") or not isinstance(mod, types.ModuleType):
            continue
        ns = vars(mod)
        for attr, value in list(ns.items()):
            w = wrappers.get(id(value))
            if w is not None and originals[id(value)] is value:
                ns[attr] = w
                n += 1
    return n


_POST_INIT_REFUSES = frozenset({"MoriEPv2PrepareAndFinalize"})
"""P/F classes whose ``post_init_setup`` refuses experts (vLLM 0.34.0 P/prepare_finalize/mori_epv2.py:
BF16 only, experts that take unquantized inputs, no per-tensor activation quantization); the
others' set up buffers or hooks on a live kernel and are not run."""


def prepare_finalize_of(moe: Any, method: Any, layer: Any, experts_cls: Any, input_dtype: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """``{"class", "error", "activation_format"}``: what the release's ``maybe_make_prepare_finalize`` builds for a layer
    (``class`` ``None`` with no error: it returned ``None``). Needs the process-group stand-ins of
    :mod:`.standins` installed. Shared with the selection tier (:mod:`moe_oracle.verify.vllm_side`).
    ``input_dtype``: quant config -> the ``input_dtype`` the caller's ``make_*_moe_kernel`` passes
    (only where the release's function takes it)."""
    a2a = importlib.import_module(f"{P}.all2all_utils")
    mk = importlib.import_module(f"{P}.modular_kernel")
    try:
        quant_config, bound = quant_config_with_loaded_names(method, layer)
    except Exception as exc:  # noqa: BLE001 - recorded: the P/F cannot be asked without it
        return {"class": None, "error": f"get_fused_moe_quant_config: {type(exc).__name__}: {exc}"[:200]}
    retype_ep_manager(getattr(moe.moe_parallel_config, "all2all_backend", None))
    params = inspect.signature(a2a.maybe_make_prepare_finalize).parameters
    kwargs: dict[str, Any] = {"moe": moe, "quant_config": quant_config}
    if "allow_new_interface" in params:
        kwargs["allow_new_interface"] = True
    monolithic = getattr(mk, "FusedMoEExpertsMonolithic", None)
    if input_dtype is not None and "input_dtype" in params:
        kwargs["input_dtype"] = input_dtype(quant_config)
    if "use_monolithic" in params:
        kwargs["use_monolithic"] = bool(monolithic is not None and isinstance(experts_cls, type) and issubclass(experts_cls, monolithic))
    try:
        pf = a2a.maybe_make_prepare_finalize(**kwargs)
    except Exception as exc:  # noqa: BLE001 - vLLM refusing to build the P/F (recorded)
        return {"class": None, "error": f"{type(exc).__name__}: {exc}"[:200]}
    fmt = getattr(pf, "activation_format", None) if pf is not None else None
    # make_moe_kernel refuses experts whose format is not a superset of the P/F's before it
    # builds them (vLLM 0.34.0 P/oracle/base.py), so post_init_setup is never reached then; the
    # caller reports the mismatch.
    if pf is not None and type(pf).__name__ in _POST_INIT_REFUSES and _serves(experts_cls, fmt):
        try:
            # FusedMoEKernel.__init__ ends with prepare_finalize.post_init_setup(fused_experts)
            # (vLLM 0.34.0 P/modular_kernel.py _post_init_setup): the experts built as the
            # release's make_*_moe_kernel builds a standard-format modular class.
            pf.post_init_setup(experts_cls(moe_config=moe, quant_config=quant_config))
        except Exception as exc:  # noqa: BLE001 - vLLM refusing to build the kernel (recorded)
            return {"class": None, "error": f"{type(pf).__name__}.post_init_setup: {type(exc).__name__}: {exc}"[:200]}
    fmt_value = getattr(fmt, "value", None)
    return {"class": type(pf).__name__ if pf is not None else None, "error": None,
            "activation_format": fmt_value[0] if isinstance(fmt_value, tuple) else fmt_value, "loaded_names_bound": bound}


def _serves(experts_cls: Any, pf_format: Any) -> bool:
    """Whether experts of class ``experts_cls`` take a P/F of activation format ``pf_format``: the
    release's ``FusedMoEActivationFormat.is_superset`` (0.34.0), else equal formats."""
    own = experts_cls.activation_format()
    superset = getattr(own, "is_superset", None)
    return bool(superset(pf_format)) if callable(superset) else own == pf_format


def _hash_routed(moe: Any, router: Any) -> bool:
    """``FusedMoEConfig.has_hash_routing`` (0.31.0+, P/layer.py: ``hash_indices_table is not
    None``). vLLM 0.29.0-0.30.0 build hash-routed layers too (DeepSeek-V4's ``DeepseekV4MoE``
    hands ``hash_indices_table`` to the router) but their ``FusedMoEConfig`` has no such field:
    there the router's own table answers (``FusedTopKBiasRouter._hash_indices_table``)."""
    if hasattr(moe, "has_hash_routing"):
        return bool(moe.has_hash_routing)
    return router is not None and getattr(router, "_hash_indices_table", None) is not None


def read_layers(model: Any, role: str) -> list[dict[str, Any]]:
    """One record per ``RoutedExperts`` in ``model`` (decoder order)."""
    routed_cls = importlib.import_module(P).RoutedExperts if hasattr(importlib.import_module(P), "RoutedExperts") else importlib.import_module(f"{P}.routed_experts").RoutedExperts
    keys = _KeyNames()
    routers: dict[int, Any] = {}
    for _, mod in model.named_modules():
        inner = vars(mod).get("_modules", {}).get("routed_experts")
        if inner is not None:
            routers[id(inner)] = vars(mod).get("router") or getattr(mod, "router", None)
    out = []
    for name, mod in model.named_modules():
        if not isinstance(mod, routed_cls):
            continue
        moe = mod.moe_config
        method = mod.quant_method
        prefix = getattr(mod, "layer_name", name)
        router = routers.get(id(mod))
        backend = next((getattr(method, a) for a in BACKEND_ATTRS if hasattr(method, a)), None)
        experts_cls = getattr(method, "experts_cls", None)
        rec: dict[str, Any] = {
            "prefix": prefix,
            "module": name,
            "index": _index(prefix),
            "role": role,
            "num_experts": moe.num_experts,
            "num_logical_experts": getattr(moe, "num_logical_experts", None),
            "num_local_experts": moe.num_local_experts,
            "top_k": moe.experts_per_token,
            "hidden_size": moe.hidden_dim,
            "intermediate_per_partition": moe.intermediate_size_per_partition,
            "activation": _plain(getattr(moe.activation, "value", moe.activation)),
            "swiglu_alpha": _plain(getattr(moe, "swiglu_alpha", None)),
            "swiglu_beta": _plain(getattr(moe, "swiglu_beta", None)),
            "swiglu_limit": _plain(getattr(moe, "swiglu_limit", None)),
            "situ_beta": _plain(getattr(moe, "activation_situ_beta", None)),
            "situ_linear_beta": _plain(getattr(moe, "activation_situ_linear_beta", None)),
            "has_bias": bool(getattr(moe, "has_bias", False)),
            "in_dtype": _dtype(moe.in_dtype),
            "router_logits_dtype": _dtype(getattr(moe, "router_logits_dtype", None)),
            "routing_method": _enum_name(getattr(moe, "routing_method", None)),
            "has_hash_routing": _hash_routed(moe, router),
            "require_decomposed": bool(getattr(moe, "require_decomposed_backend", False)),
            "router_class": type(router).__name__ if router is not None else None,
            "correction_bias": router is not None and getattr(router, "e_score_correction_bias", None) is not None,
            "quant_method": type(method).__name__,
            "quant_keys": keys.keys_of(method),
            "selector_call": _SELECTOR_CALLS.get(id(moe)),
            "backend": _enum_name(backend),
            "experts_class": experts_cls.__name__ if isinstance(experts_cls, type) else _plain(experts_cls),
            "all2all_backend": _plain(getattr(moe.moe_parallel_config, "all2all_backend", None)),
            "ep_size": getattr(moe.moe_parallel_config, "ep_size", None),
            "tp_size": getattr(moe.moe_parallel_config, "tp_size", None),
        }
        for attr in _ROUTER_ATTRS:
            rec[attr] = _plain(getattr(router, attr, None)) if router is not None else None
        rec["prepare_finalize"] = prepare_finalize_of(moe, method, mod, experts_cls)
        out.append(rec)
    return out
