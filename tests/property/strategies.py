"""Hypothesis strategies over the whole MoE selection vocabulary: the only source of configs.

Everything is derived from the vocabulary and the shipped catalog, so that a new enum member,
quant key or scheme, hardware entry, backend name, environment variable or table value is
fuzzed without touching this file:

* enums: :mod:`moe_oracle.core.vocab` (platform, activation, routing method, dtype, all2all backend, source);
* quantization: every named scheme of ``quant.SCHEMES`` and every (weight, activation) pair of
  ``quant.QUANT_KEYS`` (most of them unnamed: values no kernel supports);
* devices: ``hardware.GPU_CATALOG``, every capability and arch a table names, arbitrary
  capabilities (10..200), unknown (``None``) capabilities and arches, junk arch strings;
* shapes: the bounds and alignments the tables declare on a field or on a derived field it feeds
  (``fields.FIELDS[f].inputs``), one either side of each bound, and arbitrary sizes up to the
  limits of ``schemas/moe_config.schema.json`` (so that every example replays from a file);
* backends: ``catalog.backend_names`` (ids and aliases) in case and dash variants, and ``auto``;
  all2all backends with the removed/renamed aliases of ``rules/aliases.yaml``;
* environment: ``catalog.package_names`` (installed at a version, absent, or unknown) plus
  packages no table reads, ``catalog.env_vars`` (unset, typed values, junk) plus variables the
  oracle does not read.

Two generators, as pypa/packaging's suite has a narrow one beside a rich one:
:func:`plausible_cases` (catalog hardware, named schemes, realistic shapes, packages installed:
most configs have a winner) and :func:`wild_cases` (the whole vocabulary, including values no
kernel supports). :func:`cases` mixes both. Every leaf of :class:`MoEConfig` has one value
strategy in :data:`LEAVES`; a test fails when a new MoEConfig field has none.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from hypothesis import note
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from moe_oracle.core.config import EXPERT_PLACEMENTS, Device, MoEConfig, ParallelConfig, Provenance, grouping_problems, router_groups
from moe_oracle.core.requests import request_name
from moe_oracle.core.environment import HOST_TOOLS, Environment
from moe_oracle.core.fields import FIELDS
from moe_oracle.inputs.bounds import CONFIG_FILE_BOUNDS
from moe_oracle.inputs.hardware import GPU_CATALOG
from moe_oracle.inputs.files import config_document, dump_document, resolve_all2all
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.quant import QUANT_KEYS, SCHEMES, QuantScheme
from moe_oracle.core.vocab import Activation, All2AllBackend, DType, Platform, RoutingMethod, Source
from tests.property import tally

__all__ = [
    "ACCEPTED_BY_SOME_RELEASE",
    "CATALOG",
    "Case",
    "LEAVES",
    "LEAF_PATHS",
    "backend_names",
    "build_config",
    "cases",
    "changed_inputs",
    "environments",
    "release_view",
    "flatten",
    "leaf_values",
    "note_case",
    "pinned",
    "plausible_cases",
    "refused_env_values",
    "REGRESSIONS",
    "RUNTIME_REGRESSIONS",
    "requested_backends",
    "targeted_cases",
    "spellings",
    "table_values",
    "text_values",
    "unread_env_vars",
    "unread_packages",
    "wild_cases",
    "with_leaf",
]

CATALOG = default_catalog()

# Limits of schemas/moe_config.schema.json: generated configs stay inside them so that every
# example can be written to a config file and replayed with `moe-oracle explain --config`. The
# model's counts are held to the bounds a config.json's are (CONFIG_FILE_BOUNDS, issue 24: the file
# door refuses 10**12 experts as --model does). MoEConfig itself still takes up to 2**40; the draws
# stop at the door's bounds because a drawn case the file door refuses could not be replayed, and
# the tables' own bounds on these sizes (at most 8192 today, each drawn one either side) lie well
# inside the caps.
MAX_SIZE = 2**40
MAX_PARALLEL = 2**20
MAX_COUNT = {name: bound.maximum for name, bound in CONFIG_FILE_BOUNDS.items()}


# ------------------------------------------------------------------------------ catalog harvest


def _all_predicates(catalog: Any) -> Iterable[Any]:
    for owner in (*catalog.experts, *catalog.prepare_finalize):
        for chk in owner.checks:
            if chk.predicate is not None:
                yield chk.predicate
            yield from chk.condition
    # The front ends' key rewrites and block rules too: their quant_method values (``fp8``: block
    # FP8 checkpoints, whose block the front end refines or pads) are named nowhere else.
    for group in (catalog.orders, catalog.adjustments, catalog.opt_in, catalog.overrides, catalog.rewrites, catalog.block_rules):
        for rule in group:
            yield from rule.when


def _harvest(catalog: Any) -> tuple[dict[str, set[Any]], dict[str, set[Any]], dict[str, set[int]], dict[str, set[str]]]:
    values: dict[str, set[Any]] = {}
    bounds: dict[str, set[Any]] = {}
    multiples: dict[str, set[int]] = {}
    specs: dict[str, set[str]] = {}
    for pred in _all_predicates(catalog):
        for key, arg in pred.spec:
            if key in ("in", "not_in"):
                values.setdefault(pred.field, set()).update(arg)
            elif key in ("min", "max"):
                bounds.setdefault(pred.field, set()).add(arg)
            elif key == "multiple_of":
                multiples.setdefault(pred.field, set()).add(arg)
            elif key == "version":
                specs.setdefault(pred.field, set()).add(arg)
    return values, bounds, multiples, specs


_VALUES, _BOUNDS, _MULTIPLES, _VERSION_SPECS = _harvest(CATALOG)


def table_values(field: str, kind: type | tuple[type, ...] = object) -> tuple[Any, ...]:
    """Values the shipped tables name for ``field`` (in ``in``/``not_in`` lists), of type ``kind``."""
    found = [v for v in _VALUES.get(field, ()) if isinstance(v, kind) and not (kind is int and isinstance(v, bool))]
    return tuple(sorted(found, key=repr))


def _numeric_hints(path: str) -> tuple[set[int], set[int]]:
    """Bounds and alignments the tables declare on fields that ``path`` feeds."""
    bounds: set[int] = set()
    multiples: set[int] = set()
    for name, spec in FIELDS.items():
        if path in spec.inputs:
            bounds |= {int(b) for b in _BOUNDS.get(name, ()) if isinstance(b, (int, float)) and abs(b) < MAX_SIZE}
            multiples |= _MULTIPLES.get(name, set())
    return bounds, multiples


# ------------------------------------------------------------------------------ scalar strategies

_AWKWARD_TEXT = ("", " ", "null", "~", "yes", "No", "on", "1", "0", "1e3", "0x1F", ".inf", "- x", ": y", "#c", "!t", "&a", "*a", "'", '"', "\\", "\t", "é", "日本", "gfx000", "sm_90a")


@lru_cache(maxsize=None)
def text_values(max_size: int = 12) -> st.SearchStrategy[str]:
    """Strings, including YAML-awkward ones; no lone surrogates (a config file is UTF-8)."""
    return st.one_of(st.sampled_from(_AWKWARD_TEXT), st.text(st.characters(blacklist_categories=("Cs",)), max_size=max_size))


@lru_cache(maxsize=None)
def _floats() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from((0.0, 1.0, 1.702, 2.5, 7.0, -1.0)), st.floats(allow_nan=False, allow_infinity=False))


@lru_cache(maxsize=None)
def _sizes(path: str, typical: tuple[int, ...], hi: int) -> st.SearchStrategy[int]:
    bounds, multiples = _numeric_hints(path)
    special = sorted({v for v in (*typical, *(b + d for b in bounds for d in (-1, 0, 1))) if 1 <= v <= hi})
    options = [st.sampled_from(special), st.integers(1, min(hi, 1 << 14)), st.integers(1, hi)]
    if multiples:
        aligned = st.builds(lambda m, k, off: m * k + off, st.sampled_from(sorted(multiples)), st.integers(1, 256), st.sampled_from((0, 0, 0, -1, 1, 32, -32)))
        options.append(aligned.filter(lambda v: 1 <= v <= hi))
    return st.one_of(*options)


_EXPERTS = (1, 2, 8, 16, 32, 60, 64, 128, 160, 256, 384, 512, 1024, 2048, 4096)
_HIDDEN = (1024, 2048, 2688, 2880, 3072, 4096, 5120, 7168, 8192)
_INTERMEDIATE = (96, 192, 256, 384, 512, 768, 1408, 1536, 1856, 2048, 2880, 8192, 14336)
_PARALLEL = (1, 2, 4, 8, 16)

CATALOG_DEVICES: tuple[Device, ...] = tuple(hw.device for hw in GPU_CATALOG.values())
CAPABILITIES: tuple[int, ...] = tuple(sorted({d.capability for d in CATALOG_DEVICES if d.capability is not None} | set(table_values("device_capability", int))))
ARCHES: tuple[str, ...] = tuple(sorted({d.arch for d in CATALOG_DEVICES if d.arch} | set(table_values("gpu_arch", str)) | set(table_values("cpu_arch", str))))
QUANT_METHODS: tuple[str, ...] = tuple(v for v in table_values("quant_method", str) if v != "none")

WEIGHT_BLOCKS: tuple[tuple[int, int], ...] = ((128, 128), (64, 64), (32, 32), (128, 64), (256, 128), (96, 96), (128, 48), (16, 16))
"""Checkpoint weight blocks: DeepSeek's 128x128, smaller ones that divide more shards, and ones
that divide few or none of the drawn shards (96, 48: the front end refines them to a smaller
block or, under an explicit backend, pads the shard; 16: below vLLM's 32 minimum)."""


def _block_method(ctx: Ctx) -> st.SearchStrategy[Any]:
    """``quant_method`` given the scheme drawn: a block-FP8 weight usually comes from an ``fp8``
    (Fp8MoEMethod) or compressed-tensors checkpoint; otherwise any table's method, or none."""
    weight = getattr(ctx.get("quant"), "weight", None) or ""
    if weight.startswith("fp8_static_block"):
        return st.sampled_from(("fp8", "fp8", "compressed-tensors", None, *QUANT_METHODS))
    return st.one_of(st.none(), st.none(), st.sampled_from(QUANT_METHODS))


def _block_size(ctx: Ctx) -> st.SearchStrategy[Any]:
    """``weight_block_size`` given the scheme drawn: a block-FP8 weight almost always declares one."""
    weight = getattr(ctx.get("quant"), "weight", None) or ""
    if weight.startswith("fp8_static_block"):
        return st.one_of(st.sampled_from(WEIGHT_BLOCKS), st.sampled_from(WEIGHT_BLOCKS), st.none())
    return st.one_of(st.none(), st.sampled_from(WEIGHT_BLOCKS))


@lru_cache(maxsize=None)
def quant_schemes() -> st.SearchStrategy[QuantScheme]:
    """Named schemes and every (weight, activation) pair of quant keys, most of them unnamed."""
    keys = sorted(QUANT_KEYS)
    pairs = st.builds(QuantScheme, st.sampled_from(keys), st.one_of(st.none(), st.sampled_from(keys)))
    return st.one_of(st.sampled_from(list(SCHEMES.values())), pairs)


@lru_cache(maxsize=None)
def spellings(name: str) -> st.SearchStrategy[str]:
    """``name`` as a user may type it: case, dashes and surrounding spaces vary."""
    return st.sampled_from(tuple(dict.fromkeys((name, name.upper(), name.replace("_", "-"), name.title(), f" {name} ", name.upper().replace("_", "-")))))


# The names the default release's KernelConfig accepts that some backend of ours answers to; a
# name it refuses raises ConfigError (tests/unit/test_frontends_and_requests.py), which would mask
# every other property. (Accepted names no backend answers to, e.g. deep_gemm_mega_moe, are left
# out: they request nothing, so why-not has no backend to repair towards; the doors accept them and
# the engine answers "nothing eligible", tests/unit/test_frontends_and_requests.py.)
BACKEND_NAMES: tuple[str, ...] = tuple(sorted(
    n for n in CATALOG.backend_names if CATALOG.accepted_names is None or n in CATALOG.accepted_names))


ACCEPTED_BY_SOME_RELEASE: frozenset[str] = frozenset(
    n for r in CATALOG.engine.releases
    for n in (CATALOG.for_release(CATALOG.release(Environment(((CATALOG.engine.name, str(r.version)),), frozenset(), False, ()))).accepted_names or ()))
"""The ``moe_backend`` names some modelled engine release accepts."""


@lru_cache(maxsize=None)
def backend_names() -> st.SearchStrategy[str]:
    """Every name ``moe_backend`` accepts (backend ids and aliases), in spelling variants."""
    return st.sampled_from(BACKEND_NAMES).flatmap(spellings)


@lru_cache(maxsize=None)
def requested_backends(auto: int = 1) -> st.SearchStrategy[str]:
    """``auto`` (``auto`` times as often as one named backend) or any backend name."""
    return st.integers(0, auto).flatmap(lambda i: backend_names() if i == 0 else spellings("auto"))


_A2A_NAMES = tuple(sorted({b.value for b in All2AllBackend} | set(CATALOG.all2all_aliases)))


@lru_cache(maxsize=None)
def all2all_spellings() -> st.SearchStrategy[str]:
    """All2all backends and their removed/renamed aliases, in spelling variants."""
    return st.sampled_from(_A2A_NAMES).flatmap(spellings)


def _resolve_all2all(spelling: str) -> tuple[All2AllBackend, str | None]:
    return resolve_all2all(CATALOG, spelling)


# ------------------------------------------------------------------------------ leaves of MoEConfig


def _config_leaf_paths() -> tuple[str, ...]:
    out: list[str] = []
    for f in dataclasses.fields(MoEConfig):
        if f.name == "device":
            out += [f"device.{g.name}" for g in dataclasses.fields(Device)]
        elif f.name == "parallel":
            out += [f"parallel.{g.name}" for g in dataclasses.fields(ParallelConfig)]
        else:
            out.append(f.name)
    return tuple(out)


LEAF_PATHS: tuple[str, ...] = _config_leaf_paths()
"""Every leaf of a MoEConfig (nested records flattened as ``device.arch``), in drawing order."""

Ctx = Mapping[str, Any]
Leaf = Callable[[Ctx], st.SearchStrategy[Any]]

# Strategies are built once and reused: hypothesis validates every new strategy object, and
# building them per draw costs more than the draw.
_NONE = st.none()
_CUDA_CAPABILITY = st.one_of(st.none(), st.sampled_from(CAPABILITIES), st.integers(10, 200))
_ARCH_VALUES = st.one_of(st.none(), st.sampled_from(ARCHES), text_values().filter(str.strip))
_AMX_VALUES = st.one_of(st.none(), st.booleans())


@lru_cache(maxsize=4096)
def _top_k(num_experts: int) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(1, min(num_experts, 16)), st.integers(1, min(num_experts, MAX_COUNT["top_k"])))


