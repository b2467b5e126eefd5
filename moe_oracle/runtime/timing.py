"""Wall time of a callable: median of N calls after warm-up (CUDA events on GPU).

On CUDA each call is bracketed by ``torch.cuda.Event(enable_timing=True)`` records and the
device is synchronized once per call, so launch overhead is included but host
scheduling between calls is not. On CPU ``time.perf_counter`` brackets each call.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

__all__ = ["measure_ms", "median"]


def _progress(total: int, desc: str, enabled: bool):  # noqa: ANN202 - tqdm or None
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, delay=1.0, leave=False)


def measure_ms(
    fn: Callable[[], object],
    *,
    device: torch.device,
    warmup: int = 3,
    iters: int = 10,
    progress: bool = False,
    desc: str = "timing",
    budget_s: float | None = None,
    min_iters: int = 3,
) -> tuple[float, ...]:
    """Milliseconds per call of ``fn`` for ``iters`` calls after ``warmup`` untimed ones.

    Args:
        fn: the work; its result is discarded.
        device: where it runs (CUDA: events; otherwise ``perf_counter``).
        warmup, iters: untimed and timed calls.
        progress: show a tqdm bar (imported lazily; only drawn when the loop lasts over 1 s).
        budget_s: stop early once the calls so far took this long (seconds), keeping at least
            one warm-up and ``min_iters`` timed calls: slow kernels (the CPU reference) then
            cost a few calls, not ``warmup + iters``.

    Returns:
        The ``iters`` per-call times, in ms; take ``statistics.median`` of them.
    """
    bar = _progress(warmup + iters, desc, progress)
    cuda = device.type == "cuda"
    times: list[float] = []
    spent_ms = 0.0
    try:
        for i in range(warmup + iters):
            if budget_s is not None and spent_ms > budget_s * 1e3:
                if i < warmup:
                    warmup = i  # the warm-up calls so far were enough
                elif len(times) >= min_iters:
                    break
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize(device)
                elapsed = start.elapsed_time(end)
            else:
                t0 = time.perf_counter()
                fn()
                elapsed = (time.perf_counter() - t0) * 1e3
            spent_ms += elapsed
            if i >= warmup:
                times.append(elapsed)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return tuple(times)


def median(values: tuple[float, ...]) -> float:
    """Median of :func:`measure_ms` times (ms).

    >>> median((3.0, 1.0, 2.0))
    2.0
    """
    return float(statistics.median(values))
