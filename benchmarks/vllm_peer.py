"""The peer of runtime_bench.py: vLLM's Triton fused-MoE kernel, launched as vLLM launches it.

Loaded from a folder that benchmarks/prepare_peer.py unpacked from the vLLM wheel (``fused_moe.py``
and the tuned ``configs/*.json``; nothing of vLLM's is in this repository). From ``fused_moe.py``
only the ``@triton.jit`` functions ``fused_moe_kernel`` and ``write_zeros_to_output`` are taken
(by ``ast``, written to a scratch module that imports nothing but Triton; the rest of the module
imports vLLM and is never run). What vLLM 0.33.0 does around the kernel is re-done here, from its
source (``vllm/model_executor/layers/fused_moe/fused_moe.py``):

* the tile config: the tuned file ``E={E},N={I},device_name={device}[,dtype=fp8_w8a8][,block_shape=[128,128]].json``
  (``get_config_file_name``; ``N`` is the intermediate size, ``w2.shape[2]``; ``device`` is the
  card's name with ``_`` for spaces, ``NVIDIA_H200`` for any name with an ``H200`` word:
  :func:`device_config_name`), the entry whose
  batch-size key is nearest the token count (``try_get_optimal_moe_config``); without a file,
  ``get_default_config``'s CUDA branches (bf16; fp8 block-wise);
* the launch (``invoke_fused_moe_triton_kernel``): grid ``cdiv(EM, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N)``
  with ``EM`` the padded sorted-id length, cut to ``T * top_k * BLOCK_SIZE_M`` when ``T < BLOCK_SIZE_M``;
  ``SWAP_AB`` for fp8 on SM 9.0 when ``BLOCK_SIZE_M < 64`` and ``BLOCK_SIZE_N >= 64``
  (``utils.enable_swap_ab``); ``BLOCK_SIZE_K <= 128`` with 128x128 blocks; no tensor descriptors
  (``VLLM_TRITON_USE_TD`` needs SM 10.0+ for its gather);
* the naive block assignment (no alignment) when ``T * top_k * 4 <= E`` (``_prepare_expert_assignment``);
* ``fused_experts_impl``: input quantization (fp8: 1x128 groups), alignment, GEMM1 into
  ``[T*K, 2I]`` bf16, activation, GEMM2 with the routing weights applied in float32 into
  ``[T*K, H]`` bf16, ``moe_sum`` over the top-k rows.

vLLM's compiled helpers are not available (they are CUDA extensions of vLLM's wheel, built for
its own torch) and are **stood in for by our own code**, each timed alone by runtime_bench.py:

* ``moe_align_block_size`` (CUDA op) -> our Triton count/place kernels (``route_layout`` with
  ``align = BLOCK_SIZE_M``) + a scatter of the pair ids into the sentinel-filled ``sorted_token_ids``
  + ``torch.searchsorted`` for the per-block expert ids (same three outputs, same sizes);
* ``silu_and_mul`` (CUDA op) -> our Triton activation kernel (float32 math, bf16 out); for fp8
  blocks, ``silu_and_mul`` + ``per_token_group_quant_fp8`` -> our fused Triton activation with
  1x128-group fp8 quantization (one kernel where vLLM runs two: favours the peer);
* the 1x128 input quantization (Triton in vLLM too) -> our ``quantize_rows(x, 128)``;
* ``moe_sum`` (CUDA op) -> ``torch.sum`` over the top-k axis (bf16 in, float32 accumulation, bf16 out).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import triton
import triton.language as tl

from moe_oracle.kernels import _triton_moe as ops
from moe_oracle.runtime.spec import LayerSpec
from moe_oracle.runtime.weights import MoEWeights
from moe_oracle.core.vocab import Activation

__all__ = ["PeerKernel", "VLLMTritonPeer", "config_file_name", "device_config_name", "load_peer"]

_JIT_FUNCTIONS = ("write_zeros_to_output", "fused_moe_kernel")


def device_config_name(device_name: str) -> str:
    """The ``device_name`` of vLLM's tuned config file names for a card ``torch.cuda.get_device_name()``
    reports: runs of whitespace and ``/`` as one ``_``, and ``NVIDIA_H200`` for every card with an
    ``H200`` word (vLLM 0.33.0 ``vllm/utils/platform_utils.py`` ``get_device_name_as_file_name``,
    ``P/fused_moe.py`` ``get_config_file_name``). ``"NVIDIA H100 80GB HBM3"`` -> ``"NVIDIA_H100_80GB_HBM3"``."""
    name = re.sub(r"[\s/]+", "_", device_name)
    return "NVIDIA_H200" if "H200" in name.split("_") else name


def config_file_name(num_experts: int, n: int, device_name: str, fp8: bool) -> str:
    """The tuned config file vLLM 0.33.0 looks up for a layer of ``num_experts`` experts and
    intermediate size ``n`` on the card ``torch.cuda.get_device_name()`` calls ``device_name``:
    ``E={E},N={N},device_name={...}[,dtype=fp8_w8a8,block_shape=[128,128]].json`` (``P/fused_moe.py``
    ``get_config_file_name`` with ``dtype`` ``fp8_w8a8`` and ``block_shape`` ``[128, 128]`` for the
    fp8 block layers, none for bf16)."""
    quant = ",dtype=fp8_w8a8,block_shape=[128,128]" if fp8 else ""
    return f"E={num_experts},N={n},device_name={device_config_name(device_name)}{quant}.json"


@dataclass(frozen=True)
class PeerKernel:
    """The loaded peer: its Triton kernel, its tuned configs folder and its manifest."""

    kernel: object
    configs: Path
    manifest: dict


def load_peer(folder: str | Path, *, float32_dots: bool = False) -> PeerKernel:
    """Take ``fused_moe_kernel`` (and the jit helper it calls) out of ``folder/fused_moe.py``.

    ``float32_dots`` (runtime_bench.py --dry-run only, under Triton's interpreter, which multiplies
    bf16 dot operands wrongly in 3.9): every ``tl.dot(x, y`` of the taken source becomes
    ``tl.dot(x.to(tl.float32), y.to(tl.float32)`` (exact products, as our kernels' ``EMULATE`` does);
    the manifest records it under ``"dry_run_patch"``.

    Raises:
        FileNotFoundError: the folder lacks ``fused_moe.py`` or ``configs/`` (run prepare_peer.py).
        ValueError: a function of :data:`_JIT_FUNCTIONS` is missing from the source.
    """
    folder = Path(folder)
    src_path = folder / "fused_moe.py"
    if not src_path.is_file() or not (folder / "configs").is_dir():
        raise FileNotFoundError(f"--peer {folder}: no fused_moe.py and configs/ there; run benchmarks/prepare_peer.py first")
    source = src_path.read_text()
    tree = ast.parse(source)
    found = {node.name: ast.get_source_segment(source, node) for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in _JIT_FUNCTIONS}
    missing = [n for n in _JIT_FUNCTIONS if n not in found]
    if missing:
        raise ValueError(f"{src_path}: no top-level function {missing[0]!r} (vLLM's layout changed?)")
    decorated = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in found:
            decorators = "".join(f"@{ast.get_source_segment(source, d)}\n" for d in node.decorator_list)
            decorated[node.name] = decorators + found[node.name]
    body = "import triton\nimport triton.language as tl\n\n\n" + "\n\n\n".join(decorated[n] for n in _JIT_FUNCTIONS) + "\n"
    patched = 0
    if float32_dots:
        body, patched = re.subn(r"tl\.dot\((\w+), (\w+)", r"tl.dot(\1.to(tl.float32), \2.to(tl.float32)", body)
        if not patched:
            raise ValueError(f"{src_path}: no tl.dot(x, y ...) to cast to float32 (vLLM's kernel changed?)")
    scratch = Path(tempfile.mkdtemp(prefix="vllm_peer_")) / "vllm_fused_moe_kernel.py"
    scratch.write_text(body)  # Triton's jit reads the function's source from its file
    spec = importlib.util.spec_from_file_location("vllm_fused_moe_kernel", scratch)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    manifest_path = folder / "PEER.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if patched:
        manifest = {**manifest, "dry_run_patch": f"{patched} tl.dot calls with float32 operands (Triton's interpreter)"}
    return PeerKernel(module.fused_moe_kernel, folder / "configs", manifest)


def _default_config(m: int, fp8_block: bool) -> dict:
    """vLLM 0.33.0 ``get_default_config``, CUDA branches: fp8 with 128x128 blocks, and bf16."""
    if fp8_block:
        if m <= 8:
            block_n, stages = 64, (4 if m <= 4 else 3)
        else:
            block_n, stages = 128, 3
        return {"BLOCK_SIZE_M": 16 if m <= 64 else 64, "BLOCK_SIZE_N": block_n, "BLOCK_SIZE_K": 128,
                "GROUP_SIZE_M": 1 if m <= 16 else 32, "num_warps": 4, "num_stages": stages}
    block_m = 16 if m <= 32 else 32 if m <= 96 else 64 if m <= 512 else 128
    return {"BLOCK_SIZE_M": block_m, "BLOCK_SIZE_N": 64 if m <= 64 else 128, "BLOCK_SIZE_K": 128 if m <= 64 else 64,
            "GROUP_SIZE_M": 1, "num_warps": 4 if m <= 128 else 8, "num_stages": 4 if m <= 32 else 3}


class VLLMTritonPeer:
    """vLLM 0.33.0's Triton fused-MoE experts for one layer (module docstring), on our weights.

    ``apply(x [T, H] bf16, topk_weights [T, K] fp32, topk_ids [T, K]) -> [T, H] bf16``;
    :meth:`parts` gives the stand-in alignment alone and the rest given its outputs.
    """

    def __init__(self, peer: PeerKernel, spec: LayerSpec, weights: MoEWeights, *, device: tuple[str, tuple[int, int]] | None = None) -> None:
        """``device``: ``(name, capability)`` the config lookup and ``SWAP_AB`` see instead of this CUDA
        device's (runtime_bench.py --dry-run: no CUDA device)."""
        self.peer, self.spec = peer, spec
        scheme = spec.quant.name
        if scheme not in ("unquantized", "fp8_block"):
            raise ValueError(f"the peer runs unquantized bf16 and fp8_block layers, not {scheme}")
        if spec.activation is not Activation.SILU or spec.has_bias:
            raise ValueError("the peer benchmark covers silu layers without biases")
        self.fp8 = scheme == "fp8_block"
        self.w13, self.w2 = weights.w13.contiguous(), weights.w2.contiguous()
        if not self.fp8:
            self.w13, self.w2 = self.w13.to(torch.bfloat16), self.w2.to(torch.bfloat16)
        self.s13 = weights.w13_scale.float().contiguous() if self.fp8 else None
        self.s2 = weights.w2_scale.float().contiguous() if self.fp8 else None
        e, _, n = self.w2.shape
        device_name, capability = device if device is not None else (torch.cuda.get_device_name(), torch.cuda.get_device_capability())
        name = config_file_name(e, n, device_name, self.fp8)
        path = peer.configs / name
        self.config_file = name if path.is_file() else None
        self._table = None
        if path.is_file():
            raw = json.loads(path.read_text())
            raw.pop("triton_version", None)
            self._table = {int(k): v for k, v in raw.items()}
        self.swap_ab_capable = tuple(capability) == (9, 0)

    def config(self, tokens: int) -> dict:
        """The tile config vLLM uses for ``tokens`` tokens (tuned file's nearest key, else its default)."""
        if self._table:
            return dict(self._table[min(self._table, key=lambda k: abs(k - tokens))])
        return _default_config(tokens, self.fp8)

    def config_source(self, tokens: int) -> str:
        if self._table:
            return f"{self.config_file}[{min(self._table, key=lambda k: abs(k - tokens))}]"
        return "default heuristic (no tuned file)"

    # ------------------------------------------------------------------ stand-ins for vLLM's C++ ops

    def align(self, topk_ids: torch.Tensor, block_m: int) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
        """``(sorted_token_ids, expert_ids, num_tokens_post_padded)`` as ``moe_align_block_size``
        returns them (or the naive assignment's, when vLLM takes it). Stand-in: our Triton kernels."""
        tokens, top_k = topk_ids.shape
        e = self.spec.num_local_experts
        numel = tokens * top_k
        if numel * 4 <= e:  # vLLM's naive block assignment: one block per (token, k) pair
            return None, topk_ids.reshape(-1).to(torch.int32), torch.full((1,), numel * block_m, dtype=torch.int32, device=topk_ids.device)
        padded = numel + e * (block_m - 1)
        if numel < e:
            padded = min(numel * block_m, padded)
        lay = ops.route_layout(topk_ids, 0, e, align=block_m)
        sorted_ids = torch.full((max(padded, lay.rows),), numel, dtype=torch.int32, device=topk_ids.device)
        sorted_ids.scatter_(0, lay.pair_row.long(), torch.arange(numel, dtype=torch.int32, device=topk_ids.device))
        sorted_ids = sorted_ids[:padded]
        blocks = triton.cdiv(padded, block_m)
        starts = torch.arange(blocks, dtype=torch.int32, device=topk_ids.device) * block_m
        expert_ids = torch.searchsorted(lay.offs, starts, right=True).clamp_(max=e - 1).to(torch.int32)
        return sorted_ids, expert_ids, lay.offs[-1:]

    # ------------------------------------------------------------------ the kernel launch

    def _gemm(self, a, a_scale, w, w_scale, c, topk_weights, sorted_ids, expert_ids, post_pad, mul_routed_weight, top_k, config):  # noqa: ANN001, ANN202
        # As invoke_fused_moe_triton_kernel: M = A's rows (T for GEMM1, T*K for GEMM2 with top_k 1).
        block_m, block_n = config["BLOCK_SIZE_M"], config["BLOCK_SIZE_N"]
        swap_ab = self.fp8 and self.swap_ab_capable and block_m < 64 and block_n >= 64
        num_tokens = a.size(0) * top_k
        if sorted_ids is not None:
            em = sorted_ids.size(0)
            if a.size(0) < block_m:
                em = min(em, a.size(0) * top_k * block_m)
        else:
            em = num_tokens * block_m
        cfg = dict(config)
        block_k = cfg.pop("BLOCK_SIZE_K")
        if self.fp8:
            block_k = min(block_k, 128)
        cfg.pop("SPLIT_K", None)
        grid = (triton.cdiv(em, block_m) * triton.cdiv(w.size(1), block_n),)
        self.peer.kernel[grid](
            a, w, c, None, a_scale, w_scale, topk_weights, sorted_ids, expert_ids, post_pad,
            w.size(1), w.size(2), em, num_tokens,
            a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(0), c.stride(1),
            a_scale.stride(0) if a_scale is not None else 0, a_scale.stride(1) if a_scale is not None else 0,
            w_scale.stride(0) if w_scale is not None else 0, w_scale.stride(2) if w_scale is not None else 0,
            w_scale.stride(1) if w_scale is not None else 0, 0, 0,
            128 if self.fp8 else 0, 128 if self.fp8 else 0,
            MUL_ROUTED_WEIGHT=mul_routed_weight, top_k=top_k, compute_type=tl.bfloat16,
            use_fp8_w8a8=self.fp8, use_int8_w8a8=False, use_int8_w8a16=False, per_channel_quant=False,
            naive_block_assignment=sorted_ids is None, HAS_BIAS=False, BLOCK_SIZE_K=block_k, SWAP_AB=swap_ab, USE_TD=False,
            SPLIT_K=1, **cfg,
        )

    def experts(self, x: torch.Tensor, topk_weights: torch.Tensor, aligned: tuple, tokens: int, top_k: int, config: dict) -> torch.Tensor:
        """Everything after the alignment: GEMM1, activation, GEMM2 (routing weights), top-k sum."""
        spec = self.spec
        sorted_ids, expert_ids, post_pad = aligned
        i2, hidden = self.w13.shape[1], self.w2.shape[1]
        rows = tokens * top_k
        if self.fp8:
            xq, xs = ops.quantize_rows(x, 128)
        else:
            xq, xs = x, None
        cache1 = torch.empty(rows, i2, dtype=torch.bfloat16, device=x.device)
        self._gemm(xq, xs, self.w13, self.s13, cache1, topk_weights, sorted_ids, expert_ids, post_pad, False, top_k, config)
        all_rows = torch.full((1,), rows, dtype=torch.int32, device=x.device)
        a2, a2s = ops.activation(cache1, spec.activation, all_rows, quant="group128" if self.fp8 else None)
        cache3 = torch.empty(rows, hidden, dtype=torch.bfloat16, device=x.device)
        self._gemm(a2, a2s, self.w2, self.s2, cache3, topk_weights, sorted_ids, expert_ids, post_pad, True, 1, config)
        return torch.sum(cache3.view(tokens, top_k, hidden), dim=1)

    def apply(self, x: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor) -> torch.Tensor:
        tokens, top_k = topk_ids.shape
        config = self.config(tokens)
        aligned = self.align(topk_ids, config["BLOCK_SIZE_M"])
        return self.experts(x.contiguous(), topk_weights.contiguous(), aligned, tokens, top_k, config)

    def parts(self, x: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor) -> dict[str, Callable[[], object]]:
        """``{"peer": whole call, "peer align": the alignment stand-in alone, "peer w/o align": the rest}``."""
        tokens, top_k = topk_ids.shape
        config = self.config(tokens)
        x, topk_weights = x.contiguous(), topk_weights.contiguous()
        aligned = self.align(topk_ids, config["BLOCK_SIZE_M"])
        return {
            "peer": lambda: self.apply(x, topk_weights, topk_ids),
            "peer align": lambda: self.align(topk_ids, config["BLOCK_SIZE_M"]),
            "peer w/o align": lambda: self.experts(x, topk_weights, aligned, tokens, top_k, config),
        }
