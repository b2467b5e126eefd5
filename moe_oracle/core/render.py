"""Text and compact views of a :class:`~moe_oracle.core.decision.Decision`.

The Decision is the record; this module only reads it. ``explain`` is
:func:`render_explain`, the one-screen answer of ``select`` when nothing is eligible is
:func:`render_dead_end`, ``select --json`` is :func:`compact_dict`.

A dead end leads with what blocks (:func:`moe_oracle.core.blocking.blockers`): where vLLM itself
raises before it selects any kernel, that refusal alone, at the stage it raises it; otherwise the
(reason code, field) pairs that reject every, or nearly every, candidate meant for this device
and quantization. Then the ranked fixes the caller found (why-not without naming a backend), and
only then candidates: the closest few, or every one with ``show_all``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .blocking import IRRELEVANT_MASK, blockers, engine_refusal, refusal_stage, refusing_checks, relevant, shortcut_raises, unmapped_request
from .failures import table_order
from .padding import decision_layer_sizes
from .records import CandidateResult, Failure, Status, jsonable
from .vocab import ReasonCode

if TYPE_CHECKING:
    from .decision import Decision

__all__ = ["actionable_notes", "alternative_lines", "blocker_lines", "blocking_records", "code_histogram", "compact_dict", "render_dead_end", "render_explain", "render_failure", "short_value"]

# Where vLLM raises, in words (moe_oracle.core.stages.STAGES).
_STAGE_WORDS = {
    "config": "at start, validating its configuration",
    "layer": "when it builds the MoE layer",
    "selection": "in the layer's kernel selection",
    "construction": "when it builds the selected kernel",
    "lora": "when it wraps the MoE layers for LoRA, after loading the model",
    "profile_run": "at its start-up profile run, when the selected kernel first runs",
}


_CODE_BY_BIT = tuple(ReasonCode)


def code_histogram(candidates: Iterable[CandidateResult]) -> Counter[str]:
    """Rejected candidates per reason code, each candidate counted once under *every* code it fails."""
    counts: Counter[str] = Counter()
    for cand in candidates:
        for code in {f.code.value for f in cand.failures}:
            counts[code] += 1
    return counts


def _histogram_text(decision: "Decision") -> str:
    """:func:`code_histogram` of the rejected candidates, read from the rows' checks."""
    rows = decision.rows
    counts: Counter[str] = Counter()
    rejected = 0
    for mask, n in Counter(decision.code_masks).items():  # candidates share a handful of code sets
        if mask:
            rejected += n
            while mask:  # each candidate once per code it fails
                low = mask & -mask
                counts[_CODE_BY_BIT[low.bit_length() - 1]._value_] += n
                mask ^= low
    parts = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    text = f"{len(rows)} candidates: {len(rows) - rejected} eligible, {rejected} rejected"
    return text + (f"; rejections by code, a candidate counted under every code it fails: {parts}" if parts else "")


def short_value(value: Any, limit: int = 90) -> str:
    """A value for one line: lists are cut between items, never inside a name.

    >>> short_value(["deepep_low_latency", "deepep_high_throughput", "nixl_ep"], 40)
    '[deepep_low_latency, ... (+2 more)]'
    """
    if isinstance(value, (list, tuple, frozenset, set)):
        items = [short_value(v, limit) for v in (sorted(value, key=str) if isinstance(value, (set, frozenset)) else value)]
        shown: list[str] = []
        for item in items:
            more = len(items) - len(shown) - 1
            candidate = "[" + ", ".join(shown + [item]) + (f", ... (+{more} more)]" if more else "]")
            if shown and len(candidate) > limit:
                return "[" + ", ".join(shown) + f", ... (+{len(items) - len(shown)} more)]"
            shown.append(item)
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, dict):
        return ", ".join(f"{k} {short_value(v, limit)}" for k, v in value.items()) if value else "{}"
    if isinstance(value, str):
        return value
    if value is None or type(value) in (bool, int):  # json.dumps' spelling, without its call
        return "null" if value is None else ("true" if value is True else "false" if value is False else str(value))
    return json.dumps(jsonable(value), default=str)


