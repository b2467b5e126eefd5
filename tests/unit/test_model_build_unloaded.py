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
