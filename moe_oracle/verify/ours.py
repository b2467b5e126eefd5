"""Ask our tables the question a :class:`~moe_oracle.verify.cases.Deployment` poses.

The deployment becomes a :class:`~moe_oracle.core.config.MoEConfig` and an exact
:class:`~moe_oracle.core.environment.Environment` (every package not declared is known
absent and every host tool not declared known not found; vLLM is the release asked about;
FlashInfer and flashinfer-cubin, when present, are the version that release pins), and the
engine selects with the default (faithful) policy.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.blocking import shortcut_raises
from ..core.config import Device, MoEConfig, ParallelConfig
from ..core.decision import NoEligibleKernelError
from ..core.environment import HOST_TOOLS, Environment
from ..core.errors import ConfigError
from ..core.oracle import Oracle
from ..core.padding import decision_layer_sizes
from ..core.quant import QuantScheme
from ..core.stages import eplb_gate as _eplb_gate
from ..core.stages import STAGES, rule_stage
from ..inputs.model_start_refusals import sequence_parallel_moe
from .backend_names import UnknownBackend, vllm_backend_name
from .cases import MORI_STANDIN_VERSION, PF_RAISES, Answer, Deployment
from .frontends import QUANT_METHOD
from .releases import flashinfer_pins, flashinfer_substitutes

__all__ = ["OurSide", "PACKAGE_NAMES", "rule_stage", "FLASHINFER_PINS", "FLASHINFER_SUBSTITUTES", "FRONT_END_QUANT_METHOD", "flashinfer_installed"]

PACKAGE_NAMES: Mapping[str, str] = {
    "flashinfer": "flashinfer-python",
    "flashinfer_cubin": "flashinfer-cubin",
    "deep_gemm": "deep-gemm",
    "deep_ep": "deep-ep",
    "triton_kernels": "triton-kernels",
    "aiter": "aiter",
    "mori": "mori",
    "nixl_ep": "nixl-ep",
    "moonep": "moonep",
    "humming": "humming",
    "b12x": "b12x",
    "flydsl": "flydsl",
    "cutlass": "nvidia-cutlass-dsl",
    "zentorch": "zentorch",
    "quark": "amd-quark",
    "hpc": "hpc",
}
"""Deployment package name -> the distribution name our tables read."""

FLASHINFER_PINS: Mapping[str, str] = flashinfer_pins()
"""flashinfer-python version each vLLM release pins (its wheel METADATA ``Requires-Dist``; ``rules/engine.yaml`` pins)."""

FLASHINFER_SUBSTITUTES: Mapping[str, tuple[str, str]] = flashinfer_substitutes()
"""Pinned FlashInfer version -> (the version the environment installs instead, why), for a pin the
package index does not serve (``rules/engine.yaml`` ``substitutes``). The environment's manifest
(``DIR/setup.json``) records the substitution; moe_oracle.verify.flashinfer_substitute checks it."""


def flashinfer_installed(release: str) -> str | None:
    """The flashinfer-python version the differential environment holds for vLLM ``release``:
    its pin, or the documented substitute of a pin the index does not serve (``None``: unknown release).

    >>> flashinfer_installed("0.33.0"), flashinfer_installed("0.34.0"), flashinfer_installed("9.9.9")
    ('0.7.2.post1', '0.7.4', None)
    """
    pin = FLASHINFER_PINS.get(release)
    if pin is None:
        return None
    return FLASHINFER_SUBSTITUTES[pin][0] if pin in FLASHINFER_SUBSTITUTES else pin

FRONT_END_QUANT_METHOD: Mapping[str, str | None] = QUANT_METHOD
"""Front end -> the checkpoint ``quant_method`` it stands for (``None``: not known)."""


def environment_for(dep: Deployment, release: str) -> Environment:
    """The exact environment of ``dep`` under vLLM ``release`` (every host tool known: found or not).
    Every package the deployment leaves out is declared absent: the vLLM side's stand-ins make its
    module and the copy vLLM's wheel carries (``vllm.third_party.deep_gemm``) unimportable alike
    (:data:`~moe_oracle.verify.sim_standins.MODULE_PACKAGES`), which a package list alone would not
    say (:data:`~moe_oracle.core.packages.VENDORED`)."""
    packages = [("vllm", release)]
    for short in dep.packages:
        name = PACKAGE_NAMES[short]
        # The version vLLM's side runs against (the pin, or its documented substitute).
        version = (flashinfer_installed(release) or "0.7.2.post1") if short in ("flashinfer", "flashinfer_cubin") else MORI_STANDIN_VERSION if short == "mori" else "1.0"
        packages.append((name, version))
    absent = frozenset(name for short, name in PACKAGE_NAMES.items() if short not in dep.packages)
    return Environment(tuple(packages), absent, True, dep.env, tools=tuple((t, t in dep.tools) for t in HOST_TOOLS))


def config_for(dep: Deployment, release: str | None = None) -> MoEConfig:
    """The :class:`MoEConfig` of ``dep`` under vLLM ``release``: ``parallel.sequence_parallel`` is what
    the model class passes (``dep.sequence_parallel_model`` and our release's
    ``use_sequence_parallel_moe``, :func:`moe_oracle.inputs.model_start_refusals.sequence_parallel_moe`);
    without a release, false unless the deployment's class passes it (then unknown).

    Raises:
        ConfigError: a value our config model refuses.
    """
    device = Device(dep.platform, capability=dep.capability if dep.platform == "cuda" else None, arch=dep.arch, cpu_amx=dep.cpu_amx if dep.platform == "cpu" else None)
    return MoEConfig(
        num_experts=dep.num_experts,
        top_k=dep.top_k,
        hidden_size=dep.hidden_size,
        intermediate_size=dep.intermediate_size,
        device=device,
        activation=dep.activation,
        routing_method=dep.routing_method,
        quant=QuantScheme(dep.weight_key, dep.activation_key),
        quant_method=FRONT_END_QUANT_METHOD.get(dep.front_end),
        in_dtype=dep.in_dtype,
        router_logits_dtype=dep.router_logits_dtype,
        has_bias=dep.has_bias,
        swiglu_alpha=dep.swiglu_alpha,
        swiglu_beta=dep.swiglu_beta,
        swiglu_limit=dep.swiglu_limit,
        situ_beta=dep.situ_beta,
        situ_linear_beta=dep.situ_linear_beta,
        model_type=dep.model_type,
        architecture=dep.architecture,
        has_hash_routing=dep.has_hash_routing,
        require_decomposed=dep.require_decomposed,
        weight_block_size=dep.block,
        num_expert_group=dep.num_expert_group,
        weight_group_size=dep.weight_group_size,
        act_order=dep.act_order or ("none" if dep.weight_group_size is not None else None),
        weight_zero_point=dep.zero_point,
        parallel=ParallelConfig(
            tp_size=dep.tp_size,
            dp_size=dep.dp_size,
            pcp_size=dep.pcp_size,
            use_ep=dep.use_ep,
            all2all_backend=dep.all2all_backend,
            enable_eplb=dep.enable_eplb,
            num_redundant_experts=dep.num_redundant_experts,
            sequence_parallel=_sequence_parallel(dep, release),
            expert_placement_strategy=dep.expert_placement_strategy,
        ),
        lora=dep.lora,
        moe_backend=dep.moe_backend,
    )


def _sequence_parallel(dep: Deployment, release: str | None) -> bool | None:
    if not dep.sequence_parallel_model:
        return False
    if release is None:
        return None
    par = ParallelConfig(tp_size=dep.tp_size, dp_size=dep.dp_size, pcp_size=dep.pcp_size, use_ep=dep.use_ep, all2all_backend=dep.all2all_backend)
    return sequence_parallel_moe(par, release)


class OurSide:
    """Answers deployments from one table set.

    Args:
        release: the vLLM release the answers are for.
        oracle: the oracle to ask (default: the shipped tables).
    """

    def __init__(self, release: str, oracle: Oracle | None = None) -> None:
        self.release = release
        self.oracle = oracle or Oracle.default()

    def decide(self, dep: Deployment) -> Any:
        """The full Decision (``None`` when the input itself is refused)."""
        try:
            return self.oracle.explain(config_for(dep, self.release), environment_for(dep, self.release))
        except ConfigError:
            return None

    def why(self, dep: Deployment, experts: str | None) -> list[dict[str, Any]]:
        """Our verdict on every candidate implementing vLLM class ``experts`` (for disagreements)."""
        decision = self.decide(dep)
        if decision is None:
            return []
        out = []
        for cand, row in zip(decision.candidates, decision.rows):
            if experts is not None and row.entry.upstream != experts:
                continue
            if experts is None and cand.status.value != "selected":
                continue
            out.append({
                "kernel": cand.kernel,
                "rank": cand.rank,
                "status": cand.status.value,
                "failures": [f"{f.rule}: {f.code.value} {f.field}={f.observed!r} allowed {f.allowed!r}" for f in cand.failures],
            })
        return out

    def stage(self, decision: Any) -> str:
        """Where our refusal happens (:data:`.cases.STAGES`), from what the tables say of it.

        vLLM raises at the earliest stage: a failing rule that cites its config validation is
        ``config`` whichever kernel it binds. The failing rules that bind every kernel
        (``Catalog.layer_rules``) are placed by the vLLM code their reference cites
        (:func:`rule_stage`): ``config``, then ``layer``, then ``selection``, then the
        routed-experts EPLB gate (``layer``, after the method selected). When the engine selects a
        kernel and then refuses the layer (:attr:`Decision.refused`), the refusing checks place it:
        an EPLB gate is ``layer``, a shortcut that raises (``_return_or_raise``) or a method's
        constructor ``selection``, ``create_weights`` or the experts class ``construction``, the
        LoRA wrapper of the MoE layer ``lora``, a check the kernel library makes when the kernel
        first runs ``profile_run``.
        Otherwise the first kernel that fails only late checks (``create_weights`` rules binding
        every kernel, prepare/finalize checks, EPLB gates) is what vLLM selects: ``layer`` when it
        fails an EPLB gate (checked before its weights are created), else ``construction``; with
        no such kernel nothing is eligible: ``selection``.
        """
        # A rule that cites vLLM's config validation refuses at start whichever kernel it binds
        # (e.g. validate_flashinfer_moe_ep_model binds only the requested MoE-EP kernels), before
        # any layer is built, so before a kernel the engine selects and then refuses.
        if any(rule_stage(f.reference) == "config" for c in decision.candidates for f in c.failures):
            return "config"
        layer = decision.ranking.view.layer_rules  # the release's view: release-ranged rules included
        found: dict[str, str] = {}
        for c in decision.candidates:
            for f in c.failures:
                if f.rule in layer:
                    found[f.rule] = rule_stage(f.reference)
        stages = set(found.values())
        # The routed-experts EPLB gate (supports_eplb) runs after the method has selected.
        late = {r for r, st in found.items() if st == "layer" and _eplb_gate(next(f.reference for c in decision.candidates for f in c.failures if f.rule == r))}
        early = {found[r] for r in found if r not in late}
        refused = getattr(decision, "refused", None)
        if refused is not None:
            # FusedMoEConfig is built before the oracle runs, the EPLB gate after it returned.
            # The refusing checks are the after-selection ones; the selected kernel's prepare/finalize
            # checks (made later still, when the kernel is built) do not place the refusal.
            post = decision.ranking.view.after_selection
            failures = decision.candidates[refused].failures
            refusing = {rule_stage(f.reference) for f in failures if f.rule in post}
            cited = refusing or {rule_stage(f.reference) for f in failures}
            if "layer" in early or "layer" in cited:
                return "layer"
            if shortcut_raises(decision) is not None:
                return "selection"  # the oracle's shortcut raises for its kernel (_return_or_raise)
            # Otherwise where the refusing check sits: a method's constructor, else create_weights
            # or the experts class (construction), else the LoRA wrapper (lora), else the kernel's
            # first forward (profile_run).
            return "selection" if "selection" in cited else next((st for st in ("construction", "lora") if st in cited), "profile_run")
        for stage in ("config", "layer", "selection"):
            if stage in early:
                return stage
        # Past selection when some kernel fails nothing but later checks: vLLM selects the first
        # such (the checks it makes only when it builds the kernel's prepare/finalize do not stop
        # that), then its EPLB gate (layer) runs before create_weights (construction).
        # A check vLLM makes after it selected the kernel (after_selection: FP8's NONE backend off
        # CUDA/ROCm refused at load) does not stop that selection either; the earliest stage among
        # the chosen kernel's checks is where vLLM raises.
        built, post = decision.ranking.view.construction, decision.ranking.view.after_selection
        chosen = next((c for c in decision.candidates if c.failures and all(f.rule in found or f.rule in built or f.rule in post or _eplb_gate(f.reference) for f in c.failures)), None)
        if chosen is not None and (stages or any(_eplb_gate(f.reference) for f in chosen.failures)):
            at = {"layer" if _eplb_gate(f.reference) else ("construction" if f.rule in built else rule_stage(f.reference)) for f in chosen.failures}
            return next(st for st in STAGES if st in at)
        return "selection"

    def answer(self, dep: Deployment) -> Answer:
        try:
            config = config_for(dep, self.release)
            decision = self.oracle.select(config, environment_for(dep, self.release))
        except NoEligibleKernelError as exc:
            stage = self.stage(exc.decision)
            if exc.decision.refused is not None and (stage in ("lora", "profile_run") or (stage == "construction" and dep.front_end == "direct")):
                selected = self._selected_before(dep, exc.decision, stage)
                # The harness runs the LoRA wrapper's checks under every front end but direct, where
                # the prepare/finalize builds (verify/vllm_late_checks.py): the refusal is compared there.
                if stage == "lora" and dep.front_end != "direct" and not (selected.prepare_finalize or "").startswith(PF_RAISES):
                    return Answer("error", detail=f"refused by the LoRA wrapper ({selected.later})"[:300], stage="lora")
                return selected
            return Answer("error", detail=f"nothing eligible ({exc.decision.summary()})"[:300], stage=stage)
        except (ConfigError, ValueError) as exc:
            return Answer("error", detail=f"refused: {exc}"[:300], stage="config")
        row = decision.rows[decision.winner]
        entry = row.entry
        if entry.provider == "platform":
            return Answer("platform", backend=entry.backend, detail=entry.id)
        if entry.provider != "vllm":
            return Answer("error", experts=entry.upstream, backend=entry.backend, detail=f"only our runtime's {entry.id} is eligible")
        family = decision.normalized.values.get("quant_family") or dep.family
        try:
            backend = vllm_backend_name(family, entry.backend, entry.id, decision.shortcut, self.release)
        except UnknownBackend as exc:
            backend = f"(unknown: {exc})"
        sizes = decision_layer_sizes(decision) if dep.front_end != "direct" else None
        padded = (sizes.padded_hidden_size, sizes.padded_intermediate_size_per_partition) if sizes is not None else None
        return Answer("ok", experts=entry.upstream, activation_format=entry.activation_format.value, backend=backend, detail=entry.id, prepare_finalize=self.pf_answer(decision), sizes=padded)

    def _selected_before(self, dep: Deployment, decision: Any, stage: str) -> Answer:
        """The kernel the engine selects before refusing the layer at ``stage``, a stage the
        harness's vLLM side does not reach for ``dep`` (:attr:`Answer.later`): vLLM's side stops
        after selection under the ``direct`` front end, runs the LoRA wrapper's checks only under
        another front end and where the prepare/finalize builds, and never runs the start-up profile run. Its prepare/finalize is the one vLLM would build for it
        (where it is built)."""
        row = decision.rows[decision.refused]
        entry = row.entry
        post = decision.ranking.view.after_selection
        rules = ", ".join(sorted({f.rule for f in row.failures if f.rule in post}))
        family = decision.normalized.values.get("quant_family") or dep.family
        try:
            backend = vllm_backend_name(family, entry.backend, entry.id, decision.shortcut, self.release)
        except UnknownBackend as exc:
            backend = f"(unknown: {exc})"
        if entry.provider == "platform":
            return Answer("platform", backend=entry.backend, detail=entry.id, later=f"{stage}: {rules}")
        built = decision.ranking.built_pf(decision.refused) if stage in ("lora", "profile_run") else None
        pf = built.upstream if built is not None else None
        # Building the kernel on its prepare/finalize comes before the LoRA wrapper and the profile
        # run: a check made then fails as building the winner's does (pf_answer's PF_RAISES), also
        # where the failing check is the prepare/finalize's own (no P/F is then built).
        raising = sorted(f.rule for f in row.failures if f.rule in decision.ranking.view.construction)
        if raising and stage in ("lora", "profile_run"):
            pf = PF_RAISES + raising[0]
        return Answer("ok", experts=entry.upstream, activation_format=entry.activation_format.value, backend=backend, detail=entry.id,
                      prepare_finalize=pf, later=f"{stage}: {rules}")

    def pf_answer(self, decision: Any) -> str | None:
        """What building the winner's prepare/finalize gives: its vLLM class, or ``PF_RAISES`` and
        the rule where the engine warns that vLLM selects the kernel without checking a
        requirement of that P/F which fails when the kernel is built (warning code ``unchecked``,
        e.g. ``deepep_high_throughput.packages.deep-ep``: vLLM 0.29-0.33 P/all2all_utils.py binds
        the DeepEP classes only when the package is present)."""
        pf_id = decision.prepare_finalize
        if pf_id is None:
            return None
        for w in decision.warnings:
            if w.code == "unchecked" and w.rule and w.rule.startswith(pf_id + "."):
                return PF_RAISES + w.rule
        return self.pf_class(pf_id)

    def pf_class(self, pf_id: str | None) -> str | None:
        """The vLLM class of our prepare/finalize ``pf_id`` (its table entry's ``upstream``);
        ``None`` for ``None``.

        Raises:
            KeyError: an id the catalog does not hold.
        """
        if pf_id is None:
            return None
        return self.oracle.catalog.prepare_finalize_by_id(pf_id).upstream