def _allowed_text(f: Failure) -> str:
    return _allowed_value_text(f.allowed)


def _allowed_value_text(allowed: Any) -> str:
    if isinstance(allowed, dict):
        words = {"multiple_of": "a multiple of", "min": "at least", "max": "at most", "version": "version"}
        parts = []
        for key, value in allowed.items():
            if key == "present":
                parts.append("installed" if value else "not installed")
            else:
                parts.append(f"{words.get(key, key)} {short_value(value)}")
        return " and ".join(parts)
    return "one of " + short_value(allowed) if isinstance(allowed, (list, tuple)) else short_value(allowed)


def _why(f: Failure) -> str:
    why = f.hint or ""
    if f.reference:
        why += f" ({f.reference})" if why else f.reference
    return why


def _pairing_text(decision: "Decision", cand: CandidateResult, f: Failure) -> str:
    """A pairing failure in the operator's words: what the prepare/finalize produces, what the kernel needs."""
    v = decision.normalized.values
    produced = v.get("activation_format")
    needs = cand.activation_format.value
    allowed = short_value(f.allowed)
    return (
        f"pairing_incompatible: the prepare/finalize for dispatch {v.get('dispatch')} produces {produced} activations; "
        f"{cand.kernel} ({cand.interface.value}) consumes {needs} activations and pairs only with dispatch {allowed} [{f.rule}]"
    )


def _failure_lines(decision: "Decision", cand: CandidateResult, indent: str, said: set[str]) -> list[str]:
    """One line per failure, plus its ``why:`` the first time a rule is shown (``said`` collects them)."""
    lines = []
    for f in cand.failures:
        if f.code is ReasonCode.PAIRING_INCOMPATIBLE and f.field == "dispatch":
            lines.append(f"{indent}- {_pairing_text(decision, cand, f)}")
        else:
            lines.append(f"{indent}- {f.code.value}: {f.field} = {short_value(f.observed)}; allowed {_allowed_text(f)} [{f.rule}]")
        why = _why(f)
        if why and f.rule not in said:
            lines.append(f"{indent}  why: {why}")
        said.add(f.rule)
    return lines


def _device_text(decision: "Decision") -> str:
    d = decision.config.device
    name = f"{d.name} " if d.name else ""
    if d.capability is not None:
        return f"{name}({d.platform.value} SM {d.capability})"
    if d.arch:
        return f"{name}({d.platform.value} {d.arch})"
    return f"{name}({d.platform.value})"


def _header(decision: "Decision") -> list[str]:
    v = decision.normalized.values
    lines = [
        "MoE layer: {e} experts top-{k}, hidden {h}, intermediate {i} ({ipp} per partition), {q} ({fam}), {act}, routing {r}, logits {ld}".format(
            e=v["num_experts"], k=v["top_k"], h=v["hidden_size"], i=v["intermediate_size"], ipp=v["intermediate_size_per_partition"],
            q=v["quant_scheme"], fam=v["quant_family"], act=v["activation"], r=v["routing_method"], ld=v["router_logits_dtype"],
        ),
        "Device: {dev}; tp={tp} dp={dp}{pcp} ep={ep} dispatch={d} format={fmt}{placement}{eplb}{lora}".format(
            dev=_device_text(decision), tp=v["tp_size"], dp=v["dp_size"], ep=v["ep_size"],
            pcp=f" pcp={decision.config.parallel.pcp_size}" if decision.config.parallel.pcp_size > 1 else "", d=v["dispatch"], fmt=v["activation_format"],
            placement=f" placement={v['expert_placement']}" if v["expert_placement"] != "linear" else "",  # the placement vLLM uses, shown when not its default
            eplb=" eplb" if v["enable_eplb"] else "", lora=" lora" if v["lora"] else "",
        ),
        # One line: a probe's notes (where the packages were read) follow on it.
        "; ".join((f"Environment: {'probed' if decision.environment.probed else 'declared'} (fingerprint {decision.environment.fingerprint}); tables {decision.tables_hash}",
                   *decision.environment.notes)),
        f"Answer for: {decision.release.label() if decision.release is not None else 'engine release unknown'}; {decision.view} view, {decision.policy} policy",
    ]
    if decision.release is not None:
        lines += [f"Assumed: {text}" for text in decision.release.package_notes()]
    for warning in decision.warnings:
        lines.append(f"WARNING: {warning.message}" + (f" [{warning.rule}]" if warning.rule else "") + (f" ({warning.reference})" if warning.reference else ""))
    lines += [f"Note: {note}" for note in decision.notes]
    return lines


