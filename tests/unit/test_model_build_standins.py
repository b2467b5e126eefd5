"""The model-construction stand-ins' source checks (moe_oracle/verify/model_build/standins.py): each
self-check reads vLLM's source and must fail when the internal it stands in for moves. Fed here
with small sources shaped like vLLM 0.34.0's and like the moves they guard against."""

from __future__ import annotations

import textwrap

import pytest

from moe_oracle.verify.model_build import standins
from moe_oracle.verify.sim_standins import conditional_imports

GUARDED = """
fi_ar_available = False
try:
    import flashinfer.comm as flashinfer_comm
    from flashinfer.comm.mnnvl import TorchDistBackend
    fi_ar_available = hasattr(flashinfer_comm, "allreduce_fusion")
except ImportError:
    pass
"""


@pytest.mark.parametrize(("source", "guarded"), [
    (GUARDED, True),  # vllm/distributed/device_communicators/flashinfer_all_reduce.py, 0.29.0-0.34.0
    (GUARDED.replace("ImportError", "(ImportError, RuntimeError)"), True),
    ("import flashinfer.comm as c\n", False),  # unguarded: the stand-in's ImportError would escape
    (GUARDED.replace("ImportError", "ValueError"), False),
    ("if x:\n    from flashinfer.comm import trtllm_ar\n", False),
    ("import flashinfer.gemm\n", True),  # not the module stood in for
])
def test_flashinfer_comm_stand_in_needs_vllm_to_catch_import_error(source, guarded):
    assert standins._flashinfer_comm_import_guarded(source) is guarded


WARMUP = '''
def _register_sm90_bf16x3_warmup(self) -> None:
    vllm_config = get_current_vllm_config_or_none()
    if vllm_config is None:
        return
    from x import _SM90_BF16X3_ROUTER_GEMM_KERNEL
    _SM90_BF16X3_ROUTER_GEMM_KERNEL.register_warmup(K=self.weight.shape[1], E=self.weight.shape[0])
'''


@pytest.mark.parametrize(("source", "sets_state"), [
    (WARMUP, False),  # vLLM 0.34.0 P/router/gate_linear.py: a local name and a call only
    (WARMUP + "    self.allow_bf16x3_router_gemm = False\n", True),
    (WARMUP + "    global _KERNELS\n", True),
])
def test_router_gemm_warmup_stand_in_refuses_a_method_that_sets_state(source, sets_state):
    assert standins._warmup_sets_state(textwrap.indent(textwrap.dedent(source), "    ")) is sets_state


def test_the_reload_list_names_every_conditional_pf_import_of_0_34():
    source = """
if current_platform.is_cuda_alike():
    if has_mori():
        from .prepare_finalize.mori import MoriPrepareAndFinalize
        from .prepare_finalize.mori_epv2 import MoriEPv2PrepareAndFinalize
    if has_new_thing():
        from .prepare_finalize.new import NewPrepareAndFinalize
"""
    names = conditional_imports(source)
    assert names - set(standins._CONDITIONAL_PF_NAMES) == {"NewPrepareAndFinalize"}


MAKE_PARALLEL_CONFIG = '''
def make_parallel_config(tp_size, dp_size, pcp_size, is_sequence_parallel, parallel_config):
    tp_size_ = tp_size if tp_size is not None else get_tensor_model_parallel_world_size()
    dp_size_ = dp_size if dp_size is not None else get_dp_group().world_size
    pcp_size_ = pcp_size if pcp_size is not None else get_pcp_group().world_size
    return FusedMoEParallelConfig.make(tp_size_=tp_size_, pcp_size_=pcp_size_, dp_size_=dp_size_)
'''


@pytest.mark.parametrize(("source", "reads"), [
    (MAKE_PARALLEL_CONFIG, True),  # vLLM 0.29.0-0.34.0 P/layer.py
    (MAKE_PARALLEL_CONFIG.replace("get_pcp_group().world_size", "parallel_config.prefill_context_parallel_size"), False),
    (MAKE_PARALLEL_CONFIG.replace("get_pcp_group().world_size", "1"), False),
])
def test_pcp_stand_in_needs_the_layer_to_read_the_pcp_group(source, reads):
    assert standins._reads_pcp_group(source) is reads


def test_group_stand_ins_span_pcp(monkeypatch):
    import sys
    import types

    ps = types.ModuleType("vllm.distributed.parallel_state")
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setitem(sys.modules, "vllm.distributed", types.ModuleType("vllm.distributed"))
    monkeypatch.setitem(sys.modules, "vllm.distributed.parallel_state", ps)
    manager = standins.install_groups(2, 4, True, pcp=2)
    # vLLM 0.29.0-0.34.0 parallel_state.initialize_model_parallel: EP over DP x PCP x TP.
    assert (ps._PCP.world_size, ps._EP.world_size, ps._EPLB.world_size, ps._WORLD.world_size, manager.world_size) == (2, 16, 16, 16, 16)
