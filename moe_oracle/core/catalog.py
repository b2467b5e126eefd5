"""The compiled catalog: frozen records of every table, and the per-release views the engine reads.

Two stages:

1. :func:`~moe_oracle.core.loading.load_catalog` reads a table set, validates it against the JSON Schemas and compiles it
   once, one small compiler per table kind (:mod:`moe_oracle.core.compile`), into
   :class:`CompiledTables`: every item with the engine releases it holds for (``engine:`` range,
   absent = every release). Any problem raises one :class:`~moe_oracle.core.errors.TableError`
   listing all of them; nothing half-loaded is ever returned.
2. A :class:`Catalog` is the *view* of those tables for one engine release: the items whose range
   admits it, linked (pairing with a prepare/finalize, backend requests, priority exclusions,
   constraints that bind every kernel, known-bad rules) and indexed (:class:`~moe_oracle.core.checks.CheckIndex`).
   Views are built lazily and memoized per compiled table set and admitted-item set
   (:meth:`Catalog.for_version`), so ``select`` pays a dictionary lookup for versioning.

``moe_oracle.core.loading.load_catalog()`` returns the view of the newest modelled release. Two table sets exist: the
*engine* tables (``moe_oracle/kernels``, ``prepare_finalize``, ``rules``: what vLLM runs) and the
*runtime* tables (``moe_oracle/runtime_tables``: what this package's runtime can build), loaded by
:func:`~moe_oracle.core.loading.load_runtime_catalog` on top of the engine set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Callable, Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from .checks import Check, CheckIndex, Tolerance
from .environment import Environment
from .errors import did_you_mean
from .envvars import EnvVarSpec, RemovedEnvVar
from .predicates import Predicate, compile_value_spec
from .versions import EngineRelease, EngineSpec, resolve_release
from .vocab import ActivationFormat, Interface, ReasonCode

__all__ = ["Adjustment", "All2AllAlias", "BlockRule", "KeyRewrite", "RequestMap", "BackendAlias", "Catalog", "CompiledTables", "ExpertsEntry", "GlobalConstraint", "KnownBad", "OptIn", "Override", "PrepareFinalizeEntry", "PriorityOrder", "Shortcut"]

Range = SpecifierSet | None


@dataclass(frozen=True)
class _Entry:
    """What experts and prepare/finalize entries share: identity, adapter, provenance, checks.

    ``engine`` is the range of releases the entry exists in; ``implements`` names the engine
    entry a runtime entry implements (it inherits that entry's checks). Before linking,
    ``check_engine`` holds the range of each of ``checks`` (parallel tuple); in a view it is empty.
    """

    id: str
    interface: Interface
    activation_format: ActivationFormat
    adapter: str
    provider: str
    runtime: str
    upstream: str
    reference: str
    file: str
    declared: Mapping[str, Any] = field(repr=False, compare=False)
    checks: tuple[Check, ...] = field(repr=False)
    engine: Range = field(default=None, compare=False)
    implements: str | None = None
    check_engine: tuple[Range, ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True)
class ExpertsEntry(_Entry):
    """One experts kernel variant as declared in ``kernels/<family>.yaml``; ``family`` is that
    file's ``family`` (one file per family), which ranks it within its backend."""

    backend: str = ""
    notes: str = ""
    family: str = field(default="", compare=False)

    @cached_property
    def record_head(self) -> dict[str, Any]:
        """A candidate record's keys in ``CandidateResult.to_dict`` order with this kernel's own
        values filled in (the rest ``None``). Copy before use."""
        return {"rank": None, "kernel": self.id, "backend": self.backend, "interface": self.interface.value, "activation_format": self.activation_format.value,
                "prepare_finalize": None, "status": None, "outranked_by": None, "failures": None, "assumptions": None}


@dataclass(frozen=True)
class PrepareFinalizeEntry(_Entry):
    """One prepare/finalize implementation (``prepare_finalize/<kind>.yaml``)."""

    dispatch: frozenset[str] = frozenset()
    carries_router_logits: bool = False


@dataclass(frozen=True)
class PriorityOrder:
    """Base backend order for the contexts ``when`` matches (first matching order wins).

    ``excluded`` holds, per backend outside the order and the fallback, the check that
    rejects its kernels under ``moe_backend=auto`` (``path_not_enabled``).
    """

    id: str
    when: tuple[Predicate, ...]
    backends: tuple[str, ...]
    reference: str
    notes: str = ""
    excluded: Mapping[str, Check] = field(default_factory=dict, repr=False, compare=False)
    engine: Range = field(default=None, compare=False)


@dataclass(frozen=True)
class RequestMap:
    """How one quant family's oracle reads ``moe_backend`` (vLLM's ``map_<family>_backend``).

    Where ``when`` holds, ``names`` maps each accepted name to the backends it requests (the
    batched remap included: ``triton`` -> Triton and batched Triton, the activation format
    picks one); ``auto`` names are read as ``auto``; ``formats`` names force the activation
    format the oracle peeks (unquantized ``batched_triton``). ``kernels`` names, for the names
    that map to some kernels of a backend only (vLLM's ``backend_to_kernel_cls`` list of that
    backend: WNA16 ``marlin`` is ``MarlinExperts``, never the batched class), the kernels they try.
    ``asks_format``: the format the family's selector asks every experts class with, whatever
    the prepare/finalize produces (vLLM 0.34.0 LUT-B asks with Standard), else ``None``.
    Any other name is refused, as vLLM raises ``ValueError`` for it.
    """

    id: str
    when: tuple[Predicate, ...]
    names: Mapping[str, tuple[str, ...]]
    auto: tuple[str, ...]
    formats: Mapping[str, str]
    reference: str
    engine: Range = field(default=None, compare=False)
    kernels: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    asks_format: str | None = None

    @cached_property
    def checks(self) -> Mapping[str, Check]:
        """Per backend (``"*"``: any other), the check that rejects it under an explicit request
        read through this map (built once per linked map, not per selection)."""
        out: dict[str, Check] = {}
        backends = {b for bs in self.names.values() for b in bs}
        for b in sorted(backends | {"*"}):
            names = sorted(n for n, bs in self.names.items() if b in bs)
            out[b] = Check(self.id, "moe_backend", compile_value_spec("moe_backend", names or ["(none)"]), (), False, ReasonCode.NOT_REQUESTED,
                           f"this layer's oracle requests {b} only with moe_backend={'|'.join(names)}" if names else "this layer's oracle never requests this backend", self.reference, 10_000)
        return MappingProxyType(out)


@dataclass(frozen=True)
class KeyRewrite:
    """A quantization front end giving the oracle other keys than the checkpoint's (``rules/frontends.yaml``).

    Where ``when`` holds, the weight and/or activation key become ``weight`` / ``activation``
    (``None``: unchanged), and the layer's ``quant_method`` becomes ``quant_method`` where set (the
    front end hands the experts to another method: the tables then read that method's rules).
    ``source_selection``: the new method first builds the checkpoint's own method, whose selection
    must succeed (the engine selects for the unrewritten layer first and refuses with its answer);
    ``source_late``: that method's checks that run only after the new method selected (its
    ``create_weights``), which refuse the layer then.
    """

    id: str
    when: tuple[Predicate, ...]
    weight: str | None
    activation: str | None
    reason: str
    reference: str
    engine: Range = field(default=None, compare=False)
    quant_method: str | None = None
    source_selection: bool = False
    source_late: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Adjustment:
    """Moves backends to the front or back of the order, or directly before / after another backend
    (``to: before:<backend>``), where ``when`` holds (vLLM's ``_move_to_*``, ``prioritize_humming``)."""

    id: str
    when: tuple[Predicate, ...]
    move: tuple[str, ...]
    to: str
    kind: str
    reason: str
    reference: str
    engine: Range = field(default=None, compare=False)


@dataclass(frozen=True)
class OptIn:
    """A backend kept out of auto-selection where ``when`` holds; ``check`` rejects it then."""

    id: str
    backend: str
    when: tuple[Predicate, ...]
    reason: str
    reference: str
    check: Check | None = field(default=None, repr=False, compare=False)
    engine: Range = field(default=None, compare=False)


@dataclass(frozen=True)
class KnownBad:
    """A condition under which the named kernels crash, hang or compute the wrong function.

    Under the default (faithful) policy it does not reject: a winner it matches gets a warning.
    Under the safe policy ``check`` (a deny check, code ``known_bad``) rejects the kernels.
    """

    id: str
    kernels: tuple[str, ...]
    check: Check
    effect: str
    replaces: str
    engine: Range = field(default=None, compare=False)


@dataclass(frozen=True)
class GlobalConstraint:
    """A constraint that binds every kernel (``backends``: only these; ``except_backends``: not these;
    ``interfaces``: only kernels of these interfaces; ``except_kernels``: not these kernel ids;
    ``packages``: only the kernels and prepare/finalize entries that require one of these packages,
    e.g. a gate on whether an installed package is usable at all; ``construction``: vLLM makes the
    check only when it builds the selected kernel, as a prepare/finalize's own checks)."""

    check: Check
    backends: tuple[str, ...] = ()
    except_backends: tuple[str, ...] = ()
    engine: Range = field(default=None, compare=False)
    interfaces: tuple[str, ...] = ()
    except_kernels: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    construction: bool = False

    @property
    def binds_every_kernel(self) -> bool:
        """No ``applies_to``: a fact of the layer, checked before any oracle runs."""
        return not (self.backends or self.except_backends or self.interfaces or self.except_kernels or self.packages)

    def applies(self, backend: str, interface: str | None = None, kernel: str | None = None, requires: frozenset[str] = frozenset()) -> bool:
        """Whether the constraint binds a kernel of ``backend`` (``requires``: the packages it requires)."""
        if self.packages and not requires.intersection(self.packages):
            return False
        if self.backends and backend not in self.backends:
            return False
        if self.interfaces and interface is not None and interface not in self.interfaces:
            return False
        if kernel is not None and kernel in self.except_kernels:
            return False
        return backend not in self.except_backends


@dataclass(frozen=True)
class BackendAlias:
    """A user-facing ``moe_backend`` name for backend ids; ``quant_scheme`` also sets the scheme (``*_afp8``);
    ``all2all`` is the all2all backend the name binds (a MoE backend that dispatches and combines itself)."""

    name: str
    backends: tuple[str, ...]
    quant_scheme: str | None = None
    engine: Range = field(default=None, compare=False)
    all2all: str | None = None


@dataclass(frozen=True)
class All2AllAlias:
    name: str
    to: str
    status: str
    remove_after: str | None
    note: str
    reference: str
    engine: Range = field(default=None, compare=False)


@dataclass(frozen=True)
class Override:
    id: str
    when: tuple[Predicate, ...]
    explicit: tuple[str, ...]
    request: str
    reason: str
    reference: str
    engine: Range = field(default=None, compare=False)

    @cached_property
    def explicit_fields(self) -> tuple[str, ...]:
        """``env.<VAR>`` for each variable in :attr:`explicit`."""
        return tuple(f"env.{var}" for var in self.explicit)


@dataclass(frozen=True)
class BlockRule:
    """How a quantization front end turns the checkpoint's weight block into the block it selects with.

    ``refine``: refine the block to ``gcd(block, shard, hidden)`` when the TP shard cuts a block
    (vLLM ``refine_fp8_moe_block_shape``; at least ``min_block``). ``pad``: with an explicit
    backend none of whose kernels takes the refined block (``refinable`` lists the backends that
    do), pad the shard to whole blocks instead (``pad_tp_shard_to_weight_blocks``). ``key_block``:
    the weight key always carries this block, whatever the checkpoint's. ``online``: the method
    quantizes the weights itself at load, so there is no checkpoint block (``weight_block_size``
    becomes ``none``) and ``create_weights`` checks none (``weight_block_aligned`` holds); used with
    ``key_block`` (vLLM 0.29.0-0.34.0 Q/online/fp8.py ``Fp8PerBlockOnlineMoEMethod``).
    """

    id: str
    when: tuple[Predicate, ...]
    refine: bool
    min_block: int
    pad: bool
    refinable: tuple[str, ...]
    key_block: tuple[int, int] | None
    reference: str
    engine: Range = field(default=None, compare=False)
    online: bool = False


@dataclass(frozen=True)
class Shortcut:
    """An engine path that returns a kernel before checking it (``rules/shortcuts.yaml``).

    Where ``when`` holds, the engine returns the first of ``try_kernels`` whose checks pass,
    else ``otherwise`` without checking it (no ``otherwise``: the engine raises), before the
    priority order and before reading ``moe_backend``. Under the faithful policy the answer
    follows it; under the safe policy it is ignored and every check applies. With ``selected``,
    the path runs after selection instead: where ``when`` holds and the winner is one of
    ``selected``, the engine returns ``otherwise`` unchecked in its place (a quantization method
    that takes another class of the backend the oracle chose).
    """

    id: str
    when: tuple[Predicate, ...]
    try_kernels: tuple[str, ...]
    otherwise: str | None
    label: str
    reason: str
    reference: str
    engine: Range = field(default=None, compare=False)
    selected: tuple[str, ...] = ()


@dataclass(frozen=True)
class PriorityTables:
    """Everything ``rules/priority.yaml`` declares, before linking."""

    orders: tuple[PriorityOrder, ...] = ()
    adjustments: tuple[Adjustment, ...] = ()
    opt_in: tuple[OptIn, ...] = ()
    fallback: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class CompiledTables:
    """One table set compiled once: every item with its engine range, not yet linked.

    ``base`` is the engine set a runtime set builds on. The view memo (:meth:`view`) lives
    here, so it is owned by this value and shared by the views made from it; nothing is global.
    """

    view_name: str
    engine: EngineSpec
    env_vars: tuple[EnvVarSpec, ...]
    env_types: Mapping[str, str]
    removed_env_vars: tuple[RemovedEnvVar, ...]
    experts: tuple[ExpertsEntry, ...]
    prepare_finalize: tuple[PrepareFinalizeEntry, ...]
    constraints: tuple[GlobalConstraint, ...]
    priority: PriorityTables
    known_bad: tuple[KnownBad, ...]
    backend_aliases: tuple[BackendAlias, ...]
    all2all_aliases: tuple[All2AllAlias, ...]
    overrides: tuple[Override, ...]
    shortcuts: tuple[Shortcut, ...]
    files: tuple[str, ...]
    tables_hash: str
    base: "CompiledTables | None" = None
    request_maps: tuple[RequestMap, ...] = ()
    rewrites: tuple[KeyRewrite, ...] = ()
    block_rules: tuple[BlockRule, ...] = ()
    engine_names: tuple[tuple[frozenset[str], Range], ...] = ()
    ranges: tuple[SpecifierSet, ...] = ()
    after_selection: frozenset[str] = frozenset()
    request_gates: frozenset[str] = frozenset()
    # How a view is made (:func:`moe_oracle.core.compile.link.link`), given by the compiler that
    # built this set: the records here do not import their compiler.
    linker: Callable[["CompiledTables", Version, tuple[bool, ...]], "Catalog"] | None = field(default=None, repr=False, compare=False)
    _views: dict[Any, "Catalog"] = field(default_factory=dict, repr=False)
    _keys: dict[Version, tuple[bool, ...]] = field(default_factory=dict, repr=False)
    _releases: dict[Any, EngineRelease] = field(default_factory=dict, repr=False)

    def key(self, version: Version) -> tuple[bool, ...]:
        """Which of the distinct ranges admit ``version``: equal keys give the same view."""
        key = self._keys.get(version)
        if key is None:
            key = tuple(r.contains(version, prereleases=True) for r in self.ranges)
            if len(self._keys) > 1024:  # bound the memo under arbitrary version strings
                self._keys.clear()
            self._keys[version] = key
        return key

    def view(self, version: Version) -> "Catalog":
        """The linked, indexed view for engine release ``version`` (memoized).

        Raises:
            TableError: the items admitted for this version do not link (a kernel no
                prepare/finalize pairs with, two prepare/finalize for one dispatch).
        """
        key = self.key(version)
        cat = self._views.get(key)
        if cat is None:
            assert self.linker is not None, "CompiledTables built without a linker (use moe_oracle.core.compile.compile_set)"
            cat = self.linker(self, version, key)
            self._views[key] = cat
        return cat

    def release(self, env: Environment) -> EngineRelease:
        """The engine release ``env`` is for (memoized on what decides it)."""
        engine = self.engine
        value = env.package_canonical(engine.name)
        pinned = tuple(env.package_canonical(n) for n in engine.pinned_names)
        key = (value, env.probed, pinned)
        rel = self._releases.get(key)
        if rel is None:
            rel = resolve_release(engine, env)
            if len(self._releases) > 1024:
                self._releases.clear()
            self._releases[key] = rel
        return rel


@dataclass(frozen=True)
class Catalog:
    """The linked view of one table set for one engine release. Immutable; ``tables_hash`` identifies the set.

    ``known_bad_index`` evaluates the known-bad rules of the kernels in ``known_bad_owner``
    (indices into ``experts``); the engine adds them to the failures only under the safe policy.
    ``known_bad_checks[i]`` are kernel ``i``'s (the faithful policy evaluates the winner's alone);
    ``known_bad_position[i]`` is kernel ``i``'s owner index in ``known_bad_index``.
    ``by_backend`` maps each backend id (sorted) to its kernels' indices in rank order: monolithic
    first, then the kernels of the backend's own family file (``family`` = the backend), then those
    of other families by family name; within one family, their order in its file. File names never
    decide.
    ``after_selection`` holds the rule ids of constraints the engine checks on the kernel it
    selected, not while it selects (a failure refuses the layer instead of passing to the next
    candidate). ``request_gates`` holds those of the constraints (``raised_on_request``) the
    family's oracle checks first when the kernel's backend is requested by name, raising on a
    failure before it tries the backend's kernels.
    ``construction`` holds the rule ids vLLM checks only when it builds the selected kernel (the
    pairing with a prepare/finalize and the prepare/finalize's own requirements), after selection;
    ``layer_rules`` those of the constraints that bind every kernel (vLLM refuses the layer before
    any oracle runs); ``request_checks`` the ``request.<backend>`` check of each backend;
    ``accepted_names`` the ``moe_backend`` values the release's configuration accepts (``None``:
    not declared for this release).
    """

    experts: tuple[ExpertsEntry, ...]
    prepare_finalize: tuple[PrepareFinalizeEntry, ...]
    orders: tuple[PriorityOrder, ...]
    adjustments: tuple[Adjustment, ...]
    opt_in: tuple[OptIn, ...]
    fallback: tuple[str, ...]
    known_bad: tuple[KnownBad, ...]
    global_constraints: tuple[Check, ...]
    backend_names: Mapping[str, tuple[str, ...]]
    implied_quant: Mapping[str, str]
    all2all_aliases: Mapping[str, All2AllAlias]
    env_vars: tuple[EnvVarSpec, ...]
    overrides: tuple[Override, ...]
    package_names: tuple[str, ...]
    files: tuple[str, ...]
    tables_hash: str
    experts_index: CheckIndex = field(repr=False, compare=False)
    pf_index: CheckIndex = field(repr=False, compare=False)
    pf_choice: tuple[Mapping[str, int], ...] = field(repr=False, compare=False, default=())
    rank_key: tuple[tuple[int, int], ...] = field(repr=False, compare=False, default=())
    shortcuts: tuple[Shortcut, ...] = ()
    known_bad_index: CheckIndex | None = field(default=None, repr=False, compare=False)
    known_bad_owner: tuple[int, ...] = field(default=(), repr=False, compare=False)
    known_bad_checks: tuple[tuple[Check, ...], ...] = field(default=(), repr=False, compare=False)
    view_name: str = "engine"
    engine: EngineSpec | None = field(default=None, compare=False)
    source: CompiledTables | None = field(default=None, repr=False, compare=False)
    key: tuple[bool, ...] = field(default=(), repr=False, compare=False)
    removed_env_vars: tuple[RemovedEnvVar, ...] = ()
    bound_all2all: Mapping[str, str] = field(default_factory=dict, compare=False)
    request_maps: tuple[RequestMap, ...] = ()
    rewrites: tuple[KeyRewrite, ...] = ()
    after_selection: frozenset[str] = frozenset()
    request_gates: frozenset[str] = frozenset()
    block_rules: tuple[BlockRule, ...] = ()
    request_checks: Mapping[str, Check] = field(default_factory=dict, repr=False, compare=False)
    accepted_names: frozenset[str] | None = None
    construction: frozenset[str] = frozenset()
    layer_rules: frozenset[str] = frozenset()
    by_backend: Mapping[str, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)
    known_bad_position: Mapping[int, int] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def fields_read(self) -> frozenset[str]:
        """Every field a check of an experts kernel or prepare/finalize, or a global constraint, reads."""
        # Check.fields_read of each check, read off its predicate and conditions here: a view's
        # checks are its own objects (sequenced per owner), so their cached properties are cold
        # on a new view and thousands of them would each be computed once for this set alone.
        out: set[str] = set()
        for chk in (*(c for owner in (*self.experts, *self.prepare_finalize) for c in owner.checks), *self.global_constraints):
            if chk.predicate is not None:
                out.add(chk.predicate.field)
            out.update(p.field for p in chk.condition)
        return frozenset(out)

    @cached_property
    def request_bits(self) -> int:
        """The bits of each kernel's own ``request.<backend>`` check in ``experts_index`` (a family's
        request map reads ``moe_backend`` in their place)."""
        experts = self.experts
        return self.experts_index.bits_where(lambda i, c: c.rule == f"request.{experts[i].backend}")

    def tolerance(self, deferred: bool) -> Tolerance:
        """The checks a failure of which does not stop selection: the ``after_selection``
        constraints (the engine refuses the layer afterwards instead) and, when ``deferred``, the
        ``construction`` checks (vLLM makes them only when it builds the selected kernel)."""
        return self._deferred_tolerance if deferred else self._post_tolerance

    @cached_property
    def _post_tolerance(self) -> Tolerance:
        return self._tolerance(self.after_selection)

    @cached_property
    def _deferred_tolerance(self) -> Tolerance:
        return self._tolerance(self.after_selection | self.construction)

    def _tolerance(self, rules: frozenset[str]) -> Tolerance:
        keep = lambda _i, c: c.rule in rules  # noqa: E731
        kb = self.known_bad_index.bits_where(keep) if self.known_bad_index is not None else 0
        return Tolerance(rules, self.experts_index.bits_where(keep), self.pf_index.bits_where(keep), kb)

    @property
    def backends(self) -> tuple[str, ...]:
        """Every backend id, sorted."""
        return tuple(self.by_backend) if self.by_backend else tuple(sorted({e.backend for e in self.experts}))

    def experts_by_id(self, kernel_id: str) -> ExpertsEntry:
        for entry in self.experts:
            if entry.id == kernel_id:
                return entry
        raise KeyError(kernel_id)

    def prepare_finalize_by_id(self, pf_id: str) -> PrepareFinalizeEntry:
        for entry in self.prepare_finalize:
            if entry.id == pf_id:
                return entry
        raise KeyError(pf_id)

    def release(self, env: Environment) -> EngineRelease:
        """The engine release ``env`` is for (declared, probed or assumed)."""
        assert self.source is not None
        return self.source.release(env)

    def for_version(self, version: str | Version) -> "Catalog":
        """The view of the same tables for another engine release (memoized; ``self`` when equal)."""
        assert self.source is not None
        v = version if isinstance(version, Version) else Version(version)
        if self.source.key(v) == self.key:
            return self
        return self.source.view(v)

    def for_release(self, release: EngineRelease) -> "Catalog":
        """The view an answer for ``release`` reads: the release's own, or for an unmodelled
        release at or after the oldest modelled one, the view of the release standing in for it.

        The ranges' bounds are modelled releases, so a final release between two of them admits
        the same ranges as its stand-in; a pre- or development release of a bound admits neither
        side of it (PEP 440: ``<0.30.0`` excludes ``0.30.0rc1``, and ``>=0.30.0`` does too), so it
        takes its stand-in's view, the facts its warning says are assumed. A release older than
        every modelled one keeps its own ranges (facts that begin at the oldest modelled release
        do not hold for it).
        """
        version = release.parsed
        if not release.modelled and Version(release.stand_in) <= version:
            version = Version(release.stand_in)
        return self.for_version(version)


def suggest_backend(catalog: Catalog, name: str) -> str | None:
    """Did-you-mean for a backend name."""
    return did_you_mean(name, list(catalog.backend_names))