def blocker_lines(decision: "Decision", said: set[str] | None = None) -> list[str]:
    """``Blocking:`` and one line (with its ``why:``) per blocker of a dead end, as ``select`` and
    ``explain`` print them (``plan`` under a group without a kernel); ``[]`` when none."""
    found = blockers(decision)
    if not found:
        return []
    _, one, several = relevant(decision)
    lines = ["Blocking:"]
    refusal = engine_refusal(decision)
    for b in found:
        f = b.failure
        whom = f"every {one}" if b.rejected == b.of else f"{b.rejected} of {b.of} {several}"
        more = f" (+{len(b.rules) - 1} more rules)" if len(b.rules) > 1 else ""
        if b.allowed_differ:
            what = f"{f.field} = {short_value(f.observed)}, allowed values differ between its {len(b.rules)} rules"
        else:
            between = f" (between its {len(b.rules)} rules)" if b.allowed_union else ""
            what = f"{f.field} = {short_value(f.observed)}, allowed {_allowed_text(f)}{between}"
        if b.raised_at is not None and refusal is not None:
            if refusal.kind == "request":
                effect = "vLLM raises when it reads the request, before it tries the backend's kernels"
            else:
                effect = f"vLLM raises here, {_STAGE_WORDS[b.raised_at]}, before it tries any kernel"
        elif decision.refused is not None:
            row = decision.rows[decision.refused]
            label = shortcut_raises(decision)
            if label is not None:
                effect = f"vLLM's early return {label} tries {row.entry.id} ({row.entry.upstream}) and raises"
            else:
                effect = f"the engine selects {row.entry.id} ({row.entry.upstream}), then refuses the layer"
        elif unmapped_request(decision) is not None:
            effect = "maps to no kernel of this layer, so it rejects every candidate"
        else:
            effect = f"rejects {whom}"
        lines.append(f"  {what}: {effect} ({b.code.value}) [{b.rules[0]}{more}]")
        why = _why(f)
        if why:
            # A pair behind several rules shows what they allow between them; the reason is its first rule's.
            whose = f" ({f.rule})" if b.allowed_union or b.allowed_differ else ""
            lines.append(f"    why{whose}: {why}")
        if said is not None:
            said.update(b.rules)
    return lines


def alternative_lines(alternatives: Iterable[Any], indent: str = "  ", *, serve: bool = False) -> list[str]:
    """Numbered lines, one per alternative; equal costs are marked as ties (``serve``: see
    :meth:`moe_oracle.explain.whynot_edits.Alternative.describe`)."""
    alts = list(alternatives)
    costs = Counter(a.cost for a in alts)
    return [f"{indent}{i}. {a.describe(serve=serve)}  [cost {a.cost}{', tie' if costs[a.cost] > 1 else ''}] -> {a.outcome()}" for i, a in enumerate(alts, start=1)]


