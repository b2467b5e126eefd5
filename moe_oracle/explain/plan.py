"""Whole-model plans: every layer of a checkpoint, target and draft, on every rank.

:func:`build_plan` takes a :class:`~moe_oracle.inputs.checkpoint.Checkpoint` and a deployment,
builds one :class:`~moe_oracle.core.config.MoEConfig` per MoE layer, asks the oracle for each
(memoized: equal layers cost one selection), and groups layers whose decisions are
identical. With expert parallelism it also places each layer's experts on every rank and
evaluates every rank's selection inputs (a rank's local expert count is an input), so a plan
whose ranks would build different kernels says so.

Engine rules that live here rather than in the tables (vLLM 0.29.0-0.33.0; notes name the
release the plan is for):

* the draft (MTP) layers inherit the target's ``moe_backend`` unless the speculative config
  sets its own (``vllm/config/speculative.py _DRAFT_VLLM_CONFIG_OVERRIDES``); what a
  quantization-only backend (``marlin``, ``humming``) means for an unquantized draft layer is
  the tables' business (P/oracle/unquantized.py), so it is passed on unchanged;
* the draft runs with the target's parallelism (``draft_tensor_parallel_size`` defaults to it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ..core.catalog import Catalog
from ..core.names import escaped
from ..inputs.checkpoint import Checkpoint, CheckpointLayer
from ..inputs.model_deployment import ModelDeployment
from ..core.config import Device, MoEConfig, ParallelConfig, Provenance
from ..core.decision import Decision
from ..core.environment import Environment
from ..core.errors import ConfigError
from ..core.oracle import Oracle
from ..core.padding import LayerSizes, decision_layer_sizes
from ..core.placement import Placement, expert_placement, ranges_text
from ..core.refusals import Origin, refusals
from ..core.render import blocker_lines, blocking_records
from ..core.versions import EngineRelease
from ..core.vocab import Source

__all__ = ["PLAN_FORMAT_VERSION", "Plan", "PlanGroup", "RankClass", "build_plan", "layer_ranges", "plan_deployment"]

PLAN_FORMAT_VERSION = 1


def layer_ranges(indices: Sequence[int]) -> str:
    """``3–60`` / ``0, 2, 4`` text for layer indices (en dash for runs).

    >>> layer_ranges([3, 4, 5, 61])
    '3–5, 61'
    """
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and i == out[-1][1] + 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    parts = [str(a) if a == b else f"{a}–{b}" for a, b in out]
    if len(parts) > 8:
        step = indices[1] - indices[0] if len(indices) > 1 else 0
        if step > 1 and all(b - a == step for a, b in zip(indices, indices[1:])):
            return f"{indices[0]}, {indices[1]}, …, {indices[-1]} (every {step})"
        parts = parts[:7] + ["…"]
    return ", ".join(parts)


@dataclass(frozen=True)
class RankClass:
    """Ranks that hold the same number of a layer's experts, and what they would run.

    Attributes:
        ranks: EP ranks in this class.
        local_experts: experts each of them holds.
        decision: the selection for one of them (the others have equal inputs).
    """

    ranks: tuple[int, ...]
    local_experts: int
    decision: Decision

    def to_dict(self) -> dict[str, Any]:
        return {"ranks": list(self.ranks), "local_experts": self.local_experts, "kernel": self.decision.kernel, "prepare_finalize": self.decision.prepare_finalize, "fingerprint": self.decision.fingerprint()}


@dataclass(frozen=True)
class PlanGroup:
    """Layers with identical inputs and decision.

    Attributes:
        layers: the checkpoint layers (decoder order).
        decision: the selection (MoE layers), else ``None``.
        placement: per-rank experts (MoE layers under EP), else ``None``.
        rank_classes: per local-expert-count class, the decision (MoE layers under EP).
    """

    layers: tuple[CheckpointLayer, ...]
    decision: Decision | None
    placement: Placement | None = None
    rank_classes: tuple[RankClass, ...] = ()

    @property
    def first(self) -> CheckpointLayer:
        return self.layers[0]

    @property
    def kind(self) -> str:
        return self.first.spec.kind

    @property
    def role(self) -> str:
        return self.first.spec.role

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(layer.spec.index for layer in self.layers)

    @property
    def ranks_agree(self) -> bool:
        return len({c.decision.fingerprint() for c in self.rank_classes}) <= 1

    def layer_sizes(self) -> LayerSizes | None:
        """The checkpoint's hidden size and intermediate size per partition, and the padded ones
        vLLM builds the weights with for the selected kernel (``None``: no kernel, or not MoE)."""
        return decision_layer_sizes(self.decision) if self.decision is not None else None

    def excluded_by(self) -> tuple[str, ...]:
        """Every exclusion entry that left this group's routed experts unquantized."""
        return tuple(dict.fromkeys(layer.quant.excluded_by for layer in self.layers if layer.quant is not None and layer.quant.excluded_by is not None))

    def shared_excluded_by(self) -> tuple[str, ...]:
        """Every exclusion entry that left this group's shared experts unquantized."""
        return tuple(dict.fromkeys(layer.shared_excluded_by for layer in self.layers if layer.shared_excluded_by is not None))

    def selector_weight_block(self) -> list[int] | None:
        """``[block_n, block_k]`` of the weight key the front end hands the kernel selector: the
        checkpoint's block, or the block refined to the TP shard (vLLM 0.29.0+ Q/fp8.py
        ``Fp8MoEMethod.__init__``, P/oracle/fp8.py ``refine_fp8_moe_block_shape``; the normalized
        field ``weight_block``). ``None`` without block weights or without a decision."""
        if self.decision is None:
            return None
        block = self.decision.normalized.values.get("weight_block")
        if not isinstance(block, str) or "x" not in block:
            return None
        n, k = block.split("x", 1)
        return [int(n), int(k)]

    def block_refined(self) -> bool:
        """The selector's weight block is not the checkpoint's (refined to the TP shard)."""
        q = self.first.quant
        sel = self.selector_weight_block()
        return sel is not None and q is not None and q.weight_block_size is not None and tuple(sel) != tuple(q.weight_block_size)

    def label(self) -> str:
        """``layers 3–60 (58)`` / ``layer 61 (MTP mtp.0)``."""
        n = len(self.layers)
        where = layer_ranges(self.indices)
        noun = "layer" if n == 1 else "layers"
        if self.role == "draft":
            names = ", ".join(layer.spec.name for layer in self.layers) if n <= 3 else f"{self.layers[0].spec.name}…{self.layers[-1].spec.name}"
            return f"{noun} {where} (MTP {names})" if n == 1 else f"{noun} {where} ({n}, MTP {names})"
        return f"{noun} {where}" + ("" if n == 1 else f" ({n})")

    def to_dict(self) -> dict[str, Any]:
        first = self.first
        out: dict[str, Any] = {
            "layers": list(self.indices),
            "names": [layer.spec.name for layer in self.layers],
            "kind": self.kind,
            "role": self.role,
            "why": first.spec.why,
            "experts_module": first.spec.experts,
            "quant": None,
            "shared_experts": None,
            "selected": None,
            "selected_by": None,
            "summary": None,
            "fingerprint": None,
            "ranks_agree": self.ranks_agree,
            "rank_classes": [c.to_dict() for c in self.rank_classes],
        }
        if first.quant is not None:
            q = first.quant
            out["quant"] = {"scheme": q.label, "weight": q.scheme.weight, "activation": q.scheme.activation, "method": q.method, "excluded_by": list(self.excluded_by()), "evidence": q.evidence, "weight_block_size": list(q.weight_block_size) if q.weight_block_size else None,
                            "selector_weight_block": self.selector_weight_block(), "weight_group_size": q.weight_group_size}
        if first.spec.shared is not None:
            out["shared_experts"] = {"module": first.spec.shared, "excluded_by": list(self.shared_excluded_by()), "quantized": first.shared_excluded_by is None}
        if self.decision is not None:
            record = self.decision.to_dict()
            out["selected"] = record["selected"]
            out["selected_by"] = record["selected_by"]
            out["summary"] = record["summary"]
            out["fingerprint"] = record["fingerprint"]
            out["moe_backend"] = self.decision.config.moe_backend
            if self.decision.selected is None:
                out["blocking"] = blocking_records(self.decision)
            sizes = self.layer_sizes()
            if sizes is not None:
                out["layer_sizes"] = sizes.to_dict()
        return out


