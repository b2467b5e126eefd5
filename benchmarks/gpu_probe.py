#!/usr/bin/env python
"""What this machine's torch and Triton accept, before the tests rely on it (prints; exits 1 on a failure).

* ``torch._grouped_mm`` (bf16) and ``torch._scaled_grouped_mm`` (fp8 row-wise) with group sizes
  that are not multiples of 16 and an empty group, against a per-group float32 loop: our layout
  passes unpadded group ends.
* One launch of each Triton kernel of ``moe_oracle/kernels/_triton_moe.py`` (compiles them).
"""

from __future__ import annotations

import sys

import torch
import triton


def _loop(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(a.shape[0], b.shape[2], dtype=torch.float32, device=a.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end].float() @ b[g].float()
        start = end
    return out


def main() -> int:
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), triton {triton.__version__}, {torch.cuda.get_device_name()} SM {torch.cuda.get_device_capability()}")
    ok = True
    sizes = [5, 0, 23, 1, 40, 3]
    offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
    m, k, n = int(sum(sizes)) + 7, 256, 384
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(len(sizes), n, k, device="cuda").to(torch.bfloat16).transpose(-2, -1)
    out = torch._grouped_mm(a, b, offs=offs)
    ref = _loop(a, b, offs)
    rows = int(offs[-1])
    err = float((out[:rows].float() - ref[:rows]).abs().max() / ref[:rows].abs().max())
    print(f"_grouped_mm bf16, groups {sizes}: normwise error {err:.2e}")
    ok &= err < 1e-2
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.transpose(-2, -1).contiguous().to(torch.float8_e4m3fn).transpose(-2, -1)
    sa = torch.rand(m, device="cuda") + 0.5
    sb = torch.rand(len(sizes), n, device="cuda") + 0.5
    out8 = torch._scaled_grouped_mm(a8, b8, sa, sb, offs=offs, out_dtype=torch.bfloat16)
    ref8 = _loop((a8.float() * sa[:, None]), b8.float() * sb[:, None, :], offs)
    err8 = float((out8[:rows].float() - ref8[:rows]).abs().max() / ref8[:rows].abs().max())
    print(f"_scaled_grouped_mm fp8 row-wise, groups {sizes}: normwise error {err8:.2e}")
    ok &= err8 < 1e-2
    from moe_oracle.kernels import _triton_moe as ops

    ids = torch.randint(0, 6, (33, 2), device="cuda")
    x = torch.randn(33, 256, device="cuda").to(torch.bfloat16)
    lay = ops.route_layout(ids, 0, 6, x=x)
    torch.cuda.synchronize()
    good = bool(torch.equal(lay.buf[lay.pair_row.long()], x.repeat_interleave(2, 0)))
    print(f"triton route_layout: rows copied correctly {good}")
    ok &= good
    print("probe", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
