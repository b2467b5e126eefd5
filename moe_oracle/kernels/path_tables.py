"""Which path and tiles of our experts serve which token count: the tables under ``runtime_tables/paths/``.

* ``bf16_grouped.yaml`` (``experts: torch_grouped_mm``):
  :class:`~moe_oracle.kernels.torch_grouped_mm.TorchGroupedMMExperts` has two ways to run its two
  GEMMs on CUDA: PyTorch's CUTLASS grouped GEMM (``torch._grouped_mm``, path ``torch_grouped_mm``)
  and our Triton grouped GEMM (:func:`~moe_oracle.kernels._triton_moe.bf16_grouped_gemm`, path
  ``triton``: GEMM1 reads the tokens' rows in place and applies the activation in its epilogue).
  Tiles are :class:`~moe_oracle.kernels._triton_moe.GemmTile`.
* ``fp8_block.yaml`` (``experts: triton_fp8_block``):
  :class:`~moe_oracle.kernels.triton_fp8_block.TritonFP8BlockExperts` runs our 128x128-block fp8
  GEMM (path ``triton`` only); the table gives its two GEMMs' tiles
  (:class:`~moe_oracle.kernels._triton_moe.BlockConfig`, ``k`` fixed at 128). ``default`` may be
  left out: other layers then take the kernel's own choice (``block_config``).

Which one serves a call is read from the table at each call, by the call's token count (a host
integer: no device value is read, so the choice is captured by a CUDA graph like the rest).

Table layout (YAML; every field is checked at load, an error names the file, the field, the value
and what is allowed)::

    kind: runtime_paths
    experts: torch_grouped_mm           # the runtime entry these paths belong to (see above)
    measured: <where the numbers come from>
    shapes:                             # tuned layers, matched exactly on local experts, hidden,
      - name: ...                       # intermediate size per partition and top-k
        num_experts: 8
        hidden_size: 4096
        intermediate_size: 14336
        top_k: 2
        ranges:                         # in order; the first whose max_tokens >= tokens serves
          - {max_tokens: 256, path: triton, gemm1: TILE, gemm2: TILE}
          - {path: torch_grouped_mm}    # no max_tokens: any larger count
    default:                            # any other layer: by mean routed rows per local expert
      - {max_rows_per_expert: 8, path: triton, gemm1: TILE, gemm2: TILE}
      - {path: torch_grouped_mm}

    TILE = {m: 16, n: 64, k: 128, warps: 4, stages: 4, group_m: 1, tma: false}   (GemmTile fields)
    TILE = {m: 64, n: 128, warps: 8, stages: 3, group_m: 8, tma: true}          (BlockConfig fields)
    optional in both: split: S (0 or a power of two below m: an expert's last m-tile of at most S rows
    runs an S-row code path of the same launch); persistent: P (0: one program per tile; 1-8: P
    programs per SM looping over the tiles); flat: true (persistent, split 0: tile and K loops flattened
    into one pipeline); ws: true (Triton's warp-specialized K loop); tma_a: true (gemm2 only, split 0:
    the activation rows, contiguous in expert order there, loaded through a tensor descriptor)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core._resources import package_dir

__all__ = ["EXPERTS", "PATHS", "PathChoice", "PathTable", "fp8_table_path", "load_paths"]

PATHS = ("triton", "torch_grouped_mm")
"""Path names a bf16 table may use."""

EXPERTS = {"torch_grouped_mm": PATHS, "triton_fp8_block": ("triton",)}
"""The ``experts`` a table may name -> the paths it may use."""

_TILE_KEYS = {"m": "block_m", "n": "block_n", "k": "block_k", "warps": "num_warps", "stages": "num_stages", "group_m": "group_m", "tma": "tma", "split": "split",
              "persistent": "persistent", "ws": "ws", "flat": "flat", "tma_a": "tma_a"}


def default_table_path() -> Path:
    """``moe_oracle/runtime_tables/paths/bf16_grouped.yaml``."""
    return package_dir() / "runtime_tables" / "paths" / "bf16_grouped.yaml"


def fp8_table_path() -> Path:
    """``moe_oracle/runtime_tables/paths/fp8_block.yaml``."""
    return package_dir() / "runtime_tables" / "paths" / "fp8_block.yaml"


@dataclass(frozen=True)
class PathChoice:
    """One range's choice: ``path`` (one of :data:`PATHS`) and, for ``triton``, the two GEMMs' tiles
    (:class:`~moe_oracle.kernels._triton_moe.GemmTile` or, in an fp8 table,
    :class:`~moe_oracle.kernels._triton_moe.BlockConfig`; ``None`` for ``torch_grouped_mm``)."""

    path: str
    gemm1: Any = None
    gemm2: Any = None


@dataclass(frozen=True)
class _Range:
    limit: int | None  # max tokens (shapes) or max mean rows per expert (default); None: no limit
    choice: PathChoice


@dataclass(frozen=True)
class _Shape:
    name: str
    key: tuple[int, int, int, int]  # (num_experts, hidden_size, intermediate_size, top_k)
    ranges: tuple[_Range, ...]


@dataclass(frozen=True)
class PathTable:
    """The loaded table: :meth:`choose` answers which path serves a call."""

    source: str
    shapes: tuple[_Shape, ...]
    default: tuple[_Range, ...] | None
    experts: str = "torch_grouped_mm"

    def choose(self, num_experts: int, hidden_size: int, intermediate_size: int, top_k: int, tokens: int) -> PathChoice | None:
        """The path for a call of ``tokens`` tokens on a layer of ``num_experts`` local experts.

        A tuned shape (exact match of the four sizes) is looked up by ``tokens``; any other layer
        by the mean routed rows per local expert, ``tokens * top_k / num_experts`` (``None`` when
        the table has no ``default``: the kernel's own choice).
        """
        key = (num_experts, hidden_size, intermediate_size, top_k)
        for shape in self.shapes:
            if shape.key == key:
                return _first(shape.ranges, tokens)
        if self.default is None:
            return None
        return _first(self.default, tokens * top_k / max(num_experts, 1))

    def shape_name(self, num_experts: int, hidden_size: int, intermediate_size: int, top_k: int) -> str | None:
        """The tuned shape's name, or ``None`` when the layer falls to the default ranges."""
        key = (num_experts, hidden_size, intermediate_size, top_k)
        return next((s.name for s in self.shapes if s.key == key), None)


def _first(ranges: tuple[_Range, ...], value: float) -> PathChoice:
    for r in ranges:
        if r.limit is None or value <= r.limit:
            return r.choice
    raise AssertionError("ranges end with an unlimited range (checked at load)")


def _fail(where: str, field: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{where}: {field} = {value!r} is not allowed; {allowed}")


def _positive_int(where: str, field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(where, field, value, "a positive integer")
    return value


def _tile(where: str, field: str, value: Any, experts: str):  # noqa: ANN202 - GemmTile / BlockConfig (imported lazily: needs triton)
    if experts == "triton_fp8_block":
        from ._triton_moe import BlockConfig as tile_type

        required, allowed, what = {"m", "n"}, set(_TILE_KEYS) - {"k"}, "keys m, n and optionally warps, stages, group_m, tma, split, persistent, ws, flat, tma_a (k is 128)"
    else:
        from ._triton_moe import GemmTile as tile_type

        required, allowed, what = {"m", "n", "k"}, set(_TILE_KEYS), "keys m, n, k and optionally warps, stages, group_m, tma, split, persistent, ws, flat, tma_a"
    if not isinstance(value, dict) or set(value) - allowed or not required <= set(value):
        raise _fail(where, field, value, f"a mapping with {what}")
    if field == "gemm1" and value.get("tma_a"):  # GEMM1 reads the tokens' rows through the sorted index: not one box
        raise _fail(where, "gemm1.tma_a", value["tma_a"], "false or absent (activation rows through a descriptor: gemm2 only)")
    kwargs = {_TILE_KEYS[k]: v for k, v in value.items()}
    if experts == "triton_fp8_block":  # BlockConfig takes warps and stages positionally
        kwargs.setdefault("num_warps", 4)
        kwargs.setdefault("num_stages", 3)
    try:
        return tile_type(**kwargs)
    except ValueError as exc:
        raise ValueError(f"{where}: {field}: {exc}") from exc


def _ranges(where: str, items: Any, limit_key: str, experts: str = "torch_grouped_mm") -> tuple[_Range, ...]:
    if not isinstance(items, list) or not items:
        raise _fail(where, "ranges", items, "a non-empty list")
    out, last = [], None
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise _fail(at, "range", item, "a mapping")
        extra = set(item) - {limit_key, "path", "gemm1", "gemm2"}
        if extra:
            raise _fail(at, "key", sorted(extra)[0], f"one of {limit_key}, path, gemm1, gemm2")
        path = item.get("path")
        if path not in EXPERTS[experts]:
            raise _fail(at, "path", path, f"one of {', '.join(EXPERTS[experts])}")
        limit = item.get(limit_key)
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0:
                raise _fail(at, limit_key, limit, "a positive number, or left out on the last range")
            if last is not None and limit <= last:
                raise _fail(at, limit_key, limit, f"larger than the previous range's {last}")
            last = limit
        elif i != len(items) - 1:
            raise _fail(at, limit_key, None, "given on every range but the last")
        if path == "triton":
            choice = PathChoice(path, _tile(at, "gemm1", item.get("gemm1"), experts), _tile(at, "gemm2", item.get("gemm2"), experts))
        else:
            if "gemm1" in item or "gemm2" in item:
                raise _fail(at, "gemm1/gemm2", item.get("gemm1", item.get("gemm2")), "only on path triton")
            choice = PathChoice(path)
        out.append(_Range(limit, choice))
    if out[-1].limit is not None:
        raise _fail(f"{where}[{len(items) - 1}]", limit_key, out[-1].limit, "left out on the last range (it serves any larger value)")
    return tuple(out)


def parse_paths(doc: Any, source: str) -> PathTable:
    """Check and load a table document (see the module docstring).

    Raises:
        ValueError: naming ``source``, the field, the value and what is allowed.
    """
    if not isinstance(doc, dict):
        raise _fail(source, "document", type(doc).__name__, "a mapping")
    extra = set(doc) - {"kind", "experts", "measured", "notes", "shapes", "default"}
    if extra:
        raise _fail(source, "key", sorted(extra)[0], "one of kind, experts, measured, notes, shapes, default")
    if doc.get("kind") != "runtime_paths":
        raise _fail(source, "kind", doc.get("kind"), "runtime_paths")
    experts = doc.get("experts", "torch_grouped_mm")
    if experts not in EXPERTS:
        raise _fail(source, "experts", experts, f"one of {', '.join(EXPERTS)}")
    shapes = []
    seen: set[tuple[int, int, int, int]] = set()
    for i, item in enumerate(doc.get("shapes") or []):
        at = f"{source}: shapes[{i}]"
        if not isinstance(item, dict):
            raise _fail(at, "shape", item, "a mapping")
        extra = set(item) - {"name", "num_experts", "hidden_size", "intermediate_size", "top_k", "ranges"}
        if extra:
            raise _fail(at, "key", sorted(extra)[0], "one of name, num_experts, hidden_size, intermediate_size, top_k, ranges")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _fail(at, "name", name, "a non-empty string")
        key = tuple(_positive_int(at, f, item.get(f)) for f in ("num_experts", "hidden_size", "intermediate_size", "top_k"))
        if key in seen:
            raise _fail(at, "shape", key, "each (num_experts, hidden_size, intermediate_size, top_k) once")
        seen.add(key)
        shapes.append(_Shape(name, key, _ranges(f"{at}.ranges", item.get("ranges"), "max_tokens", experts)))
    if doc.get("default") is None and experts == "triton_fp8_block":
        default = None  # other layers: the kernel's own choice
    else:
        default = _ranges(f"{source}: default", doc.get("default"), "max_rows_per_expert", experts)
    return PathTable(source, tuple(shapes), default, experts)


@functools.lru_cache(maxsize=4)
def load_paths(path: str | None = None) -> PathTable:
    """The table at ``path`` (default :func:`default_table_path`), checked (:func:`parse_paths`); cached."""
    from ..core.tables import safe_load

    file = Path(path) if path else default_table_path()
    return parse_paths(safe_load(file.read_text(encoding="utf-8")), file.name)