@dataclass(frozen=True)
class Plan:
    """A whole-model plan (``moe-oracle plan``).

    Attributes:
        checkpoint: the model as read.
        device, parallel: the deployment.
        moe_backend: the target's requested backend; draft_moe_backend: the draft's, and
            draft_backend_source: ``inherited from the target``, ``speculative config`` or the
            flag that gave it (``--draft-moe-backend``).
        groups: layer groups, in the order of their first layer (target, then draft).
        notes: checkpoint notes plus deployment notes.
        environment: the environment every selection ran under.
        release: the engine release the plan is for (declared, probed or assumed; its warnings
            say when the release is not modelled), as explain's ``Answer for:``; ``None`` only
            for a catalog without an engine (hand-built in tests).
    """

    checkpoint: Checkpoint
    device: Device
    parallel: ParallelConfig
    moe_backend: str
    draft_moe_backend: str
    draft_backend_source: str
    groups: tuple[PlanGroup, ...]
    notes: tuple[str, ...]
    environment: Environment
    release: EngineRelease | None = None

    @property
    def expert_placement(self) -> str:
        """The placement requested (``parallel.expert_placement_strategy``); each group's
        :attr:`PlanGroup.placement` says the one vLLM uses."""
        return self.parallel.expert_placement_strategy

    @property
    def ok(self) -> bool:
        """Every MoE layer got a kernel."""
        return all(g.decision is None or g.decision.winner is not None for g in self.groups)

    @property
    def ranks_agree(self) -> bool:
        return all(g.ranks_agree for g in self.groups)

    def moe_groups(self) -> tuple[PlanGroup, ...]:
        return tuple(g for g in self.groups if g.decision is not None)

    def to_dict(self) -> dict[str, Any]:
        """The plan record (validates against ``schemas/plan.schema.json``)."""
        ck, p = self.checkpoint, self.parallel
        placements = {}
        for g in self.groups:
            if g.placement is not None:
                placements.setdefault(str(g.placement.num_logical), g.placement.to_dict())
        return {
            "format_version": PLAN_FORMAT_VERSION,
            "model": {"name": ck.name, "file": ck.file, "model_type": ck.model_type, "architecture": ck.architecture, "family": ck.family.name,
                      "quantization": {"method": ck.quant.method, "declared": ck.quant.declared, "source": ck.quant.source}},
            "deployment": {
                "device": {"platform": self.device.platform.value, "capability": self.device.capability, "arch": self.device.arch, "name": self.device.name},
                "tp_size": p.tp_size, "dp_size": p.dp_size, "pcp_size": p.pcp_size, "use_ep": p.use_ep, "all2all_backend": p.all2all_backend.value,
                "enable_eplb": p.enable_eplb, "num_redundant_experts": p.num_redundant_experts, "expert_placement": self.expert_placement,
                "moe_backend": self.moe_backend, "draft_moe_backend": self.draft_moe_backend, "draft_backend_source": self.draft_backend_source,
            },
            "engine": self.release.to_dict() if self.release is not None else None,
            "ok": self.ok,
            "ranks_agree": self.ranks_agree,
            "groups": [g.to_dict() for g in self.groups],
            "placement": placements,
            "environment": self.environment.to_dict(),
            "notes": list(self.notes),
        }

    def render_text(self) -> str:
        """The ``plan`` view: one line per group, then ranks and notes."""
        ck, p, d = self.checkpoint, self.parallel, self.device
        dev = f"{d.name} " if d.name else ""
        dev += f"({d.platform.value}" + (f" SM {d.capability}" if d.capability else (f" {d.arch}" if d.arch else "")) + ")"
        ep = p.world if p.use_ep and p.world > 1 else 1
        pcp = f" pcp={p.pcp_size}" if p.pcp_size > 1 else ""
        draft = f"draft {self.draft_moe_backend} ({self.draft_backend_source})" if any(g.role == "draft" for g in self.groups) else "no draft layers"
        lines = [
            escaped(f"Plan for {ck.name or ck.file} ({ck.model_type}, {ck.architecture}, family {ck.family.name})"),  # config.json values, escaped as the notes
            f"Deployment: {dev}; tp={p.tp_size} dp={p.dp_size}{pcp} ep={ep}{' a2a=' + p.all2all_backend.value if ep > 1 and (p.dp_size > 1 or p.pcp_size > 1) else ''}{' eplb+' + str(p.num_redundant_experts) if p.enable_eplb else ''}; moe_backend {self.moe_backend}, {draft}",
            f"Quantization: {ck.quant.method or 'none'} ({ck.quant.source})",
            f"Answer for: {self.release.label() if self.release is not None else 'engine release unknown'}",
        ]
        if self.release is not None:
            lines += [f"Assumed: {text}" for text in self.release.package_notes()]
            lines += [f"WARNING: {text}" for text in self.release.warnings]
        lines.append("")
        for g in self.groups:
            lines.append("  " + self._group_line(g))
        lines.append("")
        lines += self._rank_lines()
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines)

    def _group_line(self, g: PlanGroup) -> str:
        if g.decision is None:
            what = {"dense": "dense MLP", "none": "no feed-forward (" + g.first.spec.why.split("(")[-1].rstrip(")") + ")"}.get(g.kind, g.kind)
            return f"{g.label()}: {what}"
        q = g.first.quant
        assert q is not None
        kind = "hash-routed MoE" if g.kind == "hash_moe" else "MoE"
        sel = g.decision.selected
        target = f"{sel.kernel} [{sel.backend}, {sel.interface.value}] + {sel.prepare_finalize}" if sel else "NO KERNEL (" + g.decision.summary() + ")"
        line = f"{g.label()}: {kind} {q.label} -> {target}"
        if g.block_refined():
            assert q.weight_block_size is not None
            sel_block = g.selector_weight_block() or []
            line += f"\n      weight block {q.weight_block_size[0]}x{q.weight_block_size[1]} refined to {sel_block[0]}x{sel_block[1]} to fit the TP shard; the kernel is selected for the refined block"
        if g.role == "draft":
            line += f"; moe_backend {g.decision.config.moe_backend}"
        if sel is None:
            # What select and explain print for this layer: what blocks, with the rule and its why.
            line += "".join(f"\n      {text}" for text in blocker_lines(g.decision))
            if self.checkpoint.representative() in g.layers:
                # select and explain --model answer for this layer; their fixes are searched and re-checked there.
                line += "\n      the ranked fixes for this layer: moe-oracle explain with the same --model and deployment flags"
        sizes = g.layer_sizes()
        if sizes is not None and sizes.padded:
            line += f"\n      weights padded: {sizes.text()}"
        if q.excluded_by is not None:
            more = len(g.excluded_by()) - 1
            line += f"\n      because the experts are left unquantized: {q.evidence}" + (f" (and {more} more entries, one per layer)" if more > 0 else "")
        shared = g.shared_excluded_by()
        if g.first.spec.shared is not None and shared:
            which = f"{shared[0]!r}" + (f" and {len(shared) - 1} more, one per layer" if len(shared) > 1 else "")
            line += f"\n      shared experts stay unquantized (excluded by {which}); they are dense layers, not part of this kernel"
        return line

    def _rank_lines(self) -> list[str]:
        p = self.parallel
        world = p.world
        if not (p.use_ep and world > 1):
            return [f"Ranks: {world} rank{'s' if world != 1 else ''}, no expert parallelism: every rank holds every expert (intermediate size split {world} ways); one selection per layer group."]
        lines = []
        seen: set[int] = set()
        for g in self.moe_groups():
            pl = g.placement
            if pl is None or pl.num_logical in seen:
                continue
            seen.add(pl.num_logical)
            classes = ", ".join(f"{len(rs)} rank{'s hold' if len(rs) != 1 else ' holds'} {n}" for n, rs in sorted(pl.classes().items(), reverse=True))
            extra = f" + {pl.num_physical - pl.num_logical} redundant (EPLB)" if pl.num_physical > pl.num_logical else ""
            fb = f" ({pl.requested} requested: {pl.fallback})" if pl.fallback else ""
            lines.append(f"Ranks: {pl.ep_size} EP ranks, {pl.num_logical} experts{extra}, {pl.strategy} placement{fb}: {classes}")
            shown = pl.ranks if len(pl.ranks) <= 6 else pl.ranks[:2] + pl.ranks[-2:]
            for r in shown:
                if len(pl.ranks) > 6 and r.rank == pl.ranks[-2].rank:
                    lines.append(f"  ... ranks 2-{len(pl.ranks) - 3} (--json lists every rank)")
                lines.append(f"  rank {r.rank}: experts {ranges_text(r.physical)}" + (f" ({r.redundant} redundant, copies of logical {ranges_text(tuple(sorted(set(r.logical[-r.redundant:]))))})" if r.redundant else ""))
            if pl.empty_ranks():
                lines.append(f"  ranks {ranges_text(pl.empty_ranks())} hold no expert of these layers")
        diverging = [g for g in self.moe_groups() if not g.ranks_agree]
        if diverging:
            for g in diverging:
                parts = "; ".join(f"ranks {ranges_text(c.ranks)} ({c.local_experts} experts) -> {c.decision.kernel}" for c in g.rank_classes)
                lines.append(f"RANKS DIVERGE for {g.label()}: {parts}")
        else:
            fps = sorted({c.decision.fingerprint() for g in self.moe_groups() for c in g.rank_classes})
            lines.append(f"Every rank builds the same kernels (per group, one fingerprint across ranks: {', '.join(fps)})")
        return lines


