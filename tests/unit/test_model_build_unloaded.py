"""Stand-in 15 of the model-construction tier (moe_oracle/verify/model_build/unloaded.py): names
that only loading weights makes are bound to the created parameters, and nothing else is."""

from __future__ import annotations

import pytest

from moe_oracle.verify.model_build.unloaded import LOADED_NAMES, quant_config_with_loaded_names


class _Layer:
    """Like a torch Module: a missing attribute raises AttributeError naming it."""

    def __init__(self, **params: object) -> None:
        vars(self).update(params)


class _Nvfp4Method:
    """Reads the names compressed-tensors NVFP4's get_fused_moe_quant_config reads (vLLM 0.33.0)."""

    def get_fused_moe_quant_config(self, layer: _Layer) -> tuple:
        return (layer.w13_weight_scale_2, layer.w2_weight_scale_2, layer.w13_input_scale, layer.w2_input_scale)


def test_loaded_names_are_bound_to_the_created_parameters():
    created = {origin: f"param {origin}" for origin in LOADED_NAMES.values()}
    config, bound = quant_config_with_loaded_names(_Nvfp4Method(), _Layer(**created))
    assert config == tuple(created[LOADED_NAMES[n]] for n in ("w13_weight_scale_2", "w2_weight_scale_2", "w13_input_scale", "w2_input_scale"))
    assert bound == ["w13_weight_scale_2", "w2_weight_scale_2", "w13_input_scale", "w2_input_scale"]


def test_a_layer_that_has_the_loaded_names_is_left_alone():
    layer = _Layer(**{n: n for n in LOADED_NAMES}, **{o: "created" for o in LOADED_NAMES.values()})
    config, bound = quant_config_with_loaded_names(_Nvfp4Method(), layer)
    assert bound == [] and config == tuple(LOADED_NAMES)


def test_a_missing_name_without_its_created_parameter_still_raises():
    with pytest.raises(AttributeError, match="w13_weight_scale_2"):
        quant_config_with_loaded_names(_Nvfp4Method(), _Layer())


def test_a_name_outside_the_list_still_raises():
    class Other:
        def get_fused_moe_quant_config(self, layer: _Layer) -> object:
            return layer.w13_weight_scale

    with pytest.raises(AttributeError, match="w13_weight_scale"):
        quant_config_with_loaded_names(Other(), _Layer(w13_weight_global_scale=1))


class Fp8MoEMethod:
    """Named as vLLM's: per-tensor FP8 weights with static activations; its quant config multiplies
    the w13 weight scale by the input scale, as the FlashInfer CUTLASS alphas do (vLLM 0.34.0
    fused_moe/oracle/fp8.py make_fp8_moe_quant_config)."""

    block_quant = False
    weight_scale_name = "weight_scale"

    class quant_config:
        activation_scheme = "static"

    def get_fused_moe_quant_config(self, layer: object) -> object:
        return layer.w13_weight_scale * layer.w13_input_scale


def _fp8_layer(experts: int = 16) -> object:
    import torch

    layer = torch.nn.Module()
    layer.w13_weight_scale = torch.nn.Parameter(torch.empty(experts, 2, device="meta"), requires_grad=False)
    layer.w13_input_scale = torch.nn.Parameter(torch.empty(experts, device="meta"), requires_grad=False)
    layer.w2_input_scale = torch.nn.Parameter(torch.empty(experts, device="meta"), requires_grad=False)
    return layer


def test_per_tensor_fp8_scales_get_the_shapes_loading_leaves():
    pytest.importorskip("torch")
    layer = _fp8_layer()
    config, bound = quant_config_with_loaded_names(Fp8MoEMethod(), layer)
    # process_weights_after_loading: one weight scale per expert (max of w1, w3), one input scale.
    assert tuple(layer.w13_weight_scale.shape) == (16,) and layer.w13_input_scale.dim() == 0 and layer.w2_input_scale.dim() == 0
    assert tuple(config.shape) == (16,)
    assert bound == ["w13_weight_scale[max]", "w13_input_scale[max]", "w2_input_scale[max]"]


def test_other_methods_keep_the_broadcast_error():
    pytest.importorskip("torch")

    block = type("Fp8MoEMethod", (Fp8MoEMethod,), {"block_quant": True})  # block FP8: no per-tensor reshaping
    other = type("CompressedTensorsW8A8Fp8MoEMethod", (Fp8MoEMethod,), {})
    for method in (block(), other()):
        with pytest.raises(RuntimeError, match="broadcast"):
            quant_config_with_loaded_names(method, _fp8_layer())


def test_quark_per_tensor_fp8_is_reshaped_too():
    pytest.importorskip("torch")
    quark = type("QuarkW8A8Fp8MoEMethod", (Fp8MoEMethod,), {"weight_qscheme": "per_tensor", "static_input_scales": True})
    layer = _fp8_layer(8)
    _, bound = quant_config_with_loaded_names(quark(), layer)
    assert tuple(layer.w13_weight_scale.shape) == (8,) and bound == ["w13_weight_scale[max]", "w13_input_scale[max]", "w2_input_scale[max]"]
    per_channel = type("QuarkW8A8Fp8MoEMethod", (Fp8MoEMethod,), {"weight_qscheme": "per_channel", "static_input_scales": True})
    with pytest.raises(RuntimeError, match="broadcast"):
        quant_config_with_loaded_names(per_channel(), _fp8_layer())
