"""The all2all-manager stand-in of the model-construction tier (standins 2,
moe_oracle/verify/model_build/all2all_standin.py): answers rank 0's sizes, records set-up calls,
refuses every other read."""

from __future__ import annotations

import pytest

from moe_oracle.verify.model_build.all2all_standin import All2AllManagerStandIn, HandleStandIn, typed_class


def test_sizes_and_recorded_calls():
    m = All2AllManagerStandIn(8, 4)
    assert (m.world_size, m.rank, m.dp_world_size, m.max_num_ep_ranks) == (8, 0, 4, 8)
    h = m.get_handle({"num_experts": 64})
    assert isinstance(h, HandleStandIn) and h.kwargs == {"num_experts": 64} and m.handles == [h]
    with pytest.raises(RuntimeError, match="initialize was read"):
        m.initialize  # the plain stand-in (a CPU / XPU fallback manager) has no FlashInfer set-up


def test_a_typed_stand_in_records_the_set_up_its_prepare_finalize_makes():
    class FlashInferManager:  # what the release's manager class would be
        pass

    m = _typed(FlashInferManager)
    m.initialize(max_num_tokens=16, top_k=2)
    comm = m.get_communication(top_k=2)
    m.commit_staged_state()
    assert [c[0] for c in m.calls] == ["initialize", "get_communication", "commit_staged_state"] and comm.kwargs == {"top_k": 2}


def _typed(real: type) -> All2AllManagerStandIn:
    return typed_class(real)(4, 1)


def test_any_other_read_raises_even_from_a_typed_subclass():
    class RealManager:  # what a release's manager class adds must stay out of reach
        def prepare_workspace(self) -> None:
            raise AssertionError("the real method ran")

        buffer = "real attribute"

    m = _typed(RealManager)
    assert isinstance(m, RealManager) and m.world_size == 4
    for name in ("prepare_workspace", "buffer", "cpu_group"):
        with pytest.raises(RuntimeError, match=f"all2all manager: .{name} was read"):
            getattr(m, name)
    with pytest.raises(RuntimeError, match="handle.buffer"):
        m.get_handle({}).buffer


def test_a_typed_stand_in_answers_sizes_its_release_class_computes():
    class BufferedManager:  # as vLLM 0.34.0 NixlEPAll2AllManager.max_num_ep_ranks: a property over its buffer
        @property
        def max_num_ep_ranks(self) -> int:
            raise AssertionError("the real property ran")

    m = typed_class(BufferedManager)(8, 2)
    assert (m.max_num_ep_ranks, m.world_size, m.dp_world_size) == (8, 8, 2)
