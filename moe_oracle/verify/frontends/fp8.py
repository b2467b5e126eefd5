"""FP8 front ends: the quantization methods that call vLLM's FP8 MoE oracle (P/oracle/fp8.py).

* ``fp8``: ``Fp8Config(...).get_quant_method(layer, prefix)`` (Q/fp8.py): ``Fp8MoEMethod`` for a serialized FP8 checkpoint
  (0.34.0 on ROCm with ``VLLM_FP8_MOE_REQUANT=mxfp4`` and block weights: ``Fp8BlockExpertsAsMxfp4FusedMoE``, Q/online/fp8_requant.py)
  (``quant_method: fp8``). Its constructor builds the keys: per-tensor weights always
  (``kFp8StaticTensorSym``), activations static per-tensor or dynamic (per-tensor, or per-token
  under ``VLLM_BATCH_INVARIANT`` from 0.33.0); block weights refined to the TP shard (0.29.0+) or
  the shard padded to whole blocks for an explicit backend (0.31.0+), the refined block in the
  weight key; ``allow_vllm_cutlass=False``.
* ``compressed-tensors``: ``CompressedTensorsW8A8Fp8MoEMethod(weight_quant, input_quant, moe)``
  (Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w8a8_fp8.py), as
  ``CompressedTensorsMoEMethod.get_moe_method`` constructs it for ``_is_fp8_w8a8`` schemes: the
  checkpoint's strategies map to keys as they are (a dynamic per-tensor input becomes
  ``kFp8Dynamic128Sym``, any block weight ``kFp8Static128BlockSym``), ``allow_vllm_cutlass=True``.

* ``online_fp8_per_tensor``, ``online_fp8_per_block``, ``online_fp8_per_channel``: the online
  methods of ``--quantization fp8_per_tensor | fp8_per_block | fp8_per_channel`` on an unquantized
  checkpoint (vLLM 0.29.0-0.34.0 vllm/config/quantization.py ``_ONLINE_SHORTHANDS``, Q/online/base.py
  ``_ONLINE_MOE_METHODS``): ``Fp8PerTensorOnlineMoEMethod``, ``Fp8PerBlockOnlineMoEMethod``,
  ``Fp8PtpcOnlineMoEMethod`` (Q/online/fp8.py), built as ``OnlineQuantizationConfig.get_quant_method``
  builds them (``moe=`` from 0.30.0, the layer in 0.29.0). Their constructors choose the keys, the
  ``allow_vllm_cutlass`` flag and (PTPC) the backends they refuse after selection; the harness only
  checks that the weight key the release's method hands ``select_fp8_moe_backend`` is the
  deployment's (a spy on the module's name for it), so a front end can never be driven with a
  scheme its method does not have.

After selection each front end runs what the layer does next (:meth:`VllmSide.load`): the EPLB
refusal, the method's ``maybe_roundup_sizes`` and ``create_weights`` (whose block checks refuse a
shard the checkpoint blocks do not divide; the online methods check none).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..cases import Deployment
from . import NotDriven
from .layer import PREFIX, routed_experts_layer
from .nvfp4 import online_kwargs

Q = "vllm.model_executor.layers.quantization"

# Our activation key -> the compressed-tensors input strategy and dynamic flag that produce it.
_CT_INPUT: dict[str | None, tuple[str, bool] | None] = {
    "fp8_static_tensor": ("tensor", False),
    "fp8_dynamic_tensor": ("tensor", True),
    "fp8_dynamic_token": ("token", True),
    "fp8_static_token": ("token", False),
    "fp8_dynamic_group128": ("group", True),
}
_CT_WEIGHT: dict[str | None, str] = {
    "fp8_static_tensor": "tensor",
    "fp8_static_channel": "channel",
    "fp8_static_block128": "block",
}


def fp8_method(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """The MoE method ``Fp8Config(...).get_quant_method`` gives a serialized FP8 checkpoint.

    Static activations when the deployment's activation key is static per-tensor; the
    block shape from ``dep.block`` (``None``: per-tensor weights).

    Raises:
        NotDriven: a weight key an ``fp8`` checkpoint cannot have (per-channel, or none).
    """
    if dep.weight_key not in ("fp8_static_tensor", "fp8_static_block128"):
        raise NotDriven(f"an fp8 checkpoint has per-tensor or block weights, not {dep.weight_key}")
    fp8 = importlib.import_module(f"{Q}.fp8")
    static = dep.activation_key == "fp8_static_tensor"
    block = list(dep.block or (128, 128)) if dep.weight_key == "fp8_static_block128" else None
    config = fp8.Fp8Config(
        is_checkpoint_fp8_serialized=True,
        activation_scheme="static" if static else "dynamic",
        weight_block_size=block,
    )
    # Asked as the model asks it: Fp8Config.get_quant_method hands ROCm block-FP8 experts under
    # VLLM_FP8_MOE_REQUANT=mxfp4 to Fp8BlockExpertsAsMxfp4FusedMoE (0.34.0), which selects an MXFP4 backend.
    method = config.get_quant_method(routed_experts_layer(moe), PREFIX)
    side.load(dep, moe, method)
    if hasattr(method, "mxfp4_backend"):
        return method.mxfp4_backend, method.experts_cls
    return method.fp8_backend, method.experts_cls


def compressed_tensors(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``CompressedTensorsW8A8Fp8MoEMethod`` for a compressed-tensors W8A8 FP8 scheme.

    The weight is static and symmetric with the strategy of ``dep.weight_key`` (block: the
    ``block_structure`` of ``dep.block``); the input follows ``dep.activation_key``.

    Raises:
        NotDriven: keys no compressed-tensors W8A8 FP8 scheme has (weight-only: the MoE
            method dispatcher raises before any FP8 method exists, which is a refusal of
            ``get_moe_method``, not of this method).
    """
    try:
        from compressed_tensors.quantization import QuantizationArgs, QuantizationStrategy, QuantizationType
    except ImportError as exc:  # the environment lacks the compressed-tensors package
        raise NotDriven(f"compressed-tensors is not importable: {exc}") from None
    w = _CT_WEIGHT.get(dep.weight_key)
    a = _CT_INPUT.get(dep.activation_key)
    if w is None or a is None:
        raise NotDriven(f"no compressed-tensors W8A8 FP8 scheme has keys ({dep.weight_key}, {dep.activation_key})")
    mod = importlib.import_module(f"{Q}.compressed_tensors.compressed_tensors_moe.compressed_tensors_moe_w8a8_fp8")
    weight_args: dict[str, Any] = dict(num_bits=8, type=QuantizationType.FLOAT, symmetric=True, dynamic=False, strategy=QuantizationStrategy(w))
    if w == "block":
        weight_args["block_structure"] = list(dep.block or (128, 128))
    strategy, dynamic = a
    input_args: dict[str, Any] = dict(num_bits=8, type=QuantizationType.FLOAT, symmetric=True, dynamic=dynamic, strategy=QuantizationStrategy(strategy))
    if strategy == "group":
        input_args["group_size"] = 128
    method = mod.CompressedTensorsW8A8Fp8MoEMethod(QuantizationArgs(**weight_args), QuantizationArgs(**input_args), moe)
    side.load(dep, moe, method)
    return method.fp8_backend, method.experts_cls


