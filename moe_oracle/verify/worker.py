"""Worker process: answer deployments with one vLLM release and with our tables.

Run in an interpreter where that release is importable (its source tree first on
``PYTHONPATH``, and the packages its import chain needs installed)::

    python -m moe_oracle.verify.worker --release 0.33.0 --tree TREE --cases IN.jsonl --out OUT.jsonl

Each output line is ``{"case": ..., "vllm": Answer, "ours": Answer, "agree": bool}``;
the last line is ``{"summary": ...}`` with timings and the modules that failed to import.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings

from ..inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does
from .cases import Deployment

__all__ = ["main"]


def _quiet() -> None:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("TORCHINDUCTOR_DISABLE", "1")
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.worker", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", required=True, help="vLLM version the tree holds, e.g. 0.33.0")
    parser.add_argument("--tree", type=user_path, help="the release's source tree (the directory that contains vllm/)")
    parser.add_argument("--cases", type=user_path, required=True, help="JSON lines of deployments")
    parser.add_argument("--out", type=user_path, required=True, help="where to write JSON lines of answers")
    parser.add_argument("--tables", type=user_path, action="append", help="table directories (default: the shipped tables)")
    args = parser.parse_args(argv)
    _quiet()
    t0 = time.perf_counter()
    from .vllm_sim import Simulation
    from .vllm_side import VllmSide

    sim = Simulation(args.release, args.tree)
    theirs = VllmSide(sim)
    from ..core.loading import load_catalog
    from ..core.oracle import Oracle
    from .ours import OurSide

    oracle = Oracle(load_catalog(args.tables)) if args.tables else Oracle.default()
    ours = OurSide(args.release, oracle)
    t_import = time.perf_counter() - t0
    cases = [Deployment.from_dict(json.loads(line)) for line in args.cases.read_text().splitlines() if line.strip()]
    # Group by simulated state: re-simulating the platform costs more than a selection.
    order = sorted(range(len(cases)), key=lambda i: repr(cases[i].state_key()))
    t_vllm = t_ours = 0.0
    results: list[dict | None] = [None] * len(cases)
    for i in order:
        dep = cases[i]
        t1 = time.perf_counter()
        a = theirs.answer(dep)
        t2 = time.perf_counter()
        b = ours.answer(dep)
        t3 = time.perf_counter()
        t_vllm += t2 - t1
        t_ours += t3 - t2
        agree = a.agrees(b)
        record = {"case": dep.to_dict(), "vllm": a.to_dict(), "ours": b.to_dict(), "agree": agree}
        if not agree:
            record["why"] = ours.why(dep, a.experts)
        results[i] = record
    with args.out.open("w") as out:
        for r in results:
            out.write(json.dumps(r) + "\n")
        summary = {
            "release": args.release,
            "cases": len(cases),
            "import_s": round(t_import, 2),
            "vllm_s": round(t_vllm, 3),
            "ours_s": round(t_ours, 3),
            "import_errors": sim.import_errors,
        }
        out.write(json.dumps({"summary": summary}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
