"""Semantic lint of a loaded catalog, beyond what the JSON Schemas and the loader enforce.

The loader already rejects schema errors, unknown values, duplicate ids, rules
naming unknown backends or kernels, and kernels that no prepare/finalize pairs
with. Lint adds what only the whole table set shows:

* ``unsatisfiable``: a check whose allowed set has no value in its field's domain (the kernel
  can never be eligible): an error; a check whose ``if`` condition (a known-bad entry's
  ``when``) can never hold, so that it never applies (the entry never fires) whatever it
  allows: a warning, not the error. Conditions are analysed field by field, the quantization
  fields jointly (one scheme sets them all); a predicate only its condition excludes is a
  conditional refusal, not a finding (:func:`_unsatisfiable`);
* ``request_only``: a backend in no priority order (reachable only with moe_backend);
* ``never_selected``: a kernel that neither a seeded sample nor a search started where the
  kernel runs (a device, quant scheme and checkpoint format its own checks admit) selects, even
  when requested (shadowed by a sibling or never eligible); a kernel whose entry declares
  ``unreachable`` (why no modelled deployment selects it) is a note ``unreachable`` instead, and
  a warning ``unreachable_selected`` when it is selected after all;
* ``order_shadowed``: a priority order that an earlier order always pre-empts;
* ``adjustment_inert``: an adjustment that moves backends absent from every order it can meet;
* ``constraint_id_reused``: one rule id with different content in two places;
* ``duplicate_rule``: two rules of one kernel that test the same predicate under the same condition,
  in any modelled release's view (the finding names the releases when not all);
* ``indistinguishable``: two kernels of one backend, interface and activation format whose checks
  (known-bad rules included) are the same: the rank rule alone decides, and the later never wins;
* ``contradictory_adjustments`` (in every release's view, as ``duplicate_rule``): two adjustments that can fire together where the later takes a
  backend away from where the earlier put it (opposite ends, or away from the anchor of a
  relative move; moving the anchor along keeps the order, :func:`_undoes`);
* ``alias_expired``: a deprecated alias still accepted after its removal date;
* ``no_order``: a (platform, quant family) with no priority order;
* ``uncovered``: a (platform, quant scheme) that no kernel supports;
* ``range_bound_unmodelled``: an engine range bounded at a release ``rules/engine.yaml`` does not
  model (``<0.33.5``): an error, every bound is a modelled release (docs/architecture.md, "Version
  model": an unmodelled release reads its stand-in's view, which a bound between releases breaks);
* ``range_admits_no_release``: a fact whose engine range admits none of the modelled releases
  (it never applies to an answer we can verify);
* ``range_past_verified``: a range bounded above past the newest verified release (a claim
  about a release nobody has read yet);
* ``open_ended``: the facts whose range has a lower bound and no upper one (introduced in a
  verified release and assumed to continue past the newest one): one note listing them, the
  first to re-check when a new release ships;
* ``drift``: a FlashInfer kernel whose SM set differs from what the installed FlashInfer
  declares (``drift.py``; only with ``drift=True``, or ``drift=None`` and flashinfer importable).

:func:`ranged_items` lists every item with the engine releases it holds for: the hook for rules
on version ranges (e.g. facts open-ended past the newest verified release).
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import replace
from typing import Any, Iterator

from packaging.version import InvalidVersion, Version

from .findings import Finding
from ..core.catalog import Adjustment, Catalog, ExpertsEntry
from ..core.checks import Check
from ..core.config import Device, MoEConfig
from ..core.engine import evaluate
from ..core.environment import Environment
from ..core.errors import ConfigError
from ..core.fields import CUDA_CAPABILITIES, FIELDS, IntDomain
from ..core.normalize import normalize
from ..core.predicates import Predicate
from ..core.quant import SCHEMES, QuantFamily
from ..core.requests import request_name
from ..inputs.hardware import GPU_CATALOG
from .sampling import sample_configs
from ..core.vocab import All2AllBackend, Platform

__all__ = ["Finding", "lint", "ranged_items"]

SAMPLE_SIZE = 2000
SAMPLE_SEED = 20261130
TARGETED_STARTS = 5
"""Sampled configs whose shapes and parallel layouts the targeted search starts from."""
TARGETED_DEVICES = 4
TARGETED_SCHEMES = 3
"""At most this many devices (one per platform first) and quant schemes a kernel admits are tried."""
_DEVICE_FIELDS = frozenset({"platform", "device_capability", "gpu_arch", "cpu_arch", "cpu_amx"})
_METHOD_FIELDS = frozenset({"quant_method", "moe_quant_method"})


def _domain(field: str) -> tuple[Any, ...] | None:
    spec = FIELDS.get(field)
    return spec.domain if spec is not None else None


def _satisfiable(*preds: Predicate) -> bool:
    """Whether one value of their field passes every one of ``preds`` (all on one field).

    A finite domain is tried value by value, an integer field by :func:`_int_witness`; for any
    other field only crossed bounds and an ``in`` list none of whose values pass are seen (a
    version range, a float's other keywords: assumed satisfiable).
    """
    specs = [dict(p.spec) for p in preds]
    lows, highs = [s["min"] for s in specs if "min" in s], [s["max"] for s in specs if "max" in s]
    if lows and highs and max(lows) > min(highs):
        return False
    domain = _domain(preds[0].field)
    if domain is not None:
        return any(all(p.test(v) for p in preds) for v in domain)
    ints = FIELDS[preds[0].field].ints if preds[0].field in FIELDS else None
    if ints is not None:
        return _int_witness(preds, ints) is not None
    listed = next((s["in"] for s in specs if "in" in s), None)
    return listed is None or any(all(p.test(v) for p in preds) for v in listed)


def _int_witness(preds: tuple[Predicate, ...], ints: IntDomain) -> int | None:
    """A value of ``ints`` that every one of ``preds`` passes, or ``None`` when there is none.

    An ``in`` list is tried value by value. Otherwise the values between the bounds (the
    domain's and every ``min``/``max``) are tried from the lowest: past the bounds only
    ``multiple_of``, ``not_multiple_of`` and ``not_in`` can fail, and they repeat with the period
    of the moduli, so one period beyond the excluded values decides.
    """
    specs = [dict(p.spec) for p in preds]

    def passes(v: int) -> bool:
        return ints.contains(v) and all(p.test(v) for p in preds)

    listed = next((s["in"] for s in specs if "in" in s), None)
    if listed is not None:
        return next((v for v in sorted(listed) if isinstance(v, int) and passes(v)), None)
    low = max([-(2**53)] + ([ints.minimum] if ints.minimum is not None else []) + [math.ceil(s["min"]) for s in specs if "min" in s])
    high = min([2**53] + ([ints.maximum] if ints.maximum is not None else []) + [math.floor(s["max"]) for s in specs if "max" in s])
    period = 1
    for spec in specs:
        for key in ("multiple_of", "not_multiple_of"):
            if key in spec:
                if not float(spec[key]).is_integer() or spec[key] == 0:
                    return low if low <= high else None  # a fractional modulus: not analysed
                period = math.lcm(period, abs(int(spec[key])))
    span = period + sum(len(s.get("not_in", ())) for s in specs) + len(ints.excluded)
    return next((v for v in range(low, min(high, low + span) + 1) if passes(v)), None)


def _can_hold(preds: tuple[Predicate, ...]) -> bool:
    """Whether one config may pass every one of ``preds`` (a condition, or a check under its
    condition): per field, and jointly over the quantization fields, which one scheme sets
    together (``quant_scheme: [fp8_block]`` excludes ``quant_family: [unquantized]``)."""
    by_field: dict[str, list[Predicate]] = {}
    for p in preds:
        by_field.setdefault(p.field, []).append(p)
    if not all(_satisfiable(*group) for group in by_field.values()):
        return False
    quant = [p for p in preds if p.field in _QUANT_FIELDS]
    return not quant or any(all(p.test(_scheme_values(name)[p.field]) for p in quant) for name in SCHEMES)


def _unsatisfiable(catalog: Catalog) -> list[Finding]:
    """The ``unsatisfiable`` findings of every kernel's checks (the constraints that bind every
    kernel are among them, linked into each kernel they bind) and known-bad entries.

    A check's ``if`` condition is read first: one that can never hold makes the check dead
    whatever it allows (a warning), so its predicate is not judged. A predicate that no value of
    its field passes is an error. A predicate that only the condition excludes is not a finding:
    "when C holds, refuse" is how a table writes a conditional refusal with its own field and
    reason (``constraint.modelopt_nvfp4_per_token_trtllm``: under ``activation_quant:
    [nvfp4_dynamic_token]``, ``activation_quant`` must not be ``nvfp4_dynamic_token``).
    """
    out = []
    known_bad = {k: [kb.check for kb in catalog.known_bad if k in kb.kernels] for k in {k for kb in catalog.known_bad for k in kb.kernels}}
    for entry in (*catalog.experts, *catalog.prepare_finalize):
        for chk in entry.checks + tuple(known_bad.get(entry.id, ())):
            subject = f"{entry.id}:{chk.rule}"
            if not _can_hold(chk.condition):
                # The check never applies, so what it allows never matters: not an eligibility error.
                what = "the known-bad condition can never hold; the entry never fires" if chk.deny else f"its condition ({_describe(chk.condition)}) can never hold; the check never applies"
                out.append(Finding("warning", "unsatisfiable", subject, what))
            elif chk.predicate is not None and not _can_hold((chk.predicate,)):
                where = "the kernel can never be eligible" if not chk.condition else "the kernel is never eligible when its condition holds"
                ints = FIELDS[chk.field].ints if chk.field in FIELDS else None
                domain = f" ({ints.describe()})" if ints is not None else ""
                out.append(Finding("error", "unsatisfiable", subject, f"no value of {chk.field}{domain} passes ({chk.predicate.describe()}); {where}"))
    return out


def _describe(preds: tuple[Predicate, ...]) -> str:
    """``field: what passes`` for each predicate of a condition (``num_experts: >= 64``)."""
    return ", ".join(f"{p.field}: {p.describe()}" for p in preds)


def _request_only(catalog: Catalog) -> list[Finding]:
    ordered = {b for o in catalog.orders for b in o.backends} | set(catalog.fallback)
    return [Finding("note", "request_only", b, "in no priority order: selected only with moe_backend") for b in catalog.backends if b not in ordered]


def _own_checks(entry: ExpertsEntry, fields: frozenset[str]) -> tuple[Check, ...]:
    """The kernel's checks that read ``fields`` only (their conditions included: a platform's
    capability list applies on that platform), known-bad entries aside."""
    return tuple(c for c in entry.checks if c.field in fields and c.predicate is not None and not c.deny and all(p.field in fields for p in c.condition))


def _passes(checks: tuple[Check, ...], values: dict[str, Any]) -> bool:
    """Every one of ``checks`` passes ``values`` (a check whose condition does not hold passes)."""
    return all(c.predicate is None or not all(p.test(values[p.field]) for p in c.condition) or c.predicate.test(values[c.field]) for c in checks)


def _listed(checks: tuple[Check, ...], field: str) -> list[Any]:
    """The values the ``in`` lists of ``checks`` on ``field`` name, first-seen order."""
    return list(dict.fromkeys(v for c in checks if c.field == field and c.predicate is not None for op, arg in c.predicate.spec if op == "in" for v in arg))


def _devices_for(entry: ExpertsEntry, env: Environment) -> list[Device]:
    """Devices the kernel's own device checks admit (a platform's capability or arch list
    included), derived from the tables.

    Candidates: the hardware catalog (``--gpu`` names) first, then devices made from the kernel's
    listings (every CUDA capability a table may list; each ``gpu_arch`` / ``cpu_arch`` it names,
    with and without AMX), as ``--sm`` / ``--arch`` make them, and a TPU (``--platform tpu``): a kernel for gfx1250 or SM 10.7 has
    no catalog GPU. At most one device per (platform, capability, arch, AMX), one per platform
    first so that every platform the kernel runs on is tried before a second device of one.
    """
    checks = _own_checks(entry, _DEVICE_FIELDS)
    candidates = [hw.device for hw in GPU_CATALOG.values()]
    candidates += [Device(Platform.CUDA, capability=c) for c in CUDA_CAPABILITIES]
    for platform in (Platform.ROCM, Platform.XPU):
        candidates += [Device(platform, arch=a) for a in _listed(checks, "gpu_arch") if isinstance(a, str)]
    candidates += [Device(Platform.CPU, arch=a, cpu_amx=amx) for a in _listed(checks, "cpu_arch") if isinstance(a, str) for amx in (True, False)]
    candidates.append(Device(Platform.TPU))  # `--platform tpu`: the catalog has no TPU (the platform_moe answers)
    kept: dict[tuple[Any, ...], Device] = {}
    for device in candidates:
        key = (device.platform, device.capability, device.arch, device.cpu_amx)
        if key in kept:
            continue
        values = normalize(MoEConfig(num_experts=8, top_k=2, hidden_size=1024, intermediate_size=512, device=device), env, (), ()).values
        if _passes(checks, values):
            kept[key] = device
    by_platform: dict[Platform, list[Device]] = {}
    for device in kept.values():
        by_platform.setdefault(device.platform, []).append(device)
    rounds = [[ds[i] for ds in by_platform.values() if i < len(ds)] for i in range(max(map(len, by_platform.values()), default=0))]
    return [d for r in rounds for d in r]


def _targeted_starts(catalog: Catalog, entry: ExpertsEntry, samples: list[tuple[MoEConfig, Environment]]) -> Iterator[tuple[MoEConfig, Environment]]:
    """Start configs for the targeted search of one kernel, derived from its own checks.

    The repair edits one failing check at a time and cannot leave a device for another platform
    nor name a checkpoint format (``moe_quant_method``), so each start is put where the kernel
    runs: a device its platform checks admit (:func:`_devices_for`), a quant scheme its
    quantization checks admit, a ``quant_method`` its method checks list, on a plain layer (64
    experts, top-4, TP 1) and on the shapes and parallel layouts of the first sampled configs
    (the repair is greedy: a start far from the kernel may stall). Each start requests the kernel's backend where
    a ``moe_backend`` name does (to get past the priority order) and also leaves it ``auto``
    (a backend reached only through the order: vLLM's CPU and XPU kernels).
    """
    quant = _own_checks(entry, frozenset(_QUANT_FIELDS))
    schemes = [n for n in SCHEMES if _passes(quant, _scheme_values(n))]
    method_checks = _own_checks(entry, _METHOD_FIELDS)
    method = next(iter(_listed(method_checks, "quant_method") + _listed(method_checks, "moe_quant_method")), None)
    name = request_name(catalog, entry.backend)
    plain = MoEConfig(num_experts=64, top_k=4, hidden_size=4096, intermediate_size=1536, device=samples[0][0].device)
    bases = [(plain, Environment()), *samples[:TARGETED_STARTS]]
    for device in _devices_for(entry, Environment())[:TARGETED_DEVICES]:
        for scheme in schemes[:TARGETED_SCHEMES]:
            for config, env in bases:
                for request in dict.fromkeys((name, "auto")):
                    try:
                        start = config.with_changes(device=device, quant=SCHEMES[scheme], moe_backend=request, quant_method=method if method is not None else config.quant_method)
                        if request in catalog.bound_all2all:
                            # The name binds its own all2all backend: vLLM refuses it with any other explicit one.
                            start = start.with_changes(parallel=replace(start.parallel, all2all_backend=All2AllBackend.ALLGATHER_REDUCESCATTER))
                    except ConfigError:
                        continue
                    yield start, env


def _never_selected(catalog: Catalog) -> list[Finding]:
    """Kernels no config selects: a seeded sample first, then a targeted search per remaining kernel.

    The targeted search starts where the kernel runs (:func:`_targeted_starts`: a device, quant
    scheme and checkpoint format its own checks admit, derived from the tables rather than
    sampled, so a kernel of a platform or device the sample rarely draws is still found), requests
    its backend and repairs inputs until the kernel itself is eligible (``whynot.repair``); a
    kernel that is then still not selected is outranked inside its own backend.

    A kernel whose entry declares ``unreachable`` (why no modelled deployment selects it: vLLM
    0.34.0's ``LutBSm107Experts`` needs a compiled op the released wheel lacks) is a note when it
    is indeed never selected, and a warning when it is selected after all (the declaration is
    stale). Any other kernel never selected is a warning.
    """
    from ..explain.whynot_search import repair

    won: set[str] = set()
    samples = list(sample_configs(SAMPLE_SIZE, SAMPLE_SEED, catalog))
    for config, env in samples:
        d = evaluate(catalog, config, env)
        if d.kernel:
            won.add(d.kernel)
    out = []
    for entry in catalog.experts:
        declared = entry.declared.get("unreachable")
        eligible_once = False
        if entry.id not in won:
            for start, env in _targeted_starts(catalog, entry, samples):
                result = repair(catalog, start, env, lambda row, k=entry.id: row.entry.id == k)
                if not result.found:
                    continue
                eligible_once = True
                if result.decision is not None and result.decision.kernel == entry.id:
                    won.add(entry.id)
                    break
        if entry.id in won:
            if declared:
                out.append(Finding("warning", "unreachable_selected", entry.id, f"declared unreachable ({declared}), yet selected: drop the declaration or fix the checks"))
            continue
        why = "eligible, but always outranked by a sibling of its backend" if eligible_once else "never made eligible"
        if declared:
            out.append(Finding("note", "unreachable", entry.id, f"never selected, as its entry declares: {declared}"))
        else:
            out.append(Finding("warning", "never_selected", entry.id, f"not selected in {SAMPLE_SIZE} sampled configs nor by a search from the devices, quant schemes and checkpoint formats its checks admit ({why})"))
    return out


def _implies(later: tuple[Predicate, ...], earlier: tuple[Predicate, ...]) -> bool:
    """Every config matching ``later`` also matches ``earlier`` (finite domains only)."""
    by_field = {p.field: p for p in later}
    for p in earlier:
        q = by_field.get(p.field)
        domain = _domain(p.field)
        if q is None or domain is None:
            return False
        if not all(p.test(v) for v in domain if q.test(v)):
            return False
    return True


_QUANT_FIELDS = ("quant_scheme", "weight_quant", "activation_quant", "quant_family")


def _scheme_values(name: str) -> dict[str, Any]:
    scheme = SCHEMES[name]
    return {"quant_scheme": name, "weight_quant": scheme.weight or "none", "activation_quant": scheme.activation or "none", "quant_family": scheme.family.value}


def _compatible(a: tuple[Predicate, ...], b: tuple[Predicate, ...]) -> bool:
    """Some config may satisfy both conditions.

    Checked per shared finite-domain field, and jointly over the quantization fields, which one
    scheme determines together (``quant_scheme: [fp8_block]`` excludes ``quant_family: [unquantized]``).
    """
    for p in a:
        for q in b:
            domain = _domain(p.field)
            if p.field == q.field and domain is not None and not any(p.test(v) and q.test(v) for v in domain):
                return False
    quant = [p for p in (*a, *b) if p.field in _QUANT_FIELDS]
    if quant and not any(all(p.test(_scheme_values(name)[p.field]) for p in quant) for name in SCHEMES):
        return False
    return True


def _orders(catalog: Catalog) -> list[Finding]:
    out = []
    for j, later in enumerate(catalog.orders):
        for earlier in catalog.orders[:j]:
            if _implies(later.when, earlier.when):
                out.append(Finding("warning", "order_shadowed", later.id, f"never applies: every config it matches is matched first by {earlier.id}"))
                break
    in_orders = {b for o in catalog.orders for b in o.backends}
    for adj in catalog.adjustments:
        # Only orders that can apply together with the adjustment count.
        reachable = {b for o in catalog.orders if _compatible(o.when, adj.when) for b in o.backends}
        if not any(b in reachable for b in adj.move):
            out.append(Finding("warning", "adjustment_inert", adj.id, f"moves {', '.join(adj.move)}, which no priority order that can apply with it lists"))
    for opt in catalog.opt_in:
        if opt.backend not in in_orders:
            out.append(Finding("note", "opt_in_redundant", opt.id, f"{opt.backend} is in no priority order anyway"))
    for platform in Platform:
        for family in QuantFamily:
            values = {"platform": platform.value, "quant_family": family.value}
            if not any(all(p.field not in values or p.test(values[p.field]) for p in o.when) for o in catalog.orders):
                tried = "only the fallback and requested backends are tried" if catalog.fallback else "only requested backends are tried (the engine raises otherwise)"
                out.append(Finding("note", "no_order", f"{platform.value}/{family.value}", f"no priority order; {tried}"))
    return out


def _constraint_ids(catalog: Catalog) -> list[Finding]:
    seen: dict[str, tuple[Check, str]] = {}
    out = []
    for entry in catalog.experts:
        for chk in entry.checks:
            prev = seen.get(chk.rule)
            key = (chk.field, chk.predicate, chk.condition, chk.deny, chk.code, chk.hint)
            if prev is None:
                seen[chk.rule] = (chk, entry.id)
            elif (prev[0].field, prev[0].predicate, prev[0].condition, prev[0].deny, prev[0].code, prev[0].hint) != key:
                out.append(Finding("error", "constraint_id_reused", chk.rule, f"different content in {prev[1]} and {entry.id}"))
    return out


def _views(catalog: Catalog) -> list[tuple[str, Catalog]]:
    """``(release, view)`` for every release ``rules/engine.yaml`` models (the catalog alone, named
    ``""``, when it carries no engine releases or source tables)."""
    if catalog.source is None or catalog.engine is None or not catalog.engine.releases:
        return [("", catalog)]
    return [(str(r.version), catalog.for_version(r.version)) for r in catalog.engine.releases]


def _duplicates_and_contradictions(catalog: Catalog) -> list[Finding]:
    """Two rules of one kernel that test the same thing, and adjustments that pull one backend
    both ways, in every modelled release's view (a rule bounded to some releases meets its twin
    only in those views); a finding met in several views is reported once, naming them."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for release, view in _views(catalog):
        for code, subject, detail in _view_duplicates_and_contradictions(view):
            found.setdefault((code, subject, detail), []).append(release)
    everywhere = [r for r, _ in _views(catalog)]
    out = []
    for (code, subject, detail), releases in found.items():
        where = "" if releases == everywhere else f" (vLLM {', '.join(releases)})"
        out.append(Finding("warning", code, subject, detail + where))
    return out


def _view_duplicates_and_contradictions(catalog: Catalog) -> list[tuple[str, str, str]]:
    """``(code, subject, detail)`` of :func:`_duplicates_and_contradictions` in one view."""
    out = []
    for entry in catalog.experts:
        seen: dict[tuple[Any, ...], str] = {}
        for chk in entry.checks:
            key = (chk.field, chk.predicate, chk.condition, chk.deny)
            if key in seen and seen[key] != chk.rule:
                out.append(("duplicate_rule", f"{entry.id}:{chk.rule}", f"tests exactly what {seen[key]} tests"))
            seen.setdefault(key, chk.rule)
    adjustments = list(catalog.adjustments)
    for i, a in enumerate(adjustments):
        for b in adjustments[i + 1 :]:
            undone = sorted(x for x in set(a.move) & set(b.move) if _undoes(a, b))
            if undone and _compatible(a.when, b.when):
                out.append(("contradictory_adjustments", f"{a.id}/{b.id}", f"both can fire for one config and the later one takes {', '.join(undone)} away from where the earlier one puts it ({a.to}, then {b.to}); the later one wins"))
    return out


def _undoes(earlier: Adjustment, later: Adjustment) -> bool:
    """Whether ``later``, applied after ``earlier``, takes the backends both move away from where
    ``earlier`` put them.

    Moved backends keep their relative order (``engine._order``), so moving a backend together
    with the anchor an earlier relative move put it next to keeps it there (vLLM 0.32.0+ MXFP4:
    ``prioritize_humming`` puts Humming before Marlin, then ``_filter_by_activation`` moves both
    behind the matching backends, Humming still first). Opposite ends, an end move that leaves
    the anchor behind, a relative move to another anchor than the earlier end move's group, and
    two different relative moves do undo it.

    >>> from moe_oracle.core.catalog import Adjustment
    >>> adj = lambda to, *move: Adjustment(id=to, when=(), move=move, to=to, kind="performance", reason="", reference="")
    >>> _undoes(adj("front", "a"), adj("back", "a")), _undoes(adj("before:m", "h"), adj("back", "h", "m")), _undoes(adj("before:m", "h"), adj("back", "h"))
    (True, False, True)
    """
    if earlier.to == later.to:
        return False
    ends = ("front", "back")
    if earlier.to in ends and later.to in ends:
        return True
    if earlier.to not in ends and later.to in ends:
        return earlier.to.split(":", 1)[1] not in later.move
    if earlier.to in ends:
        return later.to.split(":", 1)[1] not in earlier.move
    return True


def _indistinguishable(catalog: Catalog) -> list[Finding]:
    """Kernels of one backend, interface and format with the same checks (rule ids aside)."""
    known_bad: dict[str, list[Any]] = {}
    for kb in catalog.known_bad:
        for k in kb.kernels:
            known_bad.setdefault(k, []).append((kb.check.field, kb.check.predicate, kb.check.condition))
    rank = {i: pos for indices in catalog.by_backend.values() for pos, i in enumerate(indices)}
    seen: dict[tuple[Any, ...], Any] = {}
    out = []
    for i in sorted(range(len(catalog.experts)), key=lambda i: (catalog.experts[i].backend, rank.get(i, i))):
        entry = catalog.experts[i]
        checks = frozenset((c.field, c.predicate, c.condition, c.deny) for c in entry.checks)
        key = (entry.backend, entry.interface, entry.activation_format, checks, frozenset(known_bad.get(entry.id, ())))
        first = seen.setdefault(key, entry)
        if first is not entry:
            out.append(Finding("warning", "indistinguishable", f"{first.id}/{entry.id}", f"same backend ({entry.backend}), interface and checks ({first.file}, {entry.file}): {first.id} always ranks first (rule: the backend's own family file, then family name, then file order), so {entry.id} is never selected; remove one or tell them apart"))
    return out


def _aliases(catalog: Catalog, today: _dt.date) -> list[Finding]:
    out = []
    for alias in catalog.all2all_aliases.values():
        if alias.remove_after and _dt.date.fromisoformat(alias.remove_after) < today:
            out.append(Finding("warning", "alias_expired", f"all2all:{alias.name}", f"{alias.status} alias past its removal date {alias.remove_after}; remove it"))
    return out


def _coverage(catalog: Catalog) -> list[Finding]:
    from ..explain.matrix import MATRIX_DEVICES, cell

    out = []
    for platform in (Platform.CUDA, Platform.ROCM, Platform.CPU):
        devices = [d for d in MATRIX_DEVICES if d.startswith("CPU") == (platform is Platform.CPU) and (d.startswith("MI") == (platform is Platform.ROCM))]
        missing = [s for s in SCHEMES if not any(cell(e, d, s).status != "no" for e in catalog.experts for d in devices)]
        if missing:
            out.append(Finding("note", "uncovered", platform.value, f"no kernel supports {len(missing)} scheme(s): {', '.join(missing)}"))
    return out


def _ranges(catalog: Catalog) -> list[Finding]:
    """Findings on engine ranges against the releases ``rules/engine.yaml`` models and verifies."""
    if catalog.source is None or catalog.engine is None:
        return []
    engine = catalog.engine
    modelled = [r.version for r in engine.releases]
    verified = [r.version for r in engine.releases if r.verified] or modelled
    newest = max(verified)
    out: list[Finding] = []
    open_ended: list[str] = []
    for kind, ident, rng in ranged_items(catalog):
        if rng is None:
            continue
        subject = f"{kind}:{ident}"
        unmodelled = sorted({s.version for s in rng if _bound_version(s.version) not in modelled})
        if unmodelled:
            out.append(Finding("error", "range_bound_unmodelled", subject, f"vLLM {rng} is bounded at {', '.join(unmodelled)}, not a modelled release (rules/engine.yaml models {', '.join(str(v) for v in modelled)}): every bound is a modelled release"))
        if not any(rng.contains(v, prereleases=True) for v in modelled):
            out.append(Finding("warning", "range_admits_no_release", subject, f"vLLM {rng} admits none of the modelled releases ({', '.join(str(v) for v in modelled)}): it never applies"))
            continue
        uppers = [Version(s.version) for s in rng if s.operator in ("<", "<=")]
        lowers = [s for s in rng if s.operator in (">", ">=", "==", "~=", "===")]
        if uppers and min(uppers) > newest:
            out.append(Finding("warning", "range_past_verified", subject, f"vLLM {rng} is bounded past the newest verified release {newest}: nothing verifies the upper bound"))
        if lowers and not uppers:
            open_ended.append(f"{ident} ({rng})")
    if open_ended:
        out.append(Finding("note", "open_ended", f"vLLM > {newest}", f"{len(open_ended)} fact(s) introduced in a verified release hold past {newest} unverified (re-check them first at the next release): " + ", ".join(sorted(open_ended))))
    return out


def _bound_version(text: str) -> Version | None:
    """The release a specifier's version names (``0.33.*`` -> 0.33), ``None`` if it names none."""
    try:
        return Version(text.replace(".*", ""))
    except InvalidVersion:
        return None


def ranged_items(catalog: Catalog) -> list[tuple[str, str, Any]]:
    """Every item of ``catalog``'s table set with its engine range: ``(kind, id, SpecifierSet | None)``.

    ``kind`` is experts, prepare_finalize, constraint (``entry:rule``), global_constraint,
    priority_order, adjustment, opt_in, known_bad, override, backend_alias, all2all_alias,
    environment or shortcut; ``None`` means every release.
    """
    from ..core.compile import versioned_items

    assert catalog.source is not None
    return versioned_items(catalog.source)


def lint(catalog: Catalog, *, today: _dt.date | None = None, sample: bool = True, drift: bool | None = False) -> list[Finding]:
    """Every finding for ``catalog``, errors first.

    ``drift``: compare the FlashInfer kernels with the installed FlashInfer (``moe_oracle.tools.drift``).
    ``False`` skips it; ``None`` runs it when flashinfer imports and otherwise adds a note that it
    was skipped; ``True`` requires it (an unimportable flashinfer is an error).
    """
    findings = _unsatisfiable(catalog) + _constraint_ids(catalog) + _duplicates_and_contradictions(catalog) + _indistinguishable(catalog) + _orders(catalog) + _request_only(catalog) + _aliases(catalog, today or _dt.date.today()) + _coverage(catalog) + _ranges(catalog)
    if sample:
        findings += _never_selected(catalog)
    if drift is not False:
        from .drift import drift_findings

        findings += drift_findings(catalog, required=drift is True)
    order = {"error": 0, "warning": 1, "note": 2}
    return sorted(findings, key=lambda f: (order[f.severity], f.code, f.subject))