# Front end -> (the online method's class in Q/online/fp8.py, the (weight, activation) keys of its
# checkpoint-free scheme as our side is told them: the method's own before any rewrite).
ONLINE_FP8: dict[str, tuple[str, tuple[str, str]]] = {
    "online_fp8_per_tensor": ("Fp8PerTensorOnlineMoEMethod", ("fp8_static_tensor", "fp8_dynamic_tensor")),
    "online_fp8_per_block": ("Fp8PerBlockOnlineMoEMethod", ("fp8_static_block128", "fp8_dynamic_group128")),
    "online_fp8_per_channel": ("Fp8PtpcOnlineMoEMethod", ("fp8_static_channel", "fp8_dynamic_token")),
}


def _online(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """Build the release's online FP8 MoE method of ``dep.front_end`` (see the module doc)."""
    name, scheme = ONLINE_FP8[dep.front_end]
    if (dep.weight_key, dep.activation_key) != scheme or dep.block is not None:
        raise NotDriven(f"{name} quantizes to {scheme} with no checkpoint block, not ({dep.weight_key}, {dep.activation_key}) block {dep.block}")
    mod = importlib.import_module(f"{Q}.online.fp8")
    cls = getattr(mod, name)
    real = mod.select_fp8_moe_backend
    asked: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("weight_key", args[1] if len(args) > 1 else None))
        return real(*args, **kwargs)

    mod.select_fp8_moe_backend = spy
    try:
        method = cls(**online_kwargs(cls, moe))
    finally:
        mod.select_fp8_moe_backend = real
    if not asked or asked[0] != side.quant_key(dep.weight_key):
        # Loud, not NotDriven: the method moved (another key, or no select_fp8_moe_backend call),
        # so the case must show as a disagreement rather than drop out of the comparison.
        raise AssertionError(f"harness: vLLM {side.sim.release} {name} selects with weight key {asked[0] if asked else '(none: select_fp8_moe_backend not called)'}, not {dep.weight_key} (ONLINE_FP8 is out of date)")
    side.load(dep, moe, method)
    return method.fp8_backend, method.experts_cls


def online_fp8_per_tensor(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``Fp8PerTensorOnlineMoEMethod``: ``--quantization fp8_per_tensor`` on an unquantized checkpoint."""
    return _online(side, dep, moe)


def online_fp8_per_block(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``Fp8PerBlockOnlineMoEMethod``: ``--quantization fp8_per_block`` on an unquantized checkpoint."""
    return _online(side, dep, moe)


def online_fp8_per_channel(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``Fp8PtpcOnlineMoEMethod``: ``--quantization fp8_per_channel`` on an unquantized checkpoint."""
    return _online(side, dep, moe)


def refused_at_load(dep: Deployment, backend: Any) -> str | None:
    """Where the FP8 oracle returned no backend (``Fp8MoeBackend.NONE``, no experts class, off CUDA
    and ROCm): what every in-tree FP8 method does with it at load, the release's own
    ``convert_to_fp8_moe_kernel_format`` (vLLM 0.29.0-0.34.0 P/oracle/fp8.py, called from
    ``process_weights_after_loading``), which picks the conversion by backend before it reads a
    weight (none is passed) and raises for NONE. Returns what it raised (the layer refused at
    load), or ``None``: another family's backend, or TPU, which vLLM runs out of its tree with
    methods of its own that the harness does not build.
    """
    if type(backend).__name__ != "Fp8MoeBackend" or dep.platform == "tpu":
        return None
    oracle = importlib.import_module("vllm.model_executor.layers.fused_moe.oracle.fp8")
    try:
        oracle.convert_to_fp8_moe_kernel_format(fp8_backend=backend, layer=None, w13=None, w2=None, w13_scale=None, w2_scale=None, w13_input_scale=None, w2_input_scale=None)
    except Exception as exc:  # noqa: BLE001 - the release refusing the layer at load
        return f"{type(exc).__name__}: {exc}"
    return None