@lru_cache(maxsize=4096)
def _small_top_k(num_experts: int) -> st.SearchStrategy[int]:
    return st.integers(1, min(num_experts, 8))


_SP_ANY = st.one_of(st.none(), st.booleans())
_SP_NOT_TRUE = st.sampled_from((None, False))


def _sequence_parallel(ctx: Ctx) -> st.SearchStrategy[bool | None]:
    """``parallel.sequence_parallel``: true only where EP, TP > 1 and DP > 1 allow it (a config file
    that says true without them is refused)."""
    possible = ctx["parallel.use_ep"] and ctx["parallel.tp_size"] > 1 and ctx["parallel.dp_size"] > 1
    return _SP_ANY if possible else _SP_NOT_TRUE


@lru_cache(maxsize=4096)
def _ep_rank(world: int) -> st.SearchStrategy[int | None]:
    return st.one_of(st.none(), st.integers(0, world - 1))


def _const(strategy: st.SearchStrategy[Any]) -> Leaf:
    return lambda ctx: strategy


@lru_cache(maxsize=None)
def _provenance_records() -> st.SearchStrategy[list[Provenance]]:
    record = st.builds(
        Provenance,
        st.one_of(st.sampled_from(LEAF_PATHS), text_values()),
        st.sampled_from(list(Source)),
        st.one_of(st.just(""), text_values(), text_values().map(lambda t: "warning: " + t)),
    )
    return st.lists(record, max_size=3)


