"""The simulation's self-check fails loudly when a vLLM release moves what it touches.

Each case builds :class:`moe_oracle.verify.vllm_sim.Simulation` for vLLM 0.33.0 in the vLLM
environment (``$MOE_ORACLE_VLLM_ENV``), checks that the untouched simulation fits, then plants
one stale internal (a module still holding an original optional-package probe, a probe function
that moved, a platform object swapped behind the simulation's back, FlashInfer's toolchain lookups
reading this machine again) and requires ``self_check``
to name it. Deselected by default (marker ``differential``).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from moe_oracle.verify.run import RELEASES

pytestmark = pytest.mark.differential

RELEASE = RELEASES[-1]

# Runs inside the vLLM environment; prints the self-check problems before and after the plant.
_SCRIPT = r"""
import json, sys, types
from moe_oracle.verify.worker import _quiet
_quiet()
from moe_oracle.verify.vllm_sim import Simulation
sim = Simulation(sys.argv[1], None)
before = sim.self_check()
plant = sys.argv[2]
if plant == "stale_probe":
    # A module imported after the rebinding that kept vLLM's own _has_module.
    original = next(iter(sim._probe_originals.values()))[0]
    stale = types.ModuleType("vllm._stale_probe_holder")
    stale.has_module = original
    sys.modules["vllm._stale_probe_holder"] = stale
elif plant == "moved_probe":
    import vllm.utils.import_utils as iu
    del iu._has_module
elif plant == "platform_swapped":
    import vllm.platforms as platforms
    platforms._current_platform = object()
elif plant == "tool_lookup_restored":
    # FlashInfer's nvcc/ninja lookups reading this machine again instead of the declared tools.
    import shutil
    import vllm.utils.flashinfer as fi
    fi.shutil = shutil
print(json.dumps({"before": before, "after": sim.self_check()}))
"""



@pytest.mark.parametrize(
    ("plant", "expected"),
    [
        ("stale_probe", "vllm._stale_probe_holder.has_module still holds an original optional-package probe"),
        ("moved_probe", "vllm.utils.import_utils._has_module is gone"),
        ("platform_swapped", "vllm.platforms._current_platform is not the installed platform object"),
        ("tool_lookup_restored", "vllm.utils.flashinfer.shutil is not the host-tool stand-in"),
    ],
)
def test_self_check_names_what_moved(vllm_env, plant, expected):
    proc = subprocess.run(
        [str(vllm_env.python), "-c", _SCRIPT, RELEASE, plant],
        env={**os.environ, "PYTHONPATH": vllm_env.pythonpath(RELEASE)},
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["before"] == [], f"the untouched simulation does not fit vLLM {RELEASE}: {result['before']}"
    assert any(problem.startswith(expected) for problem in result["after"]), result["after"]
