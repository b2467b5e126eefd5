"""A second, plain-Python reading of the shipped tables, for the failure invariants.

It shares no code with the compiler (``moe_oracle.core.catalog``, ``checks``, ``predicates``) nor
with ``moe_oracle.core.normalize``: the tables are read with ``yaml.safe_load`` from the package
directories, every rule a candidate is subject to is rebuilt from the YAML as documented in
``docs/architecture.md`` and the table schemas' descriptions, and the normalized values are
re-derived from ``MoEConfig`` as vLLM's ``FusedMoEParallelConfig.make`` defines them. What it
borrows from the package is vocabulary only: enums, ``QuantScheme.name``/``.family``,
``Activation.is_gated``, ``fields.field_spec(...).code`` (the documented default reason code of a
``supports`` predicate) and the ``ABSENT`` sentinel.

Semantics (the YAML contract):

* a value spec is a list (one of) or a mapping of ``in``, ``not_in``, ``min``, ``max``,
  ``multiple_of`` (numbers only), ``present`` and ``version`` (PEP 440, packages only);
* a rule applies when every field of its ``if``/``when`` holds; an unknown (``None``) input
  makes it abstain, never pass silently; a known-bad rule fails when its condition holds;
* rule ids: ``<owner>.platform``, ``<owner>.platforms.<platform>.<field>``,
  ``<owner>.packages.<name>[.version]``, ``<owner>.env.<VAR>``, ``<id>.supports.<field>``,
  ``<id>.features.<feature>``, ``<id>.pairing``, ``request.<backend>``, constraint ids,
  known-bad ids, and priority order / opt-in ids for ``path_not_enabled``;
* an item with ``engine: {vllm: <specifier>}`` exists only for the releases in it; the release is
  the declared ``vllm`` package, else the newest release ``rules/engine.yaml`` lists;
* known-bad rules are rules only under the safe policy; under the faithful policy a shortcut
  (``rules/shortcuts.yaml``) whose ``when`` holds puts its kernels first and returns the first
  ``try`` kernel whose rules pass except the ones its early return does not read (not_requested,
  path_not_enabled, the activation-format peek, construction rules), else ``otherwise`` (none: no
  winner), whose failing rules are then not failures unless one binds every kernel or is an
  ``after_selection`` rule (the layer is refused then); a shortcut with ``selected`` runs after
  selection and replaces one of those winners by ``otherwise``;
* construction rules (a prepare/finalize's own rules, ``<id>.pairing`` and constraints marked
  ``checked: construction``) are checked when vLLM
  builds the selected kernel: under the faithful policy they do not stop a selection (the first
  candidate failing nothing else wins, its failures waived), while an ``after_selection``
  constraint the first such candidate fails refuses the layer (no winner);
* a family request map (``aliases.yaml requests``, the first whose ``when`` holds) reads
  ``moe_backend`` itself: names it lists request their backends (only the listed ``kernels``
  where it lists kernels), ``auto`` names read as auto, any other name requests nothing; its
  rule id replaces ``request.<backend>``; requested backends are tried first, in mapping order;
* a front-end key rewrite (``frontends.yaml rewrites``, the first whose ``when`` holds) gives
  the oracle other quant keys; a name that binds an all2all backend (``all2all``) sets the
  all2all backend left at its default;
* a priority adjustment moves backends (in their current relative order) to the front, the
  back, or directly before/after an anchor; a backend already ahead of its before-anchor stays.

Every field of the engine's normalized record is derived here from ``MoEConfig``,
``Environment`` and the YAML; none is taken from the engine's record (issue 25). The WNA16
serving method, the MXFP4 selector, the FP8 weight block (with the ``blocks`` of
``rules/frontends.yaml``), the weight-group, EPLB and activation-parameter fields are derived in
:mod:`tests.property.reference_fields` (its docstring cites vLLM for each); the one field no input
carries, ``cpu_amx_fp8``, is stated there as the constant both sides assume, with the reason.
``check_normalized_values`` compares every field derived here with the engine's record.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import yaml
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from moe_oracle.core._resources import table_dirs
from moe_oracle.core.config import MoEConfig
from moe_oracle.core.quant import QUANT_KEYS, SCHEMES, QuantScheme
from moe_oracle.core.environment import ABSENT, HOST_TOOLS, Environment
from moe_oracle.core.fields import field_spec
from moe_oracle.core.vocab import All2AllBackend, Platform
from tests.property.reference_fields import checkpoint_format, derived_fields, fp8_block_fields, marlin_moe_fits, serving_method

__all__ = ["Judgement", "Model", "Outcome", "Rule", "load_model"]


def _consumed(fmt: str) -> list[str]:
    """The prepare/finalize formats experts of format ``fmt`` take: vLLM 0.34.0
    ``FusedMoEActivationFormat.is_superset`` (PaddedStandard experts also take Standard input)."""
    return [fmt, *(["standard"] if fmt == "padded_standard" else [])]


class Outcome(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    ABSTAIN = "abstain"



# vLLM 0.29.0-0.34.0 CUDA wheels carry these modules (vllm/third_party/deep_gemm, triton_kernels),
# which has_deep_gemm / has_triton_kernels import when the package is not installed (read from the
# wheels' RECORD and vllm/utils/import_utils.py; written here apart from core/packages.VENDORED).
_WHEEL_COPIES = ("deep-gemm", "triton-kernels")


def _wheel_copy(vllm: str | None, otherwise: Any, unversioned: bool) -> Any:
    """The package's value where it is neither installed nor declared absent: vllm's version where
    that wheel carries the copy, unknown (None) where vllm may or may not (installed at an unknown
    version, another build, a release not read), else ``otherwise``."""
    if vllm is None:
        return None if unversioned else otherwise
    installed = Version(vllm)
    if Version(installed.public) < Version("0.29.0"):
        return otherwise
    if installed.release[:2] > (0, 34):
        return None
    return vllm if installed.local is None or str(installed.local).startswith("cu") else None

@dataclass(frozen=True)
class Rule:
    """One rule as the YAML states it."""

    rule: str
    code: str
    field: str
    spec: Any  # value spec on ``field``; None for a known-bad (deny) rule
    when: tuple[tuple[str, Any], ...] = ()
    deny: bool = False

    def __post_init__(self) -> None:
        # ``spec_holds`` of each condition and of the spec, compiled once per rule (:func:`spec_test`).
        # Not a field: equality and the repr stay the YAML's.
        object.__setattr__(self, "_when_tests", tuple((name, spec_test(spec)) for name, spec in self.when))
        object.__setattr__(self, "_test", None if self.deny else spec_test(self.spec))

    def outcome(self, values: Mapping[str, Any]) -> Outcome:
        unknown = False
        when, test = self._when_tests, self._test
        for name, holds in when:
            value = values.get(name)
            if value is None:
                unknown = True
            elif not holds(value):
                return Outcome.PASS
        if self.deny:
            return Outcome.ABSTAIN if unknown else Outcome.FAIL
        value = values.get(self.field)
        if value is None:
            return Outcome.ABSTAIN
        if test(value):  # type: ignore[misc]
            return Outcome.PASS
        return Outcome.ABSTAIN if unknown else Outcome.FAIL

    def observed(self, values: Mapping[str, Any]) -> Any:
        if self.deny:
            return {name: values.get(name) for name, _ in self.when}
        return values.get(self.field)


def _local_experts(physical: int, ep: int, rank: int | None) -> int:
    """Experts on one EP rank (vLLM determine_expert_map: the first ``physical % ep`` ranks hold
    one more); without a rank, the largest share."""
    base, extra = divmod(physical, ep)
    if rank is None:
        return base + (1 if extra else 0)
    return base + (1 if rank < extra else 0)


def _zero_point(config: MoEConfig) -> bool | None:
    """Whether the checkpoint's weights carry zero points: as declared, else what the weight key
    says (an ``_asym`` key is asymmetric); ``None`` for an unquantized layer (nothing declared)."""
    if config.weight_zero_point is not None:
        return config.weight_zero_point
    return None if config.quant.weight is None else not QUANT_KEYS[config.quant.weight].symmetric


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@lru_cache(maxsize=None)
def _specifier(spec: str) -> SpecifierSet:
    return SpecifierSet(spec)


def spec_holds(spec: Any, value: Any) -> bool:
    """Whether ``value`` satisfies a YAML value spec."""
    if isinstance(spec, list):
        return value in spec
    for key, arg in spec.items():
        if key == "in" and value not in arg:
            return False
        if key == "not_in" and value in arg:
            return False
        if key == "min" and not (_number(value) and value >= arg):
            return False
        if key == "max" and not (_number(value) and value <= arg):
            return False
        if key == "multiple_of" and not (_number(value) and value % arg == 0):
            return False
        if key == "present" and (value is not ABSENT) != bool(arg):
            return False
        if key == "version" and value is not ABSENT:
            try:
                if Version(value) not in _specifier(arg):
                    return False
            except InvalidVersion:
                return False
    return True


def spec_test(spec: Any) -> Callable[[Any], bool]:
    """``lambda value: spec_holds(spec, value)``, with the spec read once (the same answers)."""
    if isinstance(spec, list):
        return lambda value: value in spec
    tests: list[Callable[[Any], bool]] = []
    for key, arg in spec.items():
        if key == "in":
            tests.append(lambda v, a=arg: v in a)
        elif key == "not_in":
            tests.append(lambda v, a=arg: v not in a)
        elif key == "min":
            tests.append(lambda v, a=arg: _number(v) and v >= a)
        elif key == "max":
            tests.append(lambda v, a=arg: _number(v) and v <= a)
        elif key == "multiple_of":
            tests.append(lambda v, a=arg: _number(v) and v % a == 0)
        elif key == "present":
            tests.append(lambda v, a=bool(arg): (v is not ABSENT) == a)
        elif key == "version":
            tests.append(lambda v, a=arg: spec_holds({"version": a}, v))
    if len(tests) == 1:
        return tests[0]
    return lambda value: all(t(value) for t in tests)


# vLLM 0.29.0-0.33.0 Q/auto_gptq.py AutoGPTQMoEMethod, Q/auto_awq.py AutoAWQMoEMethod,
# Q/moe_wna16.py MoeWNA16Method: (method, bits) -> (weight key, weight key for group 32).
_WNA16_METHOD_KEYS = {
    ("gptq", 4): ("int4_static", "int4_static"),
    ("gptq", 8): ("int8_static", "int8_static"),
    ("awq", 4): ("int4_static", "int4_static"),
    ("moe_wna16", 4): ("int4_static", "int4_static_g32"),
    ("moe_wna16", 8): ("int8_static", "int8_static"),
}
_FEATURE_FIELD = {"lora": "lora", "batch_invariant": "batch_invariant", "eplb": "enable_eplb"}
# vLLM FusedMoEParallelConfig.use_batched_activation_format: DeepEP low-latency and NIXL-EP.
_BATCHED_DISPATCH = ("deepep_low_latency", "nixl_ep")


def _mori_generation(config: MoEConfig, env: Environment) -> str:
    """``mori_epv1`` or ``mori_epv2`` for ``--all2all mori`` on one host, as vLLM 0.34.0 resolves it
    (vllm/config/parallel.py resolve_mori_all2all, called only by RocmPlatform.check_and_update_config,
    which passes validated_arch = gfx950/gfx1250 and lets gfx1250 keep EPv2 under SDMA;
    vllm/utils/import_utils.py mori_epv2_unavailable_reason: MoRI >= 1.2.4; a MoRI whose version the
    environment does not give is taken to have EPv2, as the engine documents)."""
    if config.device.platform is not Platform.ROCM:
        return "mori_epv1"  # mori_ep_v2 stays unset: FusedMoEParallelConfig reads it as false
    raw = dict(env.env)
    if "VLLM_MORI_EP_V2" in raw:
        return "mori_epv2" if int(raw["VLLM_MORI_EP_V2"]) else "mori_epv1"  # vllm/envs.py bool(int(...))
    mori = {canonicalize_name(n): ver for n, ver in env.packages}.get("mori")
    if mori is None and ("mori" in {canonicalize_name(n) for n in env.absent} or env.complete):
        return "mori_epv1"
    try:
        old = mori is not None and Version(mori) < Version("1.2.4")
    except InvalidVersion:
        old = True
    arch = config.device.arch
    q, method = config.quant, config.quant_method
    per_tensor = (method == "fp8" and q.weight is not None and "block" not in q.weight) or (
        method in ("modelopt", "compressed-tensors", "quark") and q.activation in ("fp8_static_tensor", "fp8_dynamic_tensor"))
    unsupported = (old or arch not in ("gfx950", "gfx1250")
                   or (raw.get("MORI_ENABLE_SDMA", "0").lower() in ("1", "true") and arch != "gfx1250")
                   or config.moe_backend == "aiter_mega_moe" or config.in_dtype.value != "bfloat16" or per_tensor)
    return "mori_epv1" if unsupported else "mori_epv2"


def _all2all_hidden(hidden: int, dtype: str, all2all: str) -> int:
    """The hidden size create_weights gets (vLLM 0.29.0-0.34.0 P/all2all_utils.py
    maybe_roundup_layer_hidden_size): DeepEP HT / v2 copy rows in 512-byte units; DeepEP LL and
    NIXL-EP kernels exist for eight sizes (vLLM raises above the largest: left as it is here)."""
    if all2all in ("deepep_high_throughput", "deepep_v2"):
        width = 4 if dtype == "float32" else 2
        return (hidden * width + 511) // 512 * 512 // width
    if all2all in _BATCHED_DISPATCH:
        return min((h for h in (2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192) if h >= hidden), default=hidden)
    return hidden


def _code(field: str) -> str:
    return field_spec(field).code.value


@dataclass
class Model:
    """The shipped tables as plain data, with the rules and values derived from them."""

    experts: list[dict[str, Any]]  # in table order (sorted file path, then entry order)
    pfs: list[dict[str, Any]]
    priority: dict[str, Any]
    known_bad: list[dict[str, Any]]
    constraints: list[dict[str, Any]]
    aliases: dict[str, Any]
    env_vars: list[dict[str, Any]]
    overrides: list[dict[str, Any]]
    engine: dict[str, Any]
    shortcuts: list[dict[str, Any]]
    frontends: dict[str, Any]

    def __post_init__(self) -> None:
        self.all_experts = self.experts
        self.by_id = {e["id"]: e for e in self.experts}
        self.backends = sorted({e["backend"] for e in self.experts})
        self.packages = sorted(self._package_names() | {self.engine["name"]})

    # ------------------------------------------------------------------ engine releases

    def release(self, env: Environment) -> Version:
        """The engine version whose ranges hold: the declared or probed one (a modelled release,
        or a local build of one, or one older than every modelled release), the newest modelled
        release at or below it for any other (its stand-in), and the newest modelled release when
        none is declared."""
        declared = dict((canonicalize_name(n), v) for n, v in env.packages).get(self.engine["name"])
        modelled = sorted(Version(r["version"]) for r in self.engine["releases"])
        if not declared:
            return modelled[-1]
        version = Version(declared)
        below = [m for m in modelled if m <= version]
        return version if Version(version.public) in modelled or not below else below[-1]

    def holds_for(self, raw: Mapping[str, Any], env: Environment) -> bool:
        spec = (raw.get("engine") or {}).get(self.engine["name"])
        return spec is None or SpecifierSet(spec).contains(self.release(env), prereleases=True)

    def for_release(self, env: Environment) -> "Model":
        """The model with only the items that hold for ``env``'s engine release (memoized per release)."""
        release = self.release(env)
        cache = self.__dict__.setdefault("_releases", {})
        if release not in cache:
            cache[release] = self._for_release(env)
        return cache[release]

    def _for_release(self, env: Environment) -> "Model":
        keep = lambda items: [i for i in items if self.holds_for(i, env)]  # noqa: E731
        experts = [dict(e, constraints=keep(e.get("constraints") or ())) for e in keep(self.experts)]
        pfs = [dict(p, constraints=keep(p.get("constraints") or ())) for p in keep(self.pfs)]
        priority = dict(self.priority, orders=keep(self.priority["orders"]), adjustments=keep(self.priority.get("adjustments") or ()), opt_in_only=keep(self.priority.get("opt_in_only") or ()))
        aliases = dict(self.aliases, backends={n: a for n, a in self.aliases["backends"].items() if self.holds_for(a, env)}, requests=keep(self.aliases.get("requests") or ()))
        frontends = dict(self.frontends, rewrites=keep(self.frontends.get("rewrites") or ()), blocks=keep(self.frontends.get("blocks") or ()))
        return Model(experts, pfs, priority, keep(self.known_bad), keep(self.constraints), aliases, keep(self.env_vars), keep(self.overrides), self.engine, keep(self.shortcuts), frontends)

    # ------------------------------------------------------------------ names and packages

    def alias_targets(self, alias: str) -> tuple[str, ...]:
        """The backends an alias requests (those of the release); ``()`` where the alias does not
        apply: none of its backends exists, or it is a backend's own id and lists another first."""
        raw = self.aliases["backends"].get(alias)
        targets = tuple(b for b in (raw or {}).get("backends", ()) if b in self.backends)
        if not targets or (alias in self.backends and targets[0] != alias):
            return ()
        return targets

    def names_for(self, backend: str) -> list[str]:
        """Every ``moe_backend`` name that selects ``backend``: its id and its aliases."""
        return sorted({backend} | {alias for alias in self.aliases["backends"] if backend in self.alias_targets(alias)})

    def resolve(self, moe_backend: str) -> tuple[str, ...] | None:
        """Backends a (normalized) ``moe_backend`` name requests where no family request map reads
        it; ``None`` for auto; ``()`` for a name the release accepts that no backend answers to."""
        if moe_backend == "auto":
            return None
        if self.alias_targets(moe_backend):
            return self.alias_targets(moe_backend)
        if moe_backend in self.backends:
            return (moe_backend,)
        return tuple(sorted({b for rm in self.aliases.get("requests") or () for b in self.request_names(rm)[0].get(moe_backend, ())}))

    # ------------------------------------------------------------------ family request maps

    def request_names(self, rm: Mapping[str, Any]) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]], dict[str, str]]:
        """(name -> backends, name -> the only kernels it tries, name -> the activation format it forces)."""
        names: dict[str, tuple[str, ...]] = {}
        kernels: dict[str, tuple[str, ...]] = {}
        formats: dict[str, str] = {}
        for name, target in rm["names"].items():
            if isinstance(target, list):
                names[name] = tuple(target)
            elif "kernels" in target:
                kernels[name] = tuple(k for k in target["kernels"] if k in self.by_id)
                names[name] = tuple(dict.fromkeys(self.by_id[k]["backend"] for k in kernels[name]))
            else:
                names[name] = tuple(target["backends"])
                if "activation_format" in target:
                    formats[name] = target["activation_format"]
        return names, kernels, formats

    def family_map(self, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first request map whose ``when`` holds (an unknown input: it does not match)."""
        return next((rm for rm in self.aliases.get("requests") or () if self._holds(rm["when"], values) is True), None)

    def request(self, values: Mapping[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, ...] | None, str | None]:
        """(the family request map, the backends requested (``None``: auto; ``()``: none), by what:
        ``moe_backend`` or ``override`` (an environment variable))."""
        name = values["moe_backend"]
        by = "override" if values.get("_override") else "moe_backend"
        rm = self.family_map(values)
        if name == "auto":
            return rm, None, None
        if rm is None:
            return None, ((name,) if by == "override" else self.resolve(name)), by
        names = self.request_names(rm)[0]
        return rm, (names.get(name, (name,)) if by == "override" else names.get(name, ())), by

    def _package_names(self) -> set[str]:
        names: set[str] = set()
        for raw in (*self.experts, *self.pfs, *self.known_bad):
            names |= set(raw.get("packages") or {})
        # A gate on a package's usability reads others (flashinfer-cubin); a kernel's own
        # constraint may read a package it does not list (aiter_mxfp8: flydsl before 0.31).
        own = [c for raw in (*self.experts, *self.pfs) for c in raw.get("constraints") or ()]
        for c in (*self.constraints, *own):
            names |= {f[9:] for f in (c["field"], *(c.get("if") or {})) if f.startswith("packages.")}
        return names

    def _package_gates(self, raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Constraints ``applies_to.packages`` binds to an entry that requires one of those packages."""
        required = set(raw.get("packages") or {})
        return [c for c in self.constraints if required & set((c.get("applies_to") or {}).get("packages") or ())]

    # ------------------------------------------------------------------ values

    def values(self, config: MoEConfig, env: Environment) -> dict[str, Any]:
        """Normalized field values, re-derived from the config (vLLM FusedMoEParallelConfig.make),
        after the front end's key rewrite, the family's reading of ``moe_backend``, the FP8 block
        rule and the environment overrides; nothing is read from the engine's record.
        ``_override`` (not a field) marks a request made by an override variable."""
        alias = self.aliases["backends"].get(config.moe_backend) or {}
        # A name that dispatches and combines itself binds its all2all backend (vLLM 0.32+
        # bind_passthrough_all2all_backend), replacing the default one.
        if alias.get("all2all") and config.parallel.all2all_backend is All2AllBackend.ALLGATHER_REDUCESCATTER:
            config = replace(config, parallel=replace(config.parallel, all2all_backend=All2AllBackend(alias["all2all"])))
        # A backend name that names an activation key (vLLM's *_afp8) sets the scheme, when the
        # layer's weights are the ones it applies to (rules/aliases.yaml quant_scheme).
        implied = alias.get("quant_scheme")
        if implied is not None and SCHEMES[implied].weight == config.quant.weight:
            config = replace(config, quant=SCHEMES[implied])
        v = self._derive(config, env)
        original = config
        for rw in self.frontends.get("rewrites") or ():
            if self._holds(rw["when"], v) is True:
                q = config.quant
                activation = q.activation if "activation" not in rw else (None if rw["activation"] == "none" else rw["activation"])
                v = self._derive(replace(config, quant=QuantScheme(rw.get("weight") or q.weight, activation)), env)
                break
        if v["dispatch"] == "mori":
            v["dispatch"] = _mori_generation(original, env)  # read from the checkpoint, before any rewrite
        rm = self.family_map(v)
        if rm is not None:
            names, _, formats = self.request_names(rm)
            name = v["moe_backend"]
            if name != "auto" and name in (rm.get("auto") or ()):
                v["moe_backend"] = "auto"
            if name in formats:
                v["activation_format"] = formats[name]
            elif rm.get("asks_format") and (name == "auto" or name in (rm.get("auto") or ()) or name in names):
                # The family's selector asks every experts class with this format (0.34.0 LUT-B: standard).
                v["activation_format"] = rm["asks_format"]
        # The FP8 front end's block rule: the first whose ``when`` holds; it pads the TP shard
        # only for an explicit moe_backend, not for an override variable (below).
        block = next((b for b in self.frontends.get("blocks") or () if v["weight_block"] != "none" and self._holds(b["when"], v) is True), None)
        if block is not None:
            refinable = tuple(b for b in block.get("refinable") or () if b in self.backends)
            v.update(fp8_block_fields(v, block, self.request(v)[1], refinable))
        # An explicitly set override variable requests a backend as moe_backend would.
        if v["moe_backend"] == "auto":
            raw_env = dict(env.env)
            for ov in self.overrides:
                if any(var in raw_env for var in ov["explicit"]) and self._holds(ov["when"], v) is True:
                    v["moe_backend"] = ov["request"]
                    v["_override"] = True
                    break
        return v

    def _derive(self, config: MoEConfig, env: Environment) -> dict[str, Any]:
        dev, par, q = config.device, config.parallel, config.quant
        # GPTQ, AWQ and MoeWNA16 build the weight key from the bit width (MoeWNA16: and group 32)
        # and pass zero points apart; GPTQ/AWQ layers Marlin cannot serve go to MoeWNA16.
        fmt = checkpoint_format(config.quant_method)
        method = serving_method(fmt if fmt is not None else ("none" if q.weight is None else None), marlin_moe_fits(config))
        if q.weight is not None and method is not None:
            key = QUANT_KEYS[q.weight]
            bits = 4 if key.dtype.startswith("uint4") else 8 if key.dtype.startswith("uint8") else None
            pair = _WNA16_METHOD_KEYS.get((method, bits))
            if pair is not None:
                g32 = config.weight_group_size == 32 if config.weight_group_size is not None else key.granularity.name == "GROUP_32"
                q = QuantScheme(pair[1] if g32 else pair[0], q.activation)
        cuda, cpu = dev.platform is Platform.CUDA, dev.platform is Platform.CPU
        gpu = dev.platform in (Platform.ROCM, Platform.XPU)
        # vLLM 0.29.0-0.34.0 P/config.py FusedMoEParallelConfig.make: TP flattened across DP and PCP;
        # use_all2all_kernels = use_ep and (dp_size > 1 or pcp_size > 1); the naive DP P/F reads dp_size alone.
        world = par.tp_size * par.pcp_size * par.dp_size
        use_ep = par.use_ep and world > 1
        all2all_on = use_ep and (par.dp_size > 1 or par.pcp_size > 1)
        all2all = par.all2all_backend.value if all2all_on else "none"
        dispatch = all2all if all2all_on else ("allgather_reducescatter" if par.dp_size > 1 else "none")
        if par.all2all_backend is All2AllBackend.PASSTHROUGH:
            # vLLM 0.33.0 P/config.py use_passthrough_all2all: not gated on the all2all kernels,
            # the experts dispatch and combine themselves in every topology.
            dispatch = "passthrough"
        moe_tp = 1 if use_ep else world
        ep = world if use_ep else 1
        v: dict[str, Any] = {
            "platform": dev.platform.value,
            "device_capability": dev.capability if cuda else "none",
            "gpu_arch": dev.arch if gpu else "none",
            "cpu_arch": dev.arch if cpu else "none",
            "cpu_amx": dev.cpu_amx if cpu else False,
            "quant_scheme": q.name,
            "weight_quant": q.weight or "none",
            "activation_quant": q.activation or "none",
            "quant_family": q.family.value,
            "quant_method": fmt if fmt is not None else ("none" if q.weight is None else None),
            "activation": config.activation.value,
            "is_gated": config.activation.is_gated,
            "swiglu_clamp": config.swiglu_limit is not None,
            "routing_method": config.routing_method.value,
            "router_logits_dtype": (config.router_logits_dtype or config.in_dtype).value,
            "in_dtype": config.in_dtype.value,
            "has_bias": config.has_bias,
            "num_experts": config.num_experts,
            "num_local_experts": _local_experts(config.num_experts + (par.num_redundant_experts if use_ep else 0), ep, par.ep_rank if use_ep else None),
            "top_k": config.top_k,
            "hidden_size": config.hidden_size,
            "intermediate_size": config.intermediate_size,
            "intermediate_size_per_partition": config.intermediate_size // moe_tp,
            "intermediate_divisible": config.intermediate_size % moe_tp == 0,
            "padded_hidden_size": _all2all_hidden(config.hidden_size, config.in_dtype.value, all2all),
            "tp_size": par.tp_size,
            "dp_size": par.dp_size,
            "pcp_size": par.pcp_size,
            "moe_tp_size": moe_tp,
            "ep_size": ep,
            "use_ep": use_ep,
            "all2all_backend": par.all2all_backend.value,
            "all2all": all2all,
            "dispatch": dispatch,
            "activation_format": "batched_experts" if dispatch in _BATCHED_DISPATCH else "standard",
            "enable_eplb": par.enable_eplb,
            "num_redundant_experts": par.num_redundant_experts,
            "expert_placement_strategy": par.expert_placement_strategy,
            "lora": config.lora,
            "max_num_tokens": config.max_num_tokens,
            "moe_backend": config.moe_backend,
            # The checkpoint's quantization details, read as compressed-tensors / GPTQ describe them
            # (quantization_config group_size, actorder / desc_act, symmetric): without them every
            # front-end rewrite that tests them (frontends.yaml ct_w4a8_*) abstains here and the
            # re-derivation keeps a scheme vLLM 0.29.0-0.30.0 rewrites.
            "weight_group_size": config.weight_group_size,
            "act_order": config.act_order,
            "weight_zero_point": _zero_point(config),
        }
        raw_env = dict(env.env)
        for var in self.env_vars:
            raw = raw_env.get(var["name"])
            if raw is None:
                v[f"env.{var['name']}"] = var["default"]
            elif var["type"] == "bool" and var["parse"] == "int":
                v[f"env.{var['name']}"] = bool(int(raw))  # vLLM 0.33.0 envs.py; other values fail at start
            elif var["type"] == "bool":
                v[f"env.{var['name']}"] = raw.lower() in ("true", "1")  # parse: true_or_1
            elif var.get("parse") == "lower":
                v[f"env.{var['name']}"] = raw.lower()  # the reading code lowercases (get_humming_moe_gemm_type)
            else:
                v[f"env.{var['name']}"] = raw
        declared_bi = any(var["name"] == "VLLM_BATCH_INVARIANT" for var in self.env_vars)
        v["batch_invariant"] = config.batch_invariant or (declared_bi and "VLLM_BATCH_INVARIANT" in raw_env and v["env.VLLM_BATCH_INVARIANT"])
        installed = {canonicalize_name(n): ver for n, ver in env.packages}
        absent = {canonicalize_name(n) for n in env.absent}
        for name in self.packages:
            v[f"packages.{name}"] = installed.get(name, ABSENT if (name in absent or env.complete) else None)
            if name in _WHEEL_COPIES and name not in installed and name not in absent:
                v[f"packages.{name}"] = _wheel_copy(installed.get("vllm"), v[f"packages.{name}"], "vllm" in {canonicalize_name(n) for n in env.unversioned})
        # A declared or probed modelled release fixes the versions it pins (when they are unknown).
        engine = installed.get(self.engine["name"])
        if engine is not None:
            rel = next((r for r in self.engine["releases"] if Version(r["version"]) == Version(Version(engine).public)), None)
            for name, pinned in ((rel or {}).get("pins") or {}).items():
                if f"packages.{name}" in v and v[f"packages.{name}"] is None:
                    v[f"packages.{name}"] = pinned
        # vLLM's has_zentorch_op holds on ZenCpuPlatform only: an AMD Zen CPU (no vendor in the
        # device model: an x86_64 CPU without AMX) with zentorch installed (vLLM 0.33.0
        # vllm/platforms/__init__.py cpu_platform_plugin, kernels/linear/zentorch_utils.py).
        dev = config.device
        zen = dev.platform is Platform.CPU and dev.arch == "x86_64" and dev.cpu_amx is not True
        if not zen or "zentorch" in absent or (env.complete and "zentorch" not in installed and "zentorch" not in env.unversioned):
            v["zentorch_moe"] = False
        else:  # unknown while the package or the CPU's AMX is
            v["zentorch_moe"] = True if ("zentorch" in installed or "zentorch" in env.unversioned) and dev.cpu_amx is False else None
        for name in HOST_TOOLS:  # found, not found, or unknown (None) as declared or probed
            v[f"tools.{name}"] = dict(env.tools).get(name)
        v.update(derived_fields(config, q.weight, q.activation, v["padded_hidden_size"]))
        return v

    @staticmethod
    def _holds(when: Mapping[str, Any], values: Mapping[str, Any]) -> bool | None:
        unknown = False
        for name, spec in when.items():
            value = values.get(name)
            if value is None:
                unknown = True
            elif not spec_holds(spec, value):
                return False
        return None if unknown else True

    # ------------------------------------------------------------------ rules

    @staticmethod
    def _requirements(owner: str, raw: Mapping[str, Any]) -> Iterator[Rule]:
        yield Rule(f"{owner}.platform", "platform_unsupported", "platform", sorted(raw["platforms"]))
        for plat, reqs in raw["platforms"].items():
            for name, spec in (reqs or {}).items():
                yield Rule(f"{owner}.platforms.{plat}.{name}", "sm_unsupported", name, spec, (("platform", [plat]),))
        for name, spec in (raw.get("packages") or {}).items():
            yield Rule(f"{owner}.packages.{name}", "package_missing", f"packages.{name}", {"present": True})
            if spec:
                yield Rule(f"{owner}.packages.{name}.version", "package_version_unsupported", f"packages.{name}", {"version": spec})
        for var, allowed in (raw.get("env") or {}).items():
            yield Rule(f"{owner}.env.{var}", "env_disabled", f"env.{var}", list(allowed))

    @staticmethod
    def _constraint(raw: Mapping[str, Any]) -> Rule:
        spec = {k: raw[k] for k in ("in", "not_in", "min", "max", "multiple_of", "present", "version") if k in raw}
        return Rule(raw["id"], raw["reason"], raw["field"], spec, tuple((raw.get("if") or {}).items()))

    def pf_for(self, entry: Mapping[str, Any], dispatch: str) -> dict[str, Any] | None:
        """The prepare/finalize with the kernel's interface and format that serves ``dispatch``."""
        consumed = _consumed(entry["activation_format"])
        for pf in self.pfs:
            if pf["interface"] == entry["interface"] and pf["activation_format"] in consumed and dispatch in pf["dispatch"]:
                return pf
        return None

    def _memo(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """``make()``, once per model and key: a rule is built from the YAML once, so the same
        requirement is the same ``Rule`` object for every kernel and every set of values."""
        memo = self.__dict__.setdefault("_rule_memo", {})
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = make()
        return hit

    def _shared_constraint(self, raw: Mapping[str, Any]) -> Rule:
        return self._memo(("constraint", id(raw)), lambda: self._constraint(raw))

    def _static_rules(self, kernel: str) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
        """The rules of ``kernel`` that no value changes: (its own, the layer and family
        constraints that apply to it). :meth:`rules` puts the request rules between the two."""

        def make() -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
            e = self.by_id[kernel]
            own = list(self._requirements(kernel, e))
            own += [Rule(f"{kernel}.supports.{name}", _code(name), name, spec) for name, spec in e["supports"].items()]
            for feature, supported in e["features"].items():
                if not supported:
                    name = _FEATURE_FIELD[feature]
                    own.append(Rule(f"{kernel}.features.{feature}", _code(name), name, [False]))
            own += [self._constraint(c) for c in e.get("constraints") or ()]
            consumed = _consumed(e["activation_format"])
            paired = sorted({d for pf in self.pfs if pf["interface"] == e["interface"] and pf["activation_format"] in consumed for d in pf["dispatch"]})
            # The oracle peeks the activation format before selecting: experts of the other format fail.
            own.append(Rule(f"{kernel}.activation_format", "pairing_incompatible", "activation_format", consumed))
            own.append(Rule(f"{kernel}.pairing", "pairing_incompatible", "dispatch", paired))
            shared = []
            for c in self.constraints:
                applies = c.get("applies_to") or {}
                if applies.get("backends") and e["backend"] not in applies["backends"]:
                    continue
                if e["backend"] in applies.get("except_backends", []):
                    continue
                if applies.get("interfaces") and e["interface"] not in applies["interfaces"]:
                    continue
                if kernel in applies.get("except_kernels", []):
                    continue
                if applies.get("packages") and not set(applies["packages"]) & set(e.get("packages") or {}):
                    continue
                shared.append(self._shared_constraint(c))
            return tuple(own), tuple(shared)

        return self._memo(("static", kernel), make)

    def _shared_ids(self, kernel: str) -> frozenset[int]:
        """``id`` of each layer or family constraint that applies to ``kernel`` (its shared rules)."""
        return self._memo(("shared_ids", kernel), lambda: frozenset(id(r) for r in self._static_rules(kernel)[1]))

    def _context(self, values: Mapping[str, Any]) -> "_Context":
        rm, requested, by = self.request(values)
        auto = values["moe_backend"] == "auto"
        return _Context(rm, requested, by, values["moe_backend"], values["dispatch"], self.order(values) if auto else None, auto, self.request_names(rm)[:2] if rm is not None else None)

    def _request_rules(self, kernel: str, e: Mapping[str, Any], ctx: "_Context") -> tuple[Rule, ...]:
        if ctx.rm is not None and ctx.requested is not None:
            # The family's oracle reads moe_backend itself (vLLM map_<family>_backend).
            rm, (names, kernels) = ctx.rm, ctx.names  # type: ignore[misc]
            backend = e["backend"]
            mine = self._memo(("mine", id(rm), backend), lambda: sorted(n for n, bs in names.items() if backend in bs) or ["(none)"])
            out = (self._memo(("rm", id(rm), backend), lambda: Rule(rm["id"], "not_requested", "moe_backend", mine)),)
            if ctx.by == "moe_backend" and ctx.name in kernels and kernel not in kernels[ctx.name]:
                out += (self._memo(("rm.kernels", id(rm), backend), lambda: Rule(f"{rm['id']}.kernels", "not_requested", "moe_backend", ["(none)"], (("moe_backend", mine),))),)
            return out
        return (self._memo(("request", e["backend"]), lambda: Rule(f"request.{e['backend']}", "not_requested", "moe_backend", ["auto", *self.names_for(e["backend"])])),)

    def _known_bad_rules(self, kernel: str) -> tuple[Rule, ...]:
        def make() -> tuple[Rule, ...]:
            out = []
            for kb in self.known_bad:
                if kernel in kb["kernels"]:
                    when = tuple(kb["when"].items()) + tuple((f"packages.{n}", {"present": True, "version": s}) for n, s in (kb.get("packages") or {}).items())
                    out.append(Rule(kb["id"], "known_bad", ",".join(n for n, _ in when), None, when, deny=True))
            return tuple(out)

        return self._memo(("known_bad", kernel), make)

    def _pf_rules(self, e: Mapping[str, Any], dispatch: str) -> tuple[Rule, ...]:
        def make() -> tuple[Rule, ...]:
            pf = self.pf_for(e, dispatch)
            if pf is None:
                return ()
            own = self._memo(("pf", pf["id"]), lambda: tuple(self._requirements(pf["id"], pf)))
            gates = tuple(replace(self._constraint(c), rule=f"{pf['id']}.{c['id']}") for c in self._package_gates(pf))
            return own + tuple(self._shared_constraint(c) for c in pf.get("constraints") or ()) + gates

        return self._memo(("pf_for", e["id"], dispatch), make)

    def _path_rules(self, e: Mapping[str, Any], ctx: "_Context") -> tuple[Rule, ...]:
        if not ctx.auto:
            return ()
        backend, out = e["backend"], ()
        order = ctx.order
        if order is not None and backend not in set(order["backends"]) | set(self.priority.get("fallback") or ()):
            out = (self._memo(("order", id(order), backend), lambda: Rule(order["id"], "path_not_enabled", "moe_backend", self.names_for(backend))),)

        def opt_in() -> tuple[Rule, ...]:
            return tuple(Rule(opt["id"], "path_not_enabled", "moe_backend", self.names_for(backend), tuple((opt.get("when") or {}).items())) for opt in self.priority.get("opt_in_only") or () if opt["backend"] == backend)

        return out + self._memo(("opt_in", backend), opt_in)

    def rules(self, kernel: str, values: Mapping[str, Any], policy: str = "faithful") -> list[Rule]:
        """Every rule candidate ``kernel`` is subject to under ``values`` (its P/F's included)."""
        return self._rules(kernel, self._context(values), policy)

    def _rules(self, kernel: str, ctx: "_Context", policy: str) -> list[Rule]:
        e = self.by_id[kernel]
        own, shared = self._static_rules(kernel)
        return [
            *own,
            *self._request_rules(kernel, e, ctx),
            *shared,
            *(self._known_bad_rules(kernel) if policy == "safe" else ()),
            *self._pf_rules(e, ctx.dispatch),
            *self._path_rules(e, ctx),
        ]

    def judge(self, values: Mapping[str, Any], policy: str = "faithful") -> "Judgement":
        """The rules of every kernel under ``values``, with their outcomes (see :class:`Judgement`)."""
        return Judgement(self, values, policy)

    # ------------------------------------------------------------------ priority

    def order(self, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first priority order whose ``when`` holds."""
        return next((o for o in self.priority["orders"] if self._holds(o["when"], values) is True), None)

    def backend_order(self, values: Mapping[str, Any]) -> list[str]:
        """Backends in the order they are tried: requested ones first (in the order the name maps
        them), then the matched order; adjustments; fallback; the rest by name."""
        order = self.order(values)
        # A backend none of whose kernels this release has is not tried (an order written for
        # several releases names the newest's backends: AITER_TRITON_MXFP4_MXFP4 from 0.33.0).
        backends = [b for b in order["backends"] if b in self.backends] if order is not None else list(self.backends)
        requested = self.request(values)[1]
        if requested:
            backends = list(requested) + [b for b in backends if b not in requested]
        for adj in self.priority.get("adjustments") or ():
            if self._holds(adj["when"], values) is not True:
                continue
            moved = [b for b in backends if b in adj["move"]]  # in their current relative order
            if not moved:
                continue
            rest = [b for b in backends if b not in moved]
            if adj["to"] == "front":
                backends = moved + rest
            elif adj["to"] == "back":
                backends = rest + moved
            else:
                where, anchor = adj["to"].split(":", 1)
                if anchor not in rest:
                    continue
                if where == "before" and all(backends.index(b) < backends.index(anchor) for b in moved):
                    continue  # already ahead of its anchor: it stays (vLLM prioritize_humming)
                at = rest.index(anchor) + (1 if where == "after" else 0)
                backends = rest[:at] + moved + rest[at:]
        backends += [b for b in self.priority.get("fallback") or () if b not in backends and b in self.backends]
        return backends + sorted(set(self.backends) - set(backends))

    def ranking(self, values: Mapping[str, Any], policy: str = "faithful") -> list[str]:
        """Kernel ids in rank order: a firing shortcut's kernels first, then backend order, monolithic before modular, table order."""
        position = {b: i for i, b in enumerate(self.backend_order(values))}
        indexed = list(enumerate(self.experts))
        indexed.sort(key=lambda ie: (position[ie[1]["backend"]], 0 if ie[1]["interface"] == "monolithic" else 1, ie[0]))
        ranked = [e["id"] for _, e in indexed]
        taken = self.shortcut(values) if policy == "faithful" else None
        if taken is None:
            return ranked
        front = [k for k in taken["try"] if k in self.by_id] + ([taken["otherwise"]] if taken.get("otherwise") else [])
        return front + [k for k in ranked if k not in front]

    def shortcut(self, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first shortcut before selection whose ``when`` holds, else ``None``."""
        for sc in self.shortcuts:
            if not sc.get("selected") and self._holds(sc["when"], values) is True:
                return sc
        return None

    # ------------------------------------------------------------------ selection (faithful policy)

    def construction_rules(self) -> set[str]:
        """Rules vLLM checks only when it builds the selected kernel: prepare/finalize rules and pairings."""

        def make() -> frozenset[str]:
            out = {f"{e['id']}.pairing" for e in self.experts}
            # A constraint marked ``checked: construction`` is deferred like a P/F's own rules.
            out |= {c["id"] for c in self.constraints if c.get("checked") == "construction"}
            for pf in self.pfs:
                out |= {r.rule for r in self._requirements(pf["id"], pf)}
                out |= {c["id"] for c in pf.get("constraints") or ()}
                out |= {f"{pf['id']}.{c['id']}" for c in self._package_gates(pf)}
            return frozenset(out)

        return self._memo(("construction",), make)

    def after_selection_rules(self) -> set[str]:
        """Constraints the engine checks on the kernel it selected (``after_selection: true``), and
        every own rule but the quant scheme of a kernel the engine takes unasked and checks when it
        builds it (``checked_after_selection: true``; the format peek and the pairing stay as they are)."""

        def make() -> frozenset[str]:
            raws = [*self.constraints, *(c for o in (*self.experts, *self.pfs) for c in o.get("constraints") or ())]
            late = {r.rule for e in self.experts if e.get("checked_after_selection") for r in self._static_rules(e["id"])[0]
                    if r.rule not in (f"{e['id']}.supports.quant_scheme", f"{e['id']}.activation_format", f"{e['id']}.pairing")}
            return frozenset({c["id"] for c in raws if c.get("after_selection")} | late)

        return self._memo(("after_selection",), make)

    def layer_rules(self) -> set[str]:
        """Constraints that bind every kernel (no ``applies_to``): the layer is refused before any oracle."""
        return self._memo(("layer",), lambda: frozenset(c["id"] for c in self.constraints if not c.get("applies_to")))

    def selection(self, values: Mapping[str, Any], judged: "Judgement | None" = None) -> tuple[str | None, str | None]:
        """(the winner under the faithful policy, the kernel whose failing rules are waived: a
        shortcut's unchecked return or a winner failing construction rules only).
        ``judged``: :meth:`judge` of these values (faithful policy), to reuse its outcomes."""
        judged = judged if judged is not None else self.judge(values)
        if judged.model is not self or judged.values is not values or judged.policy != "faithful":
            raise ValueError("judged: a judgement of other values, another model or another policy")
        construction = self.construction_rules()
        sc = self.shortcut(values)
        if sc is not None:
            def unread(k: str, r: Rule) -> bool:
                return r.code in ("not_requested", "path_not_enabled") or r.rule in construction or r.rule == f"{k}.activation_format"

            chosen = next((k for k in sc["try"] if k in self.by_id and all(unread(k, r) for r in judged.failing(k))), sc.get("otherwise"))
            # A rule binding every kernel, or one the engine checks on the kernel it returned
            # (after_selection: an EPLB gate, building it on the P/F it gets), refuses the layer.
            if chosen is None or {r.rule for r in judged.failing(chosen)} & (self.layer_rules() | self.after_selection_rules()):
                return None, None
            return chosen, chosen
        post = self.after_selection_rules()
        for k in self.ranking(values):
            failing = judged.failing(k)
            if all(r.rule in construction or r.rule in post for r in failing):
                break
        else:
            return None, None
        if any(r.rule in post and r.rule not in construction for r in failing):
            return None, None  # the engine selects k, then refuses the layer
        winner, waived = k, (k if failing else None)
        for sc in self.shortcuts:
            if winner in (sc.get("selected") or ()) and self._holds(sc["when"], values) is True:
                return sc["otherwise"], sc["otherwise"]  # returned in the winner's place, unchecked
        return winner, waived


@dataclass(frozen=True)
class _Context:
    """What the value-dependent rules of every kernel read, computed once per set of values."""

    rm: dict[str, Any] | None
    requested: tuple[str, ...] | None
    by: str | None
    name: str
    dispatch: str
    order: dict[str, Any] | None
    auto: bool
    names: tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]] | None


class Judgement:
    """Every kernel's rules under one set of values (:meth:`Model.rules`), with each rule's outcome.

    The same ``Rule`` object (a layer constraint binds every kernel) is judged once. Only what
    does not pass is kept per kernel: :meth:`failing` and :meth:`abstaining` hold every rule of
    the kernel with that outcome (``Model.rules`` filtered by ``Rule.outcome``, as a multiset:
    the order may differ), :meth:`rules` the full list.
    """

    def __init__(self, model: Model, values: Mapping[str, Any], policy: str = "faithful") -> None:
        self.model, self.values, self.policy = model, values, policy
        self._ctx = model._context(values)
        self._outcomes: dict[int, Outcome] = {}
        self._shared: list[tuple[Rule, Outcome]] | None = None
        self._split: dict[str, tuple[list[Rule], list[Rule]]] = {}

    def rules(self, kernel: str) -> list[Rule]:
        return self.model._rules(kernel, self._ctx, self.policy)

    def _shared_not_passing(self) -> list[tuple[Rule, Outcome]]:
        """The layer and family constraints (each judged once) that fail or abstain."""
        if self._shared is None:
            values = self.values
            judged = ((self.model._shared_constraint(c), c) for c in self.model.constraints)
            self._shared = [(r, o) for r, _ in judged if (o := r.outcome(values)) is not Outcome.PASS]
        return self._shared

    def _judged(self, kernel: str) -> tuple[list[Rule], list[Rule]]:
        hit = self._split.get(kernel)
        if hit is not None:
            return hit
        model, ctx, values, outcomes = self.model, self._ctx, self.values, self._outcomes
        e = model.by_id[kernel]
        own, _ = model._static_rules(kernel)
        failing: list[Rule] = []
        abstaining: list[Rule] = []
        for r in own:  # the kernel's own rules: judged here only
            outcome = r.outcome(values)
            if outcome is Outcome.FAIL:
                failing.append(r)
            elif outcome is Outcome.ABSTAIN:
                abstaining.append(r)
        # Rules other kernels share (request, known-bad, prepare/finalize, priority path): judged once.
        for r in (*model._request_rules(kernel, e, ctx), *(model._known_bad_rules(kernel) if self.policy == "safe" else ()), *model._pf_rules(e, ctx.dispatch), *model._path_rules(e, ctx)):
            key = id(r)  # every rule is kept alive by the model's memo
            outcome = outcomes.get(key)
            if outcome is None:
                outcome = outcomes[key] = r.outcome(values)
            if outcome is Outcome.FAIL:
                failing.append(r)
            elif outcome is Outcome.ABSTAIN:
                abstaining.append(r)
        # The layer and family constraints that apply to the kernel: of those that do not pass.
        applies = model._shared_ids(kernel)
        for r, outcome in self._shared_not_passing():
            if id(r) in applies:
                (failing if outcome is Outcome.FAIL else abstaining).append(r)
        self._split[kernel] = failing, abstaining
        return failing, abstaining

    def failing(self, kernel: str) -> list[Rule]:
        """The kernel's rules that fail (shared: do not change it)."""
        return self._judged(kernel)[0]

    def abstaining(self, kernel: str) -> list[Rule]:
        """The kernel's rules that abstain (an input is unknown; shared: do not change it)."""
        return self._judged(kernel)[1]


def load_model(directories: tuple[Path, ...] | None = None) -> Model:
    """Read the tables (default: shipped) with ``yaml.safe_load``, in sorted display-path order."""
    docs: list[tuple[str, dict[str, Any]]] = []
    for directory in directories or table_dirs():
        for path in directory.glob("*.yaml"):
            docs.append((f"{directory.name}/{path.name}", yaml.safe_load(path.read_text(encoding="utf-8"))))
    docs.sort(key=lambda d: d[0])
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for _, doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    return Model(
        experts=[e for doc in by_kind.get("experts", []) for e in doc["entries"]],
        pfs=[e for doc in by_kind.get("prepare_finalize", []) for e in doc["entries"]],
        priority=by_kind["priority"][0],
        known_bad=[e for doc in by_kind.get("known_bad", []) for e in doc["entries"]],
        constraints=[c for doc in by_kind.get("constraints", []) for c in doc["constraints"]],
        aliases=by_kind["aliases"][0],
        env_vars=by_kind["environment"][0]["variables"],
        overrides=[o for doc in by_kind.get("overrides", []) for o in doc["overrides"]],
        engine=by_kind["engine"][0],
        shortcuts=[x for doc in by_kind.get("shortcuts", []) for x in doc["shortcuts"]],
        frontends=(by_kind.get("frontends") or [{}])[0],
    )
