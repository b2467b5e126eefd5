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