def _fix_lines(fixes: Sequence[Any] | None, show: int = 3, serve: bool = False, left_out: str | None = None) -> list[str]:
    if fixes is None:
        return []
    after = [f"  Left out: {left_out}"] if left_out else []
    if not fixes:
        return ["Fixes: no change of a few inputs (the model kept) makes a candidate eligible."] + after
    return ["Fixes, fewest and least disruptive first (each re-checked):"] + alternative_lines(list(fixes)[:show], serve=serve) + after


def render_dead_end(decision: "Decision", fixes: Sequence[Any] | None = None, *, command: str = "explain", said: set[str] | None = None, serve: bool = False, left_out: str | None = None) -> str:
    """The ``select`` answer when nothing is eligible: what blocks, the ranked fixes, where to look next.

    ``fixes``: alternatives from :func:`moe_oracle.explain.whynot.fixes` (``None``: not searched);
    ``serve``: the deployment came from a ``vllm serve`` line, so fixes name its flags
    (:meth:`moe_oracle.explain.whynot_edits.Alternative.describe`); ``left_out``: the fixes the
    search was kept from and why, said after them (``run``: those that change the GPU).
    """
    unmapped = unmapped_request(decision)
    refusal = engine_refusal(decision)
    n = len(decision.rows)
    if refusal is not None and (refusal.stage == "config" or unmapped is None):
        who = f"Requested backend {', '.join(decision.requested)} ({decision.requested_by})" if decision.requested else "No MoE kernel runs"
        if refusal.kind == "request":
            head = f"{who} is refused for {decision.answered_for}: vLLM raises on the request itself, before it tries the backend's kernels; {n} candidates."
        else:
            head = f"{who} for {decision.answered_for}: vLLM raises {_STAGE_WORDS[refusal.stage]}, before it tries any kernel; {n} candidates."
    elif decision.refused is not None:
        who = f"Requested backend {', '.join(decision.requested)} ({decision.requested_by})" if decision.requested else "No MoE kernel runs"
        label = shortcut_raises(decision)
        if label is not None:
            head = f"{who} for {decision.answered_for}: vLLM's early return {label} tries {decision.refused_kernel} and raises; {n} candidates."
        else:
            refusing = refusing_checks(decision)
            stage = refusal_stage(refusing) if refusing else None
            raised = f": vLLM raises {_STAGE_WORDS[stage]}" if stage is not None else ""
            built, paired = decision.ranking.built_pf(decision.refused), decision.ranking.pf(decision.refused)
            if stage == "construction" and built is not None and built is not paired:
                raised += f", on the prepare/finalize it builds here, {built.id} ({built.upstream})"
            head = f"{who} for {decision.answered_for}: the engine selects {decision.refused_kernel}, then refuses the layer{raised}; {n} candidates."
    elif unmapped is not None:
        family = decision.normalized.values.get("quant_family")
        head = f"Requested backend {unmapped[0]} ({decision.requested_by}) maps to no kernel of this {family} layer for {decision.answered_for}: {n} candidates."
    elif decision.requested:
        head = f"Requested backend {', '.join(decision.requested)} ({decision.requested_by}) is not eligible for {decision.answered_for}: {n} candidates."
    else:
        head = f"No MoE kernel is eligible for {decision.answered_for}: {n} candidates."
    lines = [head] + blocker_lines(decision, said) + _fix_lines(fixes, serve=serve, left_out=left_out)
    lines.append(f"Every candidate and reason: moe-oracle {command} ... --all")
    return "\n".join(lines)


def render_failure(decision: "Decision") -> str:
    """The full trail for an exception or a log: the dead-end summary, then every candidate
    (every requested one, for a strict request) with every reason."""
    lines = [render_dead_end(decision).rsplit("\n", 1)[0], "Candidates:"]
    values = decision.normalized.values
    for row in decision.rows:  # read from the rows' checks: the message of every NoEligibleKernelError
        backend = row.entry.backend
        if decision.requested and backend not in decision.requested:
            continue
        reasons = "; ".join(f"{c.code_value}: {c.field}={short_value(c.observed(values))} (allowed {_check_allowed_text(c)}) [{c.rule}]" for c in table_order(row.failures))
        lines.append(f"  - {row.entry.id} [{backend}]: {reasons}")
    return "\n".join(lines)


