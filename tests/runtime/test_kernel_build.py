"""Composition rules, adapter resolution, and Decision -> kernel building.

Numerical tolerance where outputs are compared: FP32_ATOL (helpers.py).
"""

from __future__ import annotations

import pytest
import torch

from helpers import FP32_ATOL, fake_decision, inputs, small_spec
from moe_oracle import Device, MoEConfig, Oracle, ParallelConfig
from moe_oracle.kernels.reference import ReferenceBatchedExperts, ReferenceExperts, ReferenceMonolithicExperts, reference_moe
from moe_oracle.prepare_finalize.all_to_all import AllToAllModular, BatchedAllToAllModular
from moe_oracle.prepare_finalize.naive_dp_ep import NaiveDPEPMonolithic
from moe_oracle.prepare_finalize.no_dp_ep import NoDPEPModular, NoDPEPMonolithic
from moe_oracle.runtime.build import make_kernel, make_kernel_from_adapters, resolve_adapter, spec_for_decision
from moe_oracle.runtime.errors import AdapterContractError, AdapterImportError, CompositionError
from moe_oracle.runtime.interfaces import ExpertsBase, PrepareFinalizeBase
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.weights import make_random_weights
from moe_oracle.core.vocab import ActivationFormat, Interface


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle.default(view="runtime")


@pytest.fixture
def spec_and_weights():
    spec = small_spec()
    return spec, make_random_weights(spec, seed=1)


@pytest.mark.parametrize(
    "pf_cls, experts_cls, field",
    [
        (NoDPEPModular, ReferenceMonolithicExperts, "interface"),
        (NoDPEPMonolithic, ReferenceExperts, "interface"),
        (NaiveDPEPMonolithic, ReferenceExperts, "interface"),
        (BatchedAllToAllModular, ReferenceExperts, "activation_format"),
        (AllToAllModular, ReferenceBatchedExperts, "activation_format"),
    ],
)
def test_mixing_halves_is_a_composition_error(spec_and_weights, pf_cls, experts_cls, field):
    spec, w = spec_and_weights
    with pytest.raises(CompositionError) as err:
        FusedMoEKernel(pf_cls(spec), experts_cls(spec, w))
    assert err.value.field == field
    assert experts_cls.__name__ in str(err.value) and pf_cls.__name__ in str(err.value)


def test_monolithic_experts_need_router_logits_carried(spec_and_weights):
    spec, w = spec_and_weights

    class NoLogits(NoDPEPMonolithic):
        carries_router_logits = False

    with pytest.raises(CompositionError) as err:
        FusedMoEKernel(NoLogits(spec), ReferenceMonolithicExperts(spec, w))
    assert err.value.field == "carries_router_logits"


def test_forward_checks_its_routing_inputs(spec_and_weights):
    spec, w = spec_and_weights
    x, logits = inputs(spec, 3)
    modular = FusedMoEKernel(NoDPEPModular(spec), ReferenceExperts(spec, w))
    mono = FusedMoEKernel(NoDPEPMonolithic(spec), ReferenceMonolithicExperts(spec, w))
    with pytest.raises(ValueError, match="router_logits"):
        modular(x)
    with pytest.raises(ValueError, match="monolithic"):
        mono(x, topk_ids=torch.zeros(3, 2, dtype=torch.int64))
    # precomputed routing gives the same result as router logits
    from moe_oracle.runtime.routing import route

    tw, ti = route(logits, spec.routing)
    assert torch.allclose(modular(x, topk_weights=tw, topk_ids=ti), modular(x, logits), atol=FP32_ATOL)


def test_single_rank_prepare_finalize_refuses_an_ep_spec(spec_and_weights):
    spec, _ = spec_and_weights
    with pytest.raises(ValueError, match="ep_size"):
        NoDPEPModular(spec.for_rank(0, 2))


def test_resolve_adapter_errors_name_the_package():
    with pytest.raises(AdapterImportError) as err:
        resolve_adapter("vllm.model_executor.layers.fused_moe.experts.triton_moe:TritonExperts", packages=["vllm"])
    assert err.value.packages == ("vllm",) and "pip install vllm" in str(err.value)
    with pytest.raises(AdapterImportError) as err:
        resolve_adapter("deep_ep.buffer:Buffer")  # no declared packages: the known module -> package map
    assert err.value.packages == ("deep-ep",)
    with pytest.raises(AdapterImportError, match="has no class"):
        resolve_adapter("moe_oracle.kernels.reference:NoSuchExperts")
    with pytest.raises(AdapterImportError, match="module:Class"):
        resolve_adapter("moe_oracle.kernels.reference.ReferenceExperts")


