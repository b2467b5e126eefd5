"""Check that every rank of a process group selected the same kernel.

A rank whose packages, environment variables or tables differ can select a
different kernel (or prepare/finalize) than its peers; collectives then hang or
combine garbage. :func:`check_ranks_agree` all-gathers each rank's
``decision.fingerprint()`` (kernel, prepare/finalize, tables hash, environment
fingerprint, requested backend) and raises when they differ, naming the ranks and
what each selected.

Works with gloo (CPU tensors) and NCCL (the current CUDA device). Strings travel
as UTF-8 bytes in uint8 tensors, so numpy is not needed (``all_gather_object`` needs it).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from .comm import all_gather_varlen, group_info
from .errors import RankDecision, RankDisagreementError

if TYPE_CHECKING:
    from ..core.decision import Decision

__all__ = ["check_ranks_agree", "gather_rank_decisions"]


def _device_for(group: Any) -> torch.device:
    backend = dist.get_backend(group)
    if backend == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def gather_rank_decisions(decision: "Decision", *, group: Any = None) -> tuple[RankDecision, ...]:
    """Every rank's (rank, fingerprint, kernel, prepare/finalize), by rank.

    A collective: every rank of ``group`` must call it. Without a process group it returns
    this process's record alone.
    """
    rank, world = group_info(group)
    mine = RankDecision(rank, decision.fingerprint(), decision.kernel, decision.prepare_finalize)
    if world == 1:
        return (mine,)
    payload = json.dumps([mine.fingerprint, mine.kernel, mine.prepare_finalize]).encode()
    data = torch.tensor(list(payload), dtype=torch.uint8, device=_device_for(group))
    gathered, sizes = all_gather_varlen(data, group)
    out = []
    start = 0
    for r, n in enumerate(sizes):
        fp, kernel, pf = json.loads(bytes(gathered[start : start + n].cpu().tolist()).decode())
        out.append(RankDecision(r, fp, kernel, pf))
        start += n
    return tuple(out)


def check_ranks_agree(decision: "Decision", *, group: Any = None) -> str:
    """Raise unless every rank of ``group`` holds a Decision with this fingerprint.

    Args:
        decision: this rank's Decision.
        group: the ranks that will run the layer together (default: the default group).

    Returns:
        The common fingerprint.

    Raises:
        RankDisagreementError: fingerprints differ; ``.ranks`` holds every rank's record and the
            message groups ranks by what they selected.
    """
    ranks = gather_rank_decisions(decision, group=group)
    if len({r.fingerprint for r in ranks}) > 1:
        raise RankDisagreementError(ranks)
    return ranks[0].fingerprint