def _check_allowed_text(chk: Any) -> str:
    """:func:`_allowed_text` of ``chk``'s failures (the same for every record of the check: its
    allowed value is fixed), kept on the immutable check once worded."""
    text = chk.__dict__.get("_allowed_text")
    if text is None:
        text = chk.__dict__["_allowed_text"] = _allowed_value_text(chk.allowed_value)
    return text


def _backend_order(decision: "Decision") -> str:
    """The priority order over the backends with a kernel for this platform: a backend each of
    whose kernels fails its own ``platform_unsupported`` check is left out (and counted)."""
    from .codes import ReasonCode

    foreign = set()
    by_backend: dict[str, list[Any]] = {}
    for c in decision.candidates:
        by_backend.setdefault(c.backend, []).append(c)
    for backend, rows in by_backend.items():
        # the kernel's own platform check (its rule id starts with the kernel's), not a prepare/finalize's
        if all(any(f.code == ReasonCode.PLATFORM_UNSUPPORTED and str(f.rule).startswith(f"{r.kernel}.") for f in r.failures) for r in rows):
            foreign.add(backend)
    shown = [b for b in decision.backend_order if b not in foreign]
    left = len(decision.backend_order) - len(shown)
    return " > ".join(shown) + (f" ({left} backend{'s' if left != 1 else ''} of other platforms left out)" if left else "")


def render_explain(decision: "Decision", *, show_all: bool = False, fixes: Sequence[Any] | None = None, closest: int = 5, serve: bool = False, left_out: str | None = None) -> str:
    """The ``explain`` view.

    With a winner: inputs, winner, order, assumptions, then the candidates (rows numbered 1..n
    as shown; ``rank`` is the priority position). With none: inputs, what blocks, the ranked
    fixes (``serve``, ``left_out``: as :func:`render_dead_end`), then the ``closest`` candidates
    meant for this problem (fewest failures), or every candidate with ``show_all``.
    """
    lines = _header(decision)
    sel = decision.selected
    said: set[str] = set()
    lines.append("")
    if sel is None:
        dead = render_dead_end(decision, fixes, said=said, serve=serve, left_out=left_out).rsplit("\n", 1)[0]
        lines.append("Selected: NONE - " + dead[0].lower() + dead[1:])
    else:
        how = f"shortcut {decision.shortcut} (the engine returns it before its priority order)" if decision.shortcut else f"requested ({decision.requested_by})" if decision.requested else f"priority order {decision.order_rule}"
        lines.append(f"Selected: {sel.kernel} [backend {sel.backend}, {sel.interface.value}, {sel.activation_format.value}] + prepare/finalize {sel.prepare_finalize}, by {how}")
        sizes = decision_layer_sizes(decision)
        if sizes is not None and sizes.padded:
            lines.append(f"Weights padded: {sizes.text()}")
    if decision.requested:
        lines.append(f"Requested backends: {', '.join(decision.requested)} (strict: no fallback)")
    lines.append("Backend order: " + _backend_order(decision))
    for d in decision.demotions:
        where, _, anchor = d.position.partition(":")
        moved = f"directly {where} {anchor}" if anchor else f"to the {d.position}"
        lines.append(f"Adjustment {d.rule}: {d.backend} moved {moved} - {d.reason}")
    if sel is not None and sel.assumptions:
        lines.append(f"Assumptions behind the winner ({len(sel.assumptions)}):")
        for a in sel.assumptions:
            lines.append(f"  - {a.hint.split(' (')[0]} [{a.rule}]")
    lines.append("")
    lines.append(f"Candidates ({_histogram_text(decision)}):")
    rows = decision.rows
    positions: list[int]
    if show_all:
        positions = list(range(len(rows)))
    elif sel is None:
        positions = sorted(relevant(decision)[0], key=lambda pos: (len(rows[pos].failures), pos))[:closest]
        if decision.refused is not None:
            # The kernel the engine selected and refused the layer for, then those it outranks.
            first = [decision.refused] + [pos for pos, codes in enumerate(decision.code_masks) if not codes]
            positions = first + [pos for pos in positions if pos not in first][: max(0, closest - len(first))]
    else:
        positions = [pos for pos, codes in enumerate(decision.code_masks) if not codes & IRRELEVANT_MASK]
    shown = [decision.candidate_at(pos) for pos in positions]
    lines.append("   #  rank  kernel [backend, interface]  status")
    for i, cand in enumerate(shown, start=1):
        lines.append(f"  {i:>2}. {cand.rank:>4}  {cand.kernel} [{cand.backend}, {cand.interface.value}]  {cand.status.value.upper()}")
        if cand.status is Status.ELIGIBLE:
            if decision.refused is not None:
                after = ", which the engine selects and then refuses the layer for"
            elif decision.shortcut is not None and cand.outranked_by == decision.kernel:
                after = f", which the engine returns before its priority order and any --moe-backend ({decision.shortcut})"
            else:
                after = ""
            lines.append(f"        eligible, outranked by {cand.outranked_by}{after}")
        lines += _failure_lines(decision, cand, "        ", said)
    hidden = len(rows) - len(shown)
    if hidden:
        what = "further from this problem (another quant scheme, platform or backend request, or more failures)" if sel is None else "rejected for another quant scheme, platform or backend request"
        lines.append(f"  ... {hidden} more {what}: --all lists them")
    return "\n".join(lines)