def build_plan(
    checkpoint: Checkpoint,
    oracle: Oracle,
    *,
    device: Device,
    parallel: ParallelConfig | None = None,
    moe_backend: str = "auto",
    draft_moe_backend: str | None = None,
    draft_source: str | None = None,
    include_draft: bool = True,
    draft_by_serve: bool = False,
    lora: bool = False,
    batch_invariant: bool = False,
    max_num_tokens: int | None = None,
    environment: Environment | None = None,
    provenance: Sequence[Provenance] = (),
    notes: Sequence[str] = (),
    origins: Mapping[str, Origin] | None = None,
) -> Plan:
    """Plan every layer of ``checkpoint`` on ``device`` under ``parallel``.

    Args:
        checkpoint: the model (:func:`~moe_oracle.inputs.checkpoint.read_checkpoint`).
        oracle: selects (its memo makes equal layers cost one selection).
        device: where every layer runs.
        parallel: deployment parallelism (default: one rank).
        moe_backend: the target's ``--moe-backend``.
        draft_moe_backend: ``--speculative-config moe_backend``; ``None`` inherits ``moe_backend``.
        draft_source: where ``draft_moe_backend`` was given, for the plan's source label
            (``--draft-moe-backend``); default ``speculative config``.
        include_draft: plan the MTP draft layers the checkpoint carries.
        draft_by_serve: a serve line's speculative config decided that vLLM drafts with them
            (its note says so), rather than the plan assuming MTP speculative decoding.
        lora, batch_invariant, max_num_tokens: deployment flags applied to every layer.
        environment: environment for every selection (default: the oracle's).
        provenance: records for deployment fields (the CLI passes its flags).
        notes: deployment notes to carry (inputs with no effect, serve-line remarks).
        origins: where each deployment field was given, for refusals that name that input
            (:func:`~moe_oracle.core.refusals.refusals`; default: moe-oracle's flags).

    Raises:
        ConfigError: a layer's MoEConfig is invalid (the message names the field), a deployment
            vLLM refuses at start (:func:`~moe_oracle.core.refusals.refusals`: EPLB whose physical
            experts do not split over the EP ranks, ...), or an unknown backend.
    """
    parallel = parallel or ParallelConfig()
    env = environment if environment is not None else oracle.environment
    release = oracle.catalog.release(env) if oracle.catalog.source is not None else None
    who = f"vLLM {release.stand_in}" if release is not None else "vLLM"
    draft_backend = draft_moe_backend if draft_moe_backend is not None else moe_backend
    draft_source = (draft_source or "speculative config") if draft_moe_backend is not None else "inherited from the target"
    base_prov = tuple(provenance) + (Provenance("device", Source.HARDWARE, f"device {device.name or device.platform.value}"),)
    layers = [layer for layer in checkpoint.layers if include_draft or layer.spec.role == "target"]
    groups: dict[tuple[Any, ...], list[CheckpointLayer]] = {}
    decisions: dict[tuple[Any, ...], Decision | None] = {}
    # Layers whose inputs differ only in provenance (evidence naming the layer) share a decision.
    by_inputs: dict[MoEConfig, Decision] = {}
    for layer in layers:
        decision = None
        if layer.kwargs is not None:
            backend = draft_backend if layer.spec.role == "draft" else moe_backend
            prov = _merge(layer.provenance, base_prov, (Provenance("moe_backend", Source.USER_FLAG, f"{'draft: ' + draft_source if layer.spec.role == 'draft' else 'target'} moe_backend {backend}"),) if backend != "auto" else ())
            config = MoEConfig(device=device, parallel=parallel, moe_backend=backend, lora=lora, batch_invariant=batch_invariant, max_num_tokens=max_num_tokens, provenance=prov, **layer.kwargs)
            bare = replace(config, provenance=())
            decision = by_inputs.get(bare)
            if decision is None:
                issues = refusals(config, release=release, origins=origins)  # the server would not start: bad input, as for select
                if issues:
                    raise ConfigError(issues)
                decision = by_inputs[bare] = oracle.select(config, env, strict=False)
        q = layer.quant
        # Exclusion lists often name every layer; layers excluded by different entries of the
        # same list still group together (the group lists every entry that decided).
        key = (layer.spec.role, layer.spec.kind, replace(decision.config, provenance=()) if decision else None,
               q.excluded_by is not None if q else None, layer.shared_excluded_by is not None, layer.spec.kind == "none" and layer.spec.why.split("=")[-1])
        groups.setdefault(key, []).append(layer)
        decisions[key] = decision
    out: list[PlanGroup] = []
    for key, members in groups.items():
        decision = decisions[key]
        placement, classes = None, ()
        if decision is not None:
            placement = expert_placement(decision.config.num_experts, parallel, num_expert_group=decision.config.num_expert_group)
            if placement is not None:
                classes = tuple(_rank_classes(oracle, decision, placement, env))
        out.append(PlanGroup(tuple(members), decision, placement, classes))
    out.sort(key=lambda g: (g.role != "target", g.layers[0].spec.index))
    notes = list(checkpoint.notes) + list(notes)
    if any(layer.spec.role == "draft" for layer in layers):
        method = "dspark" if checkpoint.family.mtp == "dspark" else "mtp"  # DeepSeek-V4.1's draft is the DSpark model (vllm/models/deepseek_v41/nvidia/dspark.py)
        built = "draft (MTP) layers: " if draft_by_serve else f"draft (MTP) layers are built only when serving with speculative decoding (--speculative-config method={method}); "
        notes.append(built + "their moe_backend is " + ("the speculative config's" if draft_moe_backend is not None else f"inherited from the target ({who} SpeculativeConfig.moe_backend unset)"))
    # The checkpoint's notes echo config.json values (architectures): escaped as the deployment's are.
    return Plan(checkpoint, device, parallel, moe_backend, draft_backend, draft_source, tuple(out), tuple(escaped(n) for n in notes), env, release)


