#!/usr/bin/env python
"""Fetch the peer of runtime_bench.py: vLLM's Triton fused-MoE kernel and its tuned H200 and H100 configs.

Run on a machine that reaches the package index (the GPU machine reaches nothing)::

    python benchmarks/prepare_peer.py            # -> .peer/vllm-0.33.0/ (ignored by git)

Downloads the vLLM wheel with ``pip download --no-deps vllm==<version>`` (into ``--cache``, kept
for the next run) and unpacks from it only:

* ``vllm/model_executor/layers/fused_moe/fused_moe.py`` -- the module holding the ``@triton.jit``
  ``fused_moe_kernel`` (benchmarks/vllm_peer.py takes that function and the jit helpers it calls
  out of the source with ``ast``; the rest of the module, which imports vLLM, is never run);
* ``vllm/model_executor/layers/fused_moe/configs/E=*,device_name=NVIDIA_H200*.json`` and
  ``...NVIDIA_H100*.json`` -- the tuned tile configurations for the H200 and the H100 (vLLM's file
  names, unchanged; the peer takes those of the card it runs on, as vLLM does).

A ``PEER.json`` beside them records the version, the wheel's name and sha256 and the files taken.
Nothing of vLLM's is committed to this repository: ``.peer/`` is in .gitignore. The folder is
carried to the GPU machine with the device tool's ``carry``.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

KERNEL = "vllm/model_executor/layers/fused_moe/fused_moe.py"
CONFIGS = "vllm/model_executor/layers/fused_moe/configs/"
CONFIG_GLOBS = ("E=*,device_name=NVIDIA_H200*.json", "E=*,device_name=NVIDIA_H100*.json")


def download(version: str, cache: Path) -> Path:
    """The wheel of ``vllm==version`` in ``cache`` (downloaded with pip when missing)."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", f"vllm=={version}", "-d", str(cache)], check=True)
        found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not found:
        raise FileNotFoundError(f"pip download left no vllm-{version}-*.whl in {cache}")
    return found[0]


def unpack(wheel: Path, out: Path, version: str) -> dict:
    """Unpack the kernel module and the H200 and H100 configs of ``wheel`` into ``out``; the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    taken = []
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        if KERNEL not in names:
            raise FileNotFoundError(f"{wheel.name} has no {KERNEL}")
        (out / "fused_moe.py").write_bytes(zf.read(KERNEL))
        taken.append(KERNEL)
        cfg_dir = out / "configs"
        cfg_dir.mkdir(exist_ok=True)
        for name in names:
            if name.startswith(CONFIGS) and any(fnmatch.fnmatch(name[len(CONFIGS):], g) for g in CONFIG_GLOBS):
                (cfg_dir / name[len(CONFIGS):]).write_bytes(zf.read(name))
                taken.append(name)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    manifest = {"vllm": version, "wheel": wheel.name, "sha256": sha, "files": taken}
    (out / "PEER.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.33.0")
    parser.add_argument("--out", type=Path, default=None, help="default .peer/vllm-<version>")
    parser.add_argument("--cache", type=Path, default=Path(".cache/peer-wheels"), help="where the wheel is kept")
    args = parser.parse_args(argv)
    out = args.out or Path(".peer") / f"vllm-{args.version}"
    manifest = unpack(download(args.version, args.cache), out, args.version)
    print(f"{out}: {manifest['wheel']} (sha256 {manifest['sha256'][:16]}...): fused_moe.py and {len(manifest['files']) - 1} H200 and H100 configs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