def compact_dict(decision: "Decision", fixes: Sequence[Any] | None = None) -> dict[str, Any]:
    """``select --json``: the winner and what it rests on, without the candidate list.

    Field names are those of the full record (``schemas/select.schema.json``); ``blocking``
    (and ``fixes``, when searched) are present when nothing is eligible.
    """
    full = decision.to_dict()
    out = {k: full[k] for k in ("format_version", "selected", "selected_by", "shortcut", "requested", "engine", "view", "policy", "warnings", "summary", "assumptions", "notes", "tables_hash", "fingerprint")}
    if decision.selected is None:
        out["blocking"] = blocking_records(decision)
        if fixes is not None:
            out["fixes"] = [f.to_dict() for f in fixes]
    return out


def blocking_records(decision: "Decision") -> list[dict[str, Any]]:
    """What blocks a dead end, as records (``select --json``'s and a plan group's ``blocking``)."""
    return [
        {"code": b.code.value, "field": b.field, "observed": jsonable(b.failure.observed), "allowed": jsonable(b.failure.allowed), "rejected": b.rejected, "of": b.of, "rules": list(b.rules), "hint": b.failure.hint,
         **({"raised_at": b.raised_at} if b.raised_at is not None else {})}
        for b in blockers(decision)
    ]


# Words of a note that asks the user to change what they wrote (core/envvars.py env_notes and the
# input notes): a replacement to use, a likely typo, a value read otherwise than written.
_ACTIONABLE = ("; use ", "did you mean", "given more than once: the last", " is read as ", "has no effect", " is not a vLLM", "is not read", "weight-only (W8A16)", "on a ROCm device: DeepEP", ": not modelled: ")


def actionable_notes(notes: Iterable[str]) -> list[str]:
    """The notes that change what the user should do (a removed variable and its replacement, a
    likely typo, a value read otherwise than written): ``select`` prints them on stderr, as it
    does warnings, since its one line drops the rest.

    >>> actionable_notes(["--env: X has no effect: ...; use --moe-backend marlin", "device H200 from --gpu"])
    ['--env: X has no effect: ...; use --moe-backend marlin']
    """
    return [n for n in notes if any(word in n for word in _ACTIONABLE)]
