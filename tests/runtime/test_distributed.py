"""Prepare/finalize over torch.distributed vs the single-process reference: gloo on CPU with 2 and
4 spawned ranks, NCCL with 2 ranks when two CUDA devices exist and NCCL with 1 rank on one CUDA
device (``gpu`` marker).

NCCL with 1 rank: the process group is NCCL's and every tensor lives on the GPU, but comm.py sends
nothing at world size 1 (its helpers return their input), so there the prepare/finalize scenarios
check the dispatch logic on CUDA tensors, and ``raw_collectives`` calls the collectives comm.py uses
(with its dtypes and uneven splits) through NCCL directly. It is no substitute for 2 ranks.

One spawn per world size runs every scenario of dist_worker.py (spawning costs more than the
scenarios); the tests below assert on the recorded results. Ranks hold 5, 0, 3, 7 tokens (unequal,
one idle). Tolerances: FP32_ATOL for float32 layers (same sums, other order, partial sums added
across ranks); BF16_REL_TOL (normwise) for the bf16 torch_grouped_mm layer (helpers.py).
"""

from __future__ import annotations

import json
import socket

import pytest
import torch.multiprocessing as mp

import dist_worker
from helpers import BF16_REL_TOL, FP32_ATOL

pytestmark = pytest.mark.multiprocess


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cuda_devices() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


WORLDS = [
    pytest.param(("gloo", 2), id="gloo-2ranks"),
    pytest.param(("gloo", 4), id="gloo-4ranks"),
    pytest.param(("nccl", 1), id="nccl-1rank", marks=[pytest.mark.gpu, pytest.mark.skipif(_cuda_devices() < 1, reason="NCCL needs a CUDA device")]),
    pytest.param(("nccl", 2), id="nccl-2ranks", marks=[pytest.mark.gpu, pytest.mark.skipif(_cuda_devices() < 2, reason="NCCL with 2 ranks needs 2 CUDA devices")]),
]


@pytest.fixture(scope="module", params=WORLDS)
def world(request, tmp_path_factory) -> tuple[int, dict]:
    backend, size = request.param
    out = tmp_path_factory.mktemp(f"{backend}{size}")
    mp.spawn(dist_worker.run, args=(size, _free_port(), str(out), backend), nprocs=size, join=True)
    results = {r: json.loads((out / f"rank{r}.json").read_text()) for r in range(size)}
    return size, results


def _each_rank(world, scenario: str) -> list[dict]:
    size, results = world
    out = []
    for rank in range(size):
        res = results[rank][scenario]
        assert res["ok"], f"rank {rank}: {res.get('error')}\n{res.get('trace', '')}"
        out.append(res)
    return out


@pytest.mark.parametrize(
    "scenario",
    [
        "naive_dp_ep_modular",
        "naive_dp_ep_monolithic",
        "naive_dp_tensor_parallel",
        "all_to_all_standard",
        "all_to_all_batched",
        "all_to_all_batched_fixed_capacity",
        "all_to_all_fp8_block",
    ],
)
def test_distributed_layer_equals_single_process_reference(world, scenario):
    for rank, res in enumerate(_each_rank(world, scenario)):
        assert res["max_abs"] <= FP32_ATOL, (rank, res)
        if "batched_max_abs" in res:
            assert res["batched_max_abs"] <= FP32_ATOL, (rank, res)


def test_every_rank_gets_its_own_tokens_back(world):
    size, _ = world
    for scenario in ("naive_dp_ep_modular", "all_to_all_standard", "all_to_all_batched"):
        rows = [r["rows"] for r in _each_rank(world, scenario)]
        assert rows == dist_worker.TOKENS[size], scenario  # includes an idle rank (0 tokens) with 4 ranks


def test_bf16_grouped_mm_over_all_to_all(world):
    for rank, res in enumerate(_each_rank(world, "all_to_all_bf16_grouped_mm")):
        assert res["dtype"] == "torch.bfloat16"
        assert res["normwise"] <= BF16_REL_TOL, (rank, res)


def test_decisions_build_working_distributed_kernels(world):
    size, _ = world
    if size == 1:  # one DP rank dispatches nothing: vLLM (and the oracle) use no all2all backend
        expected = {f"{a}: reference_monolithic+no_dp_ep_monolithic_torch" for a in ("deepep_high_throughput", "deepep_low_latency", "allgather_reducescatter", "allgather_reducescatter (no EP)")}
    else:
        expected = {
            "deepep_high_throughput: reference+all_to_all_modular_torch",
            "deepep_low_latency: reference_batched+all_to_all_batched_torch",
            "allgather_reducescatter: reference_monolithic+naive_dp_ep_monolithic_torch",
            "allgather_reducescatter (no EP): reference_monolithic+naive_dp_ep_monolithic_torch",
        }
    for rank, res in enumerate(_each_rank(world, "decisions_build_distributed_kernels")):
        names = {k for k in res if k != "ok"}
        assert names == expected, names
        for name in names:
            assert res[name] <= FP32_ATOL, (rank, name, res[name])


def test_raw_collectives_move_what_comm_sends(world):
    for rank, res in enumerate(_each_rank(world, "raw_collectives")):
        assert res["checks"] and all(res["checks"].values()), (rank, res)


def test_ranks_agree_and_a_dissenting_rank_is_named(world):
    size, _ = world
    if size == 1:
        pytest.skip("a single rank has nobody to disagree with")
    for rank, res in enumerate(_each_rank(world, "agreement")):
        assert res["agreed"], rank
        assert res["raised"], f"rank {rank} did not detect the disagreement"
        kernels = {r: k for r, k, _ in res["ranks"]}
        assert kernels[1] == "torch_grouped_mm" and all(kernels[r] == "reference" for r in range(size) if r != 1)
        assert "ranks [1] selected torch_grouped_mm" in res["message"]