def _rank_classes(oracle: Oracle, decision: Decision, placement: Placement, env: Environment) -> list[RankClass]:
    """One selection per distinct local expert count: ``ep_rank`` enters the inputs only through
    ``num_local_experts`` (normalize), so ranks with equal counts have equal inputs."""
    out = []
    for count, ranks in sorted(placement.classes().items(), reverse=True):
        config = decision.config.with_changes(parallel=replace(decision.config.parallel, ep_rank=ranks[0]))
        out.append(RankClass(ranks, count, oracle.select(config, env, strict=False)))
    return out


def _merge(*groups: Sequence[Provenance]) -> tuple[Provenance, ...]:
    by_field: dict[str, Provenance] = {}
    for group in groups:
        for p in group:
            by_field[p.field] = p
    return tuple(by_field[k] for k in sorted(by_field))


def plan_json(plan: Plan) -> str:
    """The plan record as indented JSON text."""
    return json.dumps(plan.to_dict(), indent=2, default=str)


def plan_deployment(deployment: ModelDeployment, catalog: Catalog) -> Plan:
    """The :class:`Plan` of a whole-model deployment read by the one door
    (:func:`moe_oracle.inputs.model_deployment.build_model_deployment`), selected with ``catalog``
    under the deployment's environment and the operator's policy."""
    given = deployment.given
    return build_plan(
        deployment.checkpoint, Oracle(catalog, deployment.environment, policy=given.policy), device=deployment.device, parallel=deployment.parallel,
        moe_backend=deployment.moe_backend, draft_moe_backend=deployment.draft_moe_backend, draft_source=deployment.draft_source,
        include_draft=deployment.include_draft, draft_by_serve=deployment.draft_by_serve,
        lora=bool(given.lora), batch_invariant=bool(given.batch_invariant), max_num_tokens=given.max_tokens,
        environment=deployment.environment, provenance=list(deployment.provenance), notes=list(deployment.notes), origins=deployment.origins(),
    )