@lru_cache(maxsize=64)
def _provenance_with(warning: str | None) -> st.SearchStrategy[tuple[Provenance, ...]]:
    extra = (Provenance("parallel.all2all_backend", Source.USER_FLAG, warning),) if warning else ()
    return _provenance_records().map(lambda rs: tuple(rs) + extra)


def _provenance(ctx: Ctx) -> st.SearchStrategy[tuple[Provenance, ...]]:
    return _provenance_with(ctx.get("_all2all_warning"))


@lru_cache(maxsize=4096)
def _non_dividing(num_experts: int) -> st.SearchStrategy[int]:
    """Group counts that do not divide the experts (past the experts included: those never do)."""
    return st.integers(2, num_experts + 16).filter(lambda g: num_experts % g != 0)


@lru_cache(maxsize=4096)
def _expert_groups(num_experts: int, topk_group: int | None, typical: tuple[int, ...] | None = None, cpu: bool = False) -> st.SearchStrategy[int | None]:
    """Expert group counts MoEConfig takes (core/config.grouping_problems): a divisor of the
    experts, at least ``topk_group`` when that is given (then a ``topk_group`` below 1 or past
    the experts leaves only ``None``); off CPU (``cpu`` false) also, now and then, a count that
    does not divide them, which vLLM's router routes ungrouped (GroupedTopKRouter
    ``valid_grouping``) and so never reads ``topk_group`` for. ``typical``: the counts to draw
    from, each kept where the platform takes it."""
    divisors = sorted({d for i in range(1, int(num_experts ** 0.5) + 1) if num_experts % i == 0 for d in (i, num_experts // i)})
    if topk_group is not None:
        divisors = [d for d in divisors if topk_group >= 1 and d >= topk_group]
    if typical is not None:
        odd = [] if cpu else [g for g in typical if g >= 1 and num_experts % g != 0]
        values = sorted(set([d for d in typical if d in divisors] + odd))
        return st.one_of(st.none(), st.sampled_from(values)) if values else _NONE
    dividing = st.sampled_from(divisors) if divisors else None
    if cpu:
        return st.one_of(st.none(), dividing) if dividing is not None else _NONE
    odd_draw = _non_dividing(num_experts)
    return st.one_of(st.none(), dividing, odd_draw) if dividing is not None else st.one_of(st.none(), odd_draw)


@lru_cache(maxsize=4096)
def _topk_groups(num_expert_group: int | None, typical: tuple[int, ...] | None = None, num_experts: int | None = None, cpu: bool = False) -> st.SearchStrategy[int | None]:
    """Top-k group counts MoEConfig takes: between 1 and the groups where they are read (the router
    groups them, or on CPU), else any count."""
    read = num_expert_group is not None and (cpu or num_experts is None or router_groups(num_experts, num_expert_group))
    if not read:
        values = st.sampled_from(typical) if typical is not None else st.one_of(st.integers(0, 64), st.integers(0, MAX_COUNT["topk_group"]))
        return st.one_of(st.none(), values)
    if typical is not None:
        fitting = [t for t in typical if t <= num_expert_group]
        return st.one_of(st.none(), st.sampled_from(fitting)) if fitting else _NONE
    return st.one_of(st.none(), st.integers(1, num_expert_group))


def _cpu(ctx: Ctx) -> bool:
    return ctx.get("device.platform") is Platform.CPU


LEAVES: Mapping[str, Leaf] = {
    "num_experts": _const(_sizes("num_experts", _EXPERTS, MAX_COUNT["num_experts"])),
    "top_k": lambda ctx: _top_k(ctx["num_experts"]),
    "hidden_size": _const(_sizes("hidden_size", _HIDDEN, MAX_COUNT["hidden_size"])),
    "intermediate_size": _const(_sizes("intermediate_size", _INTERMEDIATE, MAX_COUNT["intermediate_size"])),
    "device.platform": _const(st.sampled_from(list(Platform))),
    "device.capability": lambda ctx: _CUDA_CAPABILITY if ctx["device.platform"] is Platform.CUDA else _NONE,
    # Device refuses an arch on CUDA (the capability decides), an empty one, and cpu_amx off CPU.
    "device.arch": lambda ctx: _NONE if ctx["device.platform"] is Platform.CUDA else _ARCH_VALUES,
    "device.cpu_amx": lambda ctx: _AMX_VALUES if ctx["device.platform"] is Platform.CPU else _NONE,
    "device.name": _const(st.one_of(st.none(), st.sampled_from(sorted(GPU_CATALOG)), text_values())),
    "activation": _const(st.sampled_from(list(Activation))),
    "routing_method": _const(st.sampled_from(list(RoutingMethod))),
    "quant": _const(quant_schemes()),
    "quant_method": _const(st.one_of(st.none(), st.sampled_from(QUANT_METHODS), text_values())),
    "in_dtype": _const(st.sampled_from(list(DType))),
    "router_logits_dtype": _const(st.one_of(st.none(), st.sampled_from(list(DType)))),
    "has_bias": _const(st.booleans()),
    "swiglu_alpha": _const(st.one_of(st.none(), _floats())),
    "swiglu_limit": _const(st.one_of(st.none(), _floats())),
    "swiglu_beta": _const(st.one_of(st.none(), _floats())),
    "num_expert_group": lambda ctx: _expert_groups(ctx["num_experts"], ctx.get("topk_group"), None, _cpu(ctx)),
    "topk_group": lambda ctx: _topk_groups(ctx["num_expert_group"], None, ctx["num_experts"], _cpu(ctx)),
    "routed_scaling_factor": _const(_floats()),
    "has_correction_bias": _const(st.booleans()),
    "situ_beta": _const(st.one_of(st.none(), _floats())),
    "situ_linear_beta": _const(st.one_of(st.none(), _floats())),
    "model_type": _const(st.one_of(st.none(), st.sampled_from(("deepseek_v3", "deepseek_v4", "qwen3_moe", "qwen3_5_moe_text", "kolibri1", "gpt_oss")), text_values().filter(str.strip))),
    "architecture": _const(st.one_of(st.none(), st.sampled_from(("DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM", "Qwen3MoeForCausalLM")), text_values().filter(str.strip))),
    "has_hash_routing": _const(st.booleans()),
    "require_decomposed": _const(st.booleans()),
    "weight_group_size": _const(st.one_of(st.none(), st.sampled_from((-1, 32, 64, 128, 16)), st.integers(1, 4096))),
    "act_order": _const(st.one_of(st.none(), st.sampled_from(("none", "group", "weight", "static", "dynamic")))),
    "weight_zero_point": _const(st.one_of(st.none(), st.booleans())),
    "weight_block_size": _block_size,
    "parallel.tp_size": _const(st.one_of(st.sampled_from(_PARALLEL + (MAX_PARALLEL,)), st.integers(1, 1024), st.integers(1, MAX_PARALLEL))),
    "parallel.dp_size": _const(st.one_of(st.sampled_from(_PARALLEL + (MAX_PARALLEL,)), st.integers(1, 1024), st.integers(1, MAX_PARALLEL))),
    "parallel.pcp_size": _const(st.sampled_from((1, 1, 1, 2, 3, 4))),
    "parallel.use_ep": _const(st.booleans()),
    "parallel.all2all_backend": _const(all2all_spellings()),  # resolved by build_config, as the door does
    "parallel.enable_eplb": _const(st.booleans()),
    "parallel.num_redundant_experts": _const(st.one_of(st.just(0), st.integers(0, 64), st.integers(0, MAX_PARALLEL))),
    "parallel.ep_rank": lambda ctx: _ep_rank(ctx["parallel.tp_size"] * ctx["parallel.pcp_size"] * ctx["parallel.dp_size"]),
    "parallel.sequence_parallel": lambda ctx: _sequence_parallel(ctx),
    "parallel.expert_placement_strategy": _const(st.sampled_from(EXPERT_PLACEMENTS)),
    "lora": _const(st.booleans()),
    "batch_invariant": _const(st.booleans()),
    "moe_backend": _const(requested_backends()),
    "max_num_tokens": _const(st.one_of(st.none(), _sizes("max_num_tokens", (1, 256, 8192), MAX_SIZE))),
    "provenance": _provenance,
}
"""Value strategy per MoEConfig leaf, given the leaves drawn before it (``top_k <= num_experts``)."""

_PLAUSIBLE: Mapping[str, Leaf] = {
    "num_experts": _const(st.sampled_from((8, 16, 60, 64, 128, 160, 256, 384, 512))),
    "top_k": lambda ctx: _small_top_k(ctx["num_experts"]),
    "hidden_size": _const(st.sampled_from(_HIDDEN)),
    "intermediate_size": _const(st.sampled_from(_INTERMEDIATE)),
    # Unquantized bf16 is the most common deployment; every named scheme still comes up.
    "quant": _const(st.one_of(st.just(SCHEMES["unquantized"]), st.sampled_from(list(SCHEMES.values())))),
    "in_dtype": _const(st.one_of(st.just(DType.BFLOAT16), st.sampled_from(list(DType)))),
    "quant_method": _block_method,
    "activation": _const(st.one_of(st.just(Activation.SILU), st.sampled_from(list(Activation)))),
    "routing_method": _const(st.one_of(st.sampled_from((RoutingMethod.RENORMALIZE_NAIVE, RoutingMethod.RENORMALIZE, RoutingMethod.DEEPSEEK_V3)), st.sampled_from(list(RoutingMethod)))),
    "has_bias": _const(st.sampled_from((False, False, False, True))),
    "swiglu_alpha": _const(st.one_of(st.none(), st.just(1.702))),
    "swiglu_limit": _const(st.one_of(st.none(), st.just(7.0))),
    "swiglu_beta": _const(st.none()),
    "num_expert_group": lambda ctx: _expert_groups(ctx["num_experts"], ctx.get("topk_group"), (1, 8), _cpu(ctx)),
    "topk_group": lambda ctx: _topk_groups(ctx["num_expert_group"], (1, 4), ctx["num_experts"], _cpu(ctx)),
    "routed_scaling_factor": _const(st.sampled_from((1.0, 2.5))),
    "parallel.tp_size": _const(st.sampled_from((1, 2, 4, 8))),
    "parallel.dp_size": _const(st.sampled_from((1, 1, 2, 4, 8))),
    "parallel.pcp_size": _const(st.sampled_from((1,) * 7 + (2,))),
    "parallel.all2all_backend": _const(st.sampled_from([b.value for b in All2AllBackend])),
    "parallel.enable_eplb": _const(st.sampled_from((False,) * 7 + (True,))),
    "parallel.num_redundant_experts": _const(st.just(0)),
    "parallel.ep_rank": _const(st.none()),
    "parallel.sequence_parallel": _const(st.none()),
    "parallel.expert_placement_strategy": _const(st.sampled_from(("linear",) * 3 + ("round_robin",))),
    "lora": _const(st.sampled_from((False,) * 7 + (True,))),
    "batch_invariant": _const(st.sampled_from((False,) * 7 + (True,))),
    "moe_backend": _const(requested_backends(auto=4)),
    "max_num_tokens": _const(st.one_of(st.none(), st.sampled_from((256, 8192)))),
    "provenance": _const(st.just(())),
}


def flatten(config: MoEConfig) -> dict[str, Any]:
    """Leaf path -> value of ``config`` (``device.arch``, ``parallel.tp_size`` ...)."""
    out: dict[str, Any] = {}
    for path in LEAF_PATHS:
        obj: Any = config
        for part in path.split("."):
            obj = getattr(obj, part)
        out[path] = obj
    return out


def build_config(ctx: Ctx, view: Any = None) -> MoEConfig:
    """The MoEConfig with the leaves of ``ctx``; an all2all spelling is resolved as the config-file door does.

    ``view``: the catalog view of the engine release the config is for (default: the default release).
    """
    view = view if view is not None else CATALOG
    a2a = ctx["parallel.all2all_backend"]
    if isinstance(a2a, str) and not isinstance(a2a, All2AllBackend):
        a2a, _ = _resolve_all2all(a2a)
    device = Device(*(ctx[f"device.{f.name}"] for f in dataclasses.fields(Device)))
    name = str(ctx["moe_backend"]).strip().lower().replace("-", "_")
    owners = {n for n, b in view.bound_all2all.items() if b == a2a.value}
    bound = view.bound_all2all.get(name)
    if (owners and name not in owners) or (bound is not None and a2a.value != bound):
        # A bound all2all backend (passthrough) exists only with the moe_backend names that bind it,
        # and those names take no other explicit all2all backend: vLLM refuses both at start
        # (tests/unit/test_bound_all2all_and_layer_rules.py). The default is what the engine binds.
        a2a = All2AllBackend.ALLGATHER_REDUCESCATTER
    bound = CATALOG.bound_all2all.get(str(ctx["moe_backend"]).strip().lower().replace("-", "_"))
    if bound is not None and a2a.value not in (bound, All2AllBackend.ALLGATHER_REDUCESCATTER.value):
        # The other half: a name that binds an all2all backend refuses any explicit other one
        # (vLLM bind_passthrough_all2all_backend raises at start; the same unit test).
        a2a = All2AllBackend.ALLGATHER_REDUCESCATTER
    parallel = ParallelConfig(**{f.name: (a2a if f.name == "all2all_backend" else ctx[f"parallel.{f.name}"]) for f in dataclasses.fields(ParallelConfig)})
    top = {f.name: ctx[f.name] for f in dataclasses.fields(MoEConfig) if f.name not in ("device", "parallel")}
    return MoEConfig(device=device, parallel=parallel, **top)


def with_leaf(config: MoEConfig, path: str, value: Any, view: Any = None) -> MoEConfig:
    """``config`` with one leaf replaced (``view``: the release's catalog view, as in :func:`build_config`)."""
    ctx = flatten(config)
    ctx[path] = value
    return build_config(ctx, view)


def leaf_values(path: str, config: MoEConfig) -> st.SearchStrategy[Any]:
    """Valid values of leaf ``path`` given the rest of ``config``."""
    return LEAVES[path](flatten(config))


_CATALOG_DEVICE = st.sampled_from(CATALOG_DEVICES)


@st.composite
def _configs(draw: st.DrawFn, overrides: Mapping[str, Leaf], catalog_device: st.SearchStrategy[bool], backend: st.SearchStrategy[str] | None) -> MoEConfig:
    ctx: dict[str, Any] = {}
    device = draw(_CATALOG_DEVICE) if draw(catalog_device) else None
    for path in LEAF_PATHS:
        if device is not None and path.startswith("device."):
            ctx[path] = getattr(device, path[7:])
            continue
        if path == "moe_backend" and backend is not None:
            ctx[path] = draw(backend)
            continue
        ctx[path] = draw(overrides.get(path, LEAVES[path])(ctx))
        if path == "parallel.all2all_backend":
            ctx[path], ctx["_all2all_warning"] = _resolve_all2all(ctx[path])
    return build_config(ctx)


# ------------------------------------------------------------------------------ environments


def _version_hints(package: str) -> tuple[str, ...]:
    """Versions near the bounds the tables name for ``package``; for the engine, its modelled
    releases (the bounds of every ``engine:`` range) and the versions between and around them."""
    bounds = [s.version for spec in _VERSION_SPECS.get(f"packages.{package}", ()) for s in SpecifierSet(spec)]
    if package == CATALOG.engine.name:
        bounds += [str(r.version) for r in CATALOG.engine.releases]
    hints: set[str] = set()
    for bound in bounds:
        base = bound.replace(".*", "")
        parts = [int(p) for p in base.split(".") if p.isdigit()] or [0]
        major, minor = parts[0], parts[1] if len(parts) > 1 else 0
        # A bound's own pre- and development releases too: PEP 440 ranges admit neither side of it.
        hints |= {base, f"{base}rc1", f"{base}.dev0", f"{major}.{minor}.1", f"{major}.{max(minor - 1, 0)}.9", f"{major + 1}.0"}
    return tuple(sorted(hints))


@lru_cache(maxsize=None)
def versions(package: str = "") -> st.SearchStrategy[str]:
    """PEP 440 versions: the boundaries of the tables' ranges for ``package``, then arbitrary ones."""
    suffix = st.sampled_from(("", "", "rc1", ".post1", ".dev0", "+cu130", "a2"))
    generic = st.builds(lambda a, b, c, s: f"{a}.{b}.{c}{s}", st.integers(0, 12), st.integers(0, 20), st.integers(0, 9), suffix)
    hints = _version_hints(package)
    return st.one_of(st.sampled_from(hints), generic) if hints else generic


def _satisfying_version(package: str) -> str:
    from packaging.version import Version

    specs = [SpecifierSet(s) for s in _VERSION_SPECS.get(f"packages.{package}", ())]
    for candidate in (*_version_hints(package), "1.0.0", "2.9.0", "99.0.0"):
        if all(Version(candidate) in s for s in specs):
            return candidate
    return "99.0.0"


_CATALOG_ENV = {v.name for v in CATALOG.env_vars}
_BOOL_TEXT = ("0", "1", "true", "false", "True", "FALSE", "yes", "no", "on", "off", " 1 ", "")


@lru_cache(maxsize=None)
def refused_env_values() -> st.SearchStrategy[tuple[str, str]]:
    """(variable, value): an ``int``-parsed variable the catalog reads and a value ``int()`` refuses."""
    names = sorted(v.name for v in CATALOG.env_vars if v.parse == "int")

    def refused(raw: str) -> bool:
        try:
            int(raw)
        except ValueError:
            return True
        return False

    return st.tuples(st.sampled_from(names), st.one_of(st.sampled_from(_BOOL_TEXT), text_values()).filter(refused))


@lru_cache(maxsize=None)
def unread_packages() -> st.SearchStrategy[str]:
    """Canonical package names that no table reads."""
    return st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,4})?", fullmatch=True).filter(lambda n: n not in CATALOG.package_names)


@lru_cache(maxsize=None)
def unread_env_vars() -> st.SearchStrategy[str]:
    """Environment variable names outside the closed list the oracle reads."""
    return st.from_regex(r"[A-Z][A-Z0-9_]{0,14}", fullmatch=True).filter(lambda n: n not in _CATALOG_ENV)


@lru_cache(maxsize=None)
def _int_text(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=None)
def _env_value(spec: Any) -> st.SearchStrategy[str]:
    """A value the engine starts with. vLLM 0.33.0 reads ``parse: int`` variables with
    bool(int(...)) and fails at start on anything else (bad input, tested in test_envvars), so
    those get integer spellings only; ``true_or_1`` variables take any text, variables with
    choices one of them in any case."""
    if spec.type == "bool" and spec.parse == "int":
        return st.one_of(st.sampled_from([t for t in _BOOL_TEXT if _int_text(t)] + ["+1", "01", "-1", "\u0661", " 0\t"]), st.integers(-3, 3).map(str))
    if spec.type == "bool":
        return st.one_of(st.sampled_from(_BOOL_TEXT), text_values())
    if spec.choices:
        # vLLM's env_with_choices refuses any other value (bad input, tested in test_fp8_requant); any case passes.
        return st.sampled_from(spec.choices).flatmap(lambda c: st.sampled_from((c, c.upper(), c.capitalize())))
    named = tuple(str(v) for v in (spec.default, *table_values(f"env.{spec.name}")))
    return st.one_of(st.sampled_from(named), text_values())


_ZERO_TO_THREE = st.integers(0, 3)
_BOOL = st.booleans()
_PACKAGE_STATE = st.sampled_from(("unknown", "absent", "version"))
_TOOL_STATE = st.sampled_from((None, True, False))
_TOOL_FOUND = st.sampled_from((None, True))
_EXTRA_PACKAGES = st.lists(unread_packages(), max_size=2, unique=True)
_EXTRA_VARS = st.lists(unread_env_vars(), max_size=2, unique=True)


@st.composite
def environments(draw: st.DrawFn, *, installed: bool = False, extras: bool = True) -> Environment:
    """A declared environment over the catalog's packages and environment variables.

    Each package the tables read is installed at some version, known absent, or unknown
    (``installed=True``: installed at a version every table range accepts, or unknown).
    Each declared environment variable is unset, set to a typed value, or set to junk.
    With ``extras``, packages and variables the oracle never reads are added too.
    """
    packages: list[tuple[str, str]] = []
    absent: set[str] = set()
    for name in CATALOG.package_names:
        if installed:
            if draw(_ZERO_TO_THREE):
                packages.append((name, _satisfying_version(name)))
            continue
        kind = draw(_PACKAGE_STATE)
        if kind == "absent":
            absent.add(name)
        elif kind == "version":
            packages.append((name, draw(versions(name))))
    env: dict[str, str] = {}
    for spec in CATALOG.env_vars:
        if draw(_ZERO_TO_THREE if installed else _BOOL) in (0, False):
            env[spec.name] = draw(_env_value(spec))
    # Host tools (FlashInfer's JIT toolchain): found, not found, or unknown; installed: found or unknown.
    tools = tuple((name, state) for name in HOST_TOOLS if (state := draw(_TOOL_FOUND if installed else _TOOL_STATE)) is not None)
    if extras:
        for name in draw(_EXTRA_PACKAGES):
            if draw(_BOOL):
                packages.append((name, draw(versions())))
            else:
                absent.add(name)
        for var in draw(_EXTRA_VARS):
            env[var] = draw(text_values())
    return Environment(tuple(packages), frozenset(absent), False, tuple(env.items()), tools=tools)


# ------------------------------------------------------------------------------ cases


@dataclass(frozen=True)
class Case:
    """One generated input: a layer + deployment and the environment to select under."""

    config: MoEConfig
    env: Environment

    def document(self) -> dict[str, Any]:
        """The config file of this case (``moe_oracle.inputs.files.config_document``)."""
        return config_document(self.config, self.env)

    def replay(self) -> str:
        """YAML text that ``moe-oracle explain --config FILE`` accepts, with a header saying so."""
        return "# replay: save as case.yaml, then run  moe-oracle explain --config case.yaml\n" + dump_document(self.document())


class _Replay:
    """A case's replay file under a label; hypothesis converts a non-string note to text (its
    ``repr``) only where it reports it (the failing example), so passing examples skip the YAML."""

    def __init__(self, case: Case, label: str) -> None:
        self.case, self.label = case, label

    def __repr__(self) -> str:
        return f"--- {self.label} ---\n{self.case.replay()}"

    __str__ = __repr__


def note_case(case: Case, label: str = "config") -> None:
    """Print ``case`` as a replayable config file when the example fails."""
    note(_Replay(case, label))


def release_view(env: Environment) -> Any:
    """The catalog view of the engine release ``env`` declares (the default release when none)."""
    return CATALOG.for_release(CATALOG.release(env))


def _normal(name: str) -> str:
    return name.strip().lower().replace("-", "_")


@st.composite
def _started(draw: st.DrawFn, config: MoEConfig, env: Environment) -> MoEConfig:
    """``config`` as the release ``env`` declares accepts it at start: a ``moe_backend`` name that
    release refuses (vLLM validates ``KernelConfig.moe_backend``) is redrawn from the names it
    accepts, and the all2all backend follows that release's bound backends (``build_config``).
    Refusals are tested on their own (test_unknown_backend_names_are_rejected_before_evaluation,
    tests/unit/test_frontends_and_requests.py)."""
    view = release_view(env)
    ctx = flatten(config)
    if view.accepted_names is not None and _normal(config.moe_backend) not in view.accepted_names:
        ctx["moe_backend"] = draw(st.sampled_from(sorted(n for n in view.accepted_names if n in CATALOG.backend_names or n == "auto")).flatmap(spellings), label="moe_backend (accepted)")
    return build_config(ctx, view)


def _cases(configs: st.SearchStrategy[MoEConfig], envs: st.SearchStrategy[Environment]) -> st.SearchStrategy[Case]:
    @st.composite
    def make(draw: st.DrawFn) -> Case:
        config, env = draw(configs), draw(envs)
        config = draw(_started(config, env))
        tally.bump("configs")
        return Case(config, env)

    return make()


def plausible_cases(*, backend: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Case]:
    """Catalog hardware, named schemes, realistic shapes and parallelism, packages installed."""
    return _cases(_configs(_PLAUSIBLE, st.just(True), backend), environments(installed=True, extras=False))


def wild_cases(*, backend: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Case]:
    """The whole vocabulary: odd devices, unnamed quant pairs, odd and huge shapes, junk env values."""
    return _cases(_configs({}, st.booleans(), backend), environments())


@st.composite
def changed_inputs(draw: st.DrawFn, case: Case, leaves: tuple[str, ...]) -> Case:
    """``case`` with some of ``leaves`` redrawn, packages the tables never read added or removed,
    and environment variables outside the closed list set or unset."""
    config = case.config
    for path in draw(st.lists(st.sampled_from(leaves), min_size=1, unique=True), label="leaves"):
        config = with_leaf(config, path, draw(leaf_values(path, config), label=path), release_view(case.env))
    env = case.env
    for name in draw(st.lists(unread_packages(), max_size=2, unique=True), label="packages"):
        env = env.with_package(name, draw(st.one_of(st.none(), versions()), label=name))
    for var in draw(st.lists(unread_env_vars(), max_size=2, unique=True), label="env vars"):
        env = env.with_env(var, draw(st.one_of(st.none(), text_values()), label=var))
    return Case(config, env)


def _allowed(spec: Any) -> list[Any] | None:
    """The values a declared ``in`` list allows (``None``: not a list spec)."""
    if isinstance(spec, list):
        return spec
    if isinstance(spec, dict) and "in" in spec:
        return [v for v in spec["in"] if v not in spec.get("not_in", ())]
    return None


def _pick(draw: st.DrawFn, spec: Any, default: st.SearchStrategy[Any]) -> Any:
    allowed = _allowed(spec)
    return draw(st.sampled_from(allowed)) if allowed else draw(default)


def _pairing(entry: Any, catalog: Any) -> list[str]:
    return sorted({d for pf in catalog.prepare_finalize if pf.interface is entry.interface and pf.activation_format is entry.activation_format for d in pf.dispatch})


@st.composite
def _targeted(draw: st.DrawFn, backend: st.SearchStrategy[str] | None, kernels: tuple[str, ...] | None, catalog: Any = None) -> Case:
    catalog = catalog if catalog is not None else CATALOG
    # Sampled by position: hypothesis hashes sampled elements for its labels, and an entry hashes
    # every one of its compiled checks (a third of the generation time); same draws, same entries.
    entries = [e for e in catalog.experts if (kernels is None or e.id in kernels) and e.implements is None]
    entry = entries[draw(st.sampled_from(range(len(entries))))]
    declared = entry.declared
    supports = declared["supports"]
    ctx: dict[str, Any] = {}
    for path in LEAF_PATHS:
        if not path.startswith("device.") and path not in ("parallel.all2all_backend",):
            ctx[path] = draw(_PLAUSIBLE.get(path, LEAVES[path])(ctx))
    # Device: a catalog device of one of the kernel's platforms that meets its requirements, if any.
    platform = draw(st.sampled_from(sorted(declared["platforms"])))
    reqs = declared["platforms"][platform] or {}
    fitting = [d for d in CATALOG_DEVICES if d.platform.value == platform and all(
        (_allowed(spec) is None or value in _allowed(spec)) for spec, value in (
            (reqs.get("device_capability"), d.capability), (reqs.get("gpu_arch"), d.arch), (reqs.get("cpu_arch"), d.arch), (reqs.get("cpu_amx"), d.cpu_amx)) if spec is not None)]
    if fitting:
        device = draw(st.sampled_from(fitting))
    else:
        cap = _pick(draw, reqs.get("device_capability"), st.sampled_from(CAPABILITIES)) if platform == "cuda" else None
        arch = _pick(draw, reqs.get("gpu_arch") or reqs.get("cpu_arch"), st.sampled_from(ARCHES)) if platform != "cuda" else None
        device = Device(platform, cap, arch, _pick(draw, reqs.get("cpu_amx"), st.booleans()) if platform == "cpu" else None)
    for f in dataclasses.fields(Device):
        ctx[f"device.{f.name}"] = getattr(device, f.name)
    if grouping_problems(ctx["num_experts"], ctx["num_expert_group"], ctx["topk_group"], platform=device.platform.value):
        # The groups were drawn before the device: CPU takes only groups that divide the experts,
        # and reads topk_group for every grouping (core/config.grouping_problems).
        ctx["topk_group"] = None
        ctx["num_expert_group"] = draw(_PLAUSIBLE["num_expert_group"](ctx))
        ctx["topk_group"] = draw(_PLAUSIBLE["topk_group"](ctx))
    # Checkpoint fields from the kernel's supports lists.
    if "quant_scheme" in supports:
        ctx["quant"] = SCHEMES[_pick(draw, supports["quant_scheme"], st.sampled_from(list(SCHEMES)))]
    elif "weight_quant" in supports:
        weights = [w for w in (_allowed(supports["weight_quant"]) or list(QUANT_KEYS)) if w != "none"] or [None]
        acts = [a if a != "none" else None for a in (_allowed(supports.get("activation_quant")) or ["none"])]
        ctx["quant"] = QuantScheme(draw(st.sampled_from(weights)), draw(st.sampled_from(acts)) if weights != [None] else None)
    if getattr(ctx.get("quant"), "weight", None) and ctx["quant"].weight.startswith("fp8_static_block"):
        ctx["quant_method"] = draw(_block_method(ctx))
        ctx["weight_block_size"] = draw(_block_size(ctx))
    for path, field in (("activation", "activation"), ("routing_method", "routing_method"), ("router_logits_dtype", "router_logits_dtype"), ("in_dtype", "in_dtype"), ("has_bias", "has_bias"), ("lora", "lora"), ("batch_invariant", "batch_invariant")):
        if field in supports and _allowed(supports[field]):
            ctx[path] = draw(st.sampled_from(_allowed(supports[field])))
    for feature, path in (("lora", "lora"), ("batch_invariant", "batch_invariant"), ("eplb", "parallel.enable_eplb")):
        if not declared["features"][feature]:
            ctx[path] = False
    # Parallelism from the dispatch kinds a prepare/finalize pairs it with (and its all2all list).
    a2a = set(_allowed(supports.get("all2all")) or ("none", *(b.value for b in All2AllBackend)))
    dispatch = draw(st.sampled_from([d for d in _pairing(entry, catalog) if d in a2a or d in ("none", "allgather_reducescatter") and "none" in a2a] or _pairing(entry, catalog)))
    ctx["parallel.num_redundant_experts"] = 0
    ctx["parallel.pcp_size"] = 1  # the dispatch below is made with TP and DP alone
    if dispatch == "none":
        ctx["parallel.dp_size"], ctx["parallel.use_ep"] = 1, draw(st.booleans())
        ctx["parallel.all2all_backend"] = All2AllBackend.ALLGATHER_REDUCESCATTER
    elif dispatch == "allgather_reducescatter" and "allgather_reducescatter" not in a2a:
        ctx["parallel.dp_size"], ctx["parallel.use_ep"], ctx["parallel.all2all_backend"] = draw(st.sampled_from((2, 4, 8))), False, All2AllBackend.ALLGATHER_REDUCESCATTER
    else:
        ctx["parallel.dp_size"], ctx["parallel.use_ep"], ctx["parallel.all2all_backend"] = draw(st.sampled_from((2, 4, 8))), True, All2AllBackend(dispatch)
    if ctx["parallel.ep_rank"] is not None and ctx["parallel.ep_rank"] >= ctx["parallel.tp_size"] * ctx["parallel.dp_size"]:
        ctx["parallel.ep_rank"] = None
    if ctx["parallel.sequence_parallel"] and not (ctx["parallel.use_ep"] and ctx["parallel.tp_size"] > 1 and ctx["parallel.dp_size"] > 1):
        ctx["parallel.sequence_parallel"] = None
    if backend is not None:
        ctx["moe_backend"] = draw(backend)
    else:
        # A name the release accepts that requests the kernel's backend (vLLM refuses the others at start).
        ctx["moe_backend"] = draw(st.sampled_from(("auto", "auto", request_name(catalog or CATALOG, entry.backend))))
    config = build_config(ctx)
    # Environment: every package at a version the tables accept; the kernel's env requirements met.
    env_vars = {}
    for var, allowed in (declared.get("env") or {}).items():
        value = draw(st.sampled_from(list(allowed)))
        env_vars[var] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    packages = tuple((name, _satisfying_version(name)) for name in catalog.package_names if name != catalog.engine.name)
    tally.bump("configs")
    return Case(config, Environment(packages, frozenset(), False, tuple(env_vars.items())))


def targeted_cases(*, backend: st.SearchStrategy[str] | None = None, kernels: tuple[str, ...] | None = None, catalog: Any = None) -> st.SearchStrategy[Case]:
    """Configs drawn from one kernel's declared support (platform, device, quant, activation, routing,
    dtypes, pairing, env), so that rarely selected kernels are often eligible too.

    ``kernels``: draw only for these kernel ids (default: every standalone kernel of the catalog).
    ``catalog``: the shipped engine catalog by default (the runtime catalog for our kernels).
    """
    return _targeted(backend, kernels, catalog)


REFERENCE_NEWEST = "0.33.0"
"""The newest vLLM release the reference model (tests/property/reference_model.py) re-derives:
it does not model 0.34.0's PaddedStandard formats (per-release ``by_engine`` formats, the superset
pairing rule, the dispatch format check). Cases answered for a later release are left out until it
does; the differential tier holds the tables to vLLM 0.34.0 itself."""


def reference_models(case: Case) -> bool:
    """Whether the reference model re-derives ``case``: its answer's release (or the release
    standing in for it) is at most :data:`REFERENCE_NEWEST`."""
    from packaging.version import Version

    release = CATALOG.release(case.env)
    version = Version(release.stand_in) if not release.modelled else release.parsed
    return version <= Version(REFERENCE_NEWEST)


def for_reference(case: Case) -> Case:
    """``case``, declared for vLLM :data:`REFERENCE_NEWEST` when its answer would be for a later
    release (an undeclared vLLM is answered for the newest modelled release, 0.34.0 now)."""
    if reference_models(case):
        return case
    return Case(case.config, case.env.with_package("vllm", REFERENCE_NEWEST))


def cases(*, backend: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Case]:
    """:func:`plausible_cases`, :func:`targeted_cases` or :func:`wild_cases`; ``backend`` fixes the
    ``moe_backend`` strategy; only cases the reference model re-derives (:func:`reference_models`)."""
    return st.one_of(plausible_cases(backend=backend), targeted_cases(backend=backend), wild_cases(backend=backend)).filter(reference_models)


# ------------------------------------------------------------------------------ fixed sample pool


def pinned(env: Environment | None = None, **leaves: Any) -> Case:
    """A fixed case: a 64-expert bf16 layer on an H200 with ``leaves`` overridden
    (``parallel__tp_size=8`` for the leaf ``parallel.tp_size``)."""
    ctx = flatten(MoEConfig(num_experts=64, top_k=4, hidden_size=2048, intermediate_size=768, device=GPU_CATALOG["H200"].device))
    for key, value in leaves.items():
        path = key.replace("__", ".")
        if path == "device":
            ctx.update({f"device.{f.name}": getattr(value, f.name) for f in dataclasses.fields(Device)})
            continue
        assert path in ctx, path
        ctx[path] = value
    return Case(build_config(ctx), env if env is not None else Environment())


REGRESSIONS: Mapping[str, tuple[Case, str]] = {
    # why-not's "TP only" preset of tp*dp ranks passed the validator's 2**40 limit after a dp edit.
    "why_not_world_past_the_validator_limit": (
        pinned(device=GPU_CATALOG["GB300"].device, quant=SCHEMES["fp8_w16"], routing_method=RoutingMethod.MINIMAX2, in_dtype=DType.FLOAT32, lora=True,
               parallel__tp_size=87085, parallel__dp_size=MAX_PARALLEL, parallel__use_ep=True, parallel__all2all_backend=All2AllBackend.MORI_HIGH_THROUGHPUT,
               parallel__enable_eplb=True, parallel__num_redundant_experts=691774),
        "flashinfer_trtllm",
    ),
    # why-not stopped once installing aiter made aiter_unquantized eligible: the engine then
    # selected it with its DeepEP prepare/finalize unchecked (deep-ep absent), and the search did
    # not go on to install deep-ep too (found by the doors property test, 2026-12-03).
    "why_not_goes_past_an_unchecked_prepare_finalize": (
        pinned(
            Environment.declared(["vllm==0.33.0"], absent=["aiter", "deep-ep"], env={"VLLM_ROCM_USE_AITER": "1", "VLLM_ROCM_USE_AITER_MOE": "1"}),
            device=GPU_CATALOG["MI300X"].device, parallel__dp_size=2, parallel__use_ep=True, parallel__all2all_backend=All2AllBackend.DEEPEP_HIGH_THROUGHPUT,
        ),
        "aiter",
    ),
}
"""Cases (with a backend name) that once broke an invariant; tests/property/test_regressions.py runs them every time."""

RUNTIME_REGRESSIONS: Mapping[str, tuple[Case, str]] = {
    # why-not installed torch 1.0.0 for the presence check, then could not move it into >=2.9.
    # torch_grouped_mm is our runtime's kernel: the case runs against the runtime tables.
    "why_not_installs_inside_the_version_range": (pinned(Environment.declared(absent=["torch"])), "torch_grouped_mm"),
}
"""The same, for backends of the runtime tables (``Oracle.default(view="runtime")``)."""