def test_classes_of_other_runtimes_are_refused(spec_and_weights):
    spec, w = spec_and_weights
    with pytest.raises(AdapterContractError):
        make_kernel_from_adapters("collections:OrderedDict", "moe_oracle.prepare_finalize.no_dp_ep:NoDPEPModular", spec=spec, weights=w)


def test_every_moe_oracle_adapter_in_the_tables_resolves_and_matches_its_entry(oracle):
    """Conformance: each table entry with provider moe_oracle names a class of the right kind,
    interface and activation format (other providers' adapters are vLLM's and are not built here)."""
    catalog = oracle.catalog
    checked = 0
    for entry in list(catalog.experts) + list(catalog.prepare_finalize):
        if entry.provider != "moe_oracle":
            continue
        cls = resolve_adapter(entry.adapter)
        base = ExpertsBase if entry in catalog.experts else PrepareFinalizeBase
        assert issubclass(cls, base), entry.id
        assert cls.interface is entry.interface, entry.id
        assert cls.activation_format is entry.activation_format, entry.id
        if base is PrepareFinalizeBase:
            assert cls.carries_router_logits == entry.carries_router_logits, entry.id
        checked += 1
    assert checked >= 15


def _config(**kw) -> MoEConfig:  # noqa: ANN003
    base = dict(num_experts=8, top_k=2, hidden_size=32, intermediate_size=16, device=Device("cpu", arch="x86_64"), routing_method="renormalize", in_dtype="float32", moe_backend="reference")
    base.update(kw)
    return MoEConfig(**base)


def test_make_kernel_builds_the_decisions_winner(oracle):
    config = _config()
    decision = oracle.select(config)
    spec = spec_for_decision(decision)
    w = make_random_weights(spec, seed=2)
    kernel = make_kernel(decision, weights=w)
    row = decision.rows[decision.winner]
    assert type(kernel.experts).__name__ == row.entry.adapter.split(":")[1]
    assert type(kernel.prepare_finalize).__name__ == row.pf.adapter.split(":")[1]
    assert kernel.interface is row.entry.interface
    x, logits = inputs(spec, 5)
    assert torch.allclose(kernel(x, logits), reference_moe(x, logits, w, spec), atol=FP32_ATOL)


def test_make_kernel_for_a_gpu_decision_builds_torch_grouped_mm(oracle):
    decision = oracle.select(_config(device=Device("cuda", capability=90), in_dtype="bfloat16", moe_backend="torch_grouped_mm"))
    spec = spec_for_decision(decision)
    kernel = make_kernel(decision, weights=make_random_weights(spec))
    assert type(kernel.experts).__name__ == "TorchGroupedMMExperts" and kernel.interface is Interface.MODULAR


def test_spec_for_decision_follows_the_deployment(oracle):
    decision = oracle.select(_config(device=Device("cuda", capability=90), parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend="deepep_low_latency")))
    spec = spec_for_decision(decision, rank=1)
    assert (spec.ep_size, spec.ep_rank, spec.num_local_experts, spec.first_local_expert) == (2, 1, 4, 4)
    assert decision.rows[decision.winner].entry.activation_format is ActivationFormat.BATCHED_EXPERTS
    tp = oracle.select(_config(device=Device("cuda", capability=90), parallel=ParallelConfig(dp_size=2)))
    assert spec_for_decision(tp).intermediate_size == 8  # no EP: intermediate split over dp * tp


def test_an_engine_answer_names_vllm_classes_that_the_runtime_refuses_to_build():
    """The engine view answers with vLLM's classes: building one names the package (vllm) to install."""
    decision = Oracle.default().select(_config(device=Device("cuda", capability=90), moe_backend="auto", in_dtype="bfloat16"))
    row = decision.rows[decision.winner]
    assert decision.view == "engine" and row.entry.provider == "vllm", row.entry.id
    with pytest.raises(AdapterImportError) as err:
        make_kernel(decision, weights=make_random_weights(spec_for_decision(decision)))
    assert err.value.adapter == row.entry.adapter and err.value.packages == ("vllm",)


def test_make_kernel_without_a_winner_raises():
    decision = fake_decision("moe_oracle.kernels.reference:ReferenceExperts", "moe_oracle.prepare_finalize.no_dp_ep:NoDPEPModular")
    from dataclasses import replace

    spec = small_spec()
    with pytest.raises(ValueError, match="no kernel"):
        make_kernel(replace(decision, winner=None), weights=make_random_weights(spec), spec=spec)
