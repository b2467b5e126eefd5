"""Ask our tables the question a :class:`~moe_oracle.verify.cases.Deployment` poses.

The deployment becomes a :class:`~moe_oracle.config.MoEConfig` and an exact
:class:`~moe_oracle.environment.Environment` (every package not declared is known
absent; vLLM is the release asked about; FlashInfer, when present, is the version
that release pins), and the engine selects with the default (faithful) policy.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..config import Device, MoEConfig, ParallelConfig
from ..environment import Environment
from ..errors import ConfigError, NoEligibleKernelError
from ..oracle import Oracle
from ..quant import QuantScheme
from .backend_names import UnknownBackend, vllm_backend_name
from .cases import Answer, Deployment
from .frontends import QUANT_METHOD

__all__ = ["OurSide", "PACKAGE_NAMES", "FLASHINFER_PINS", "FRONT_END_QUANT_METHOD"]

PACKAGE_NAMES: Mapping[str, str] = {
    "flashinfer": "flashinfer-python",
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
}
"""Deployment package name -> the distribution name our tables read."""

FLASHINFER_PINS: Mapping[str, str] = {
    "0.29.0": "0.6.18",
    "0.30.0": "0.6.18.post1",
    "0.31.0": "0.7.0.post1",
    "0.32.0": "0.7.0.post1",
    "0.33.0": "0.7.2.post1",
}
"""flashinfer-python version each vLLM release pins (its wheel METADATA ``Requires-Dist``)."""

FRONT_END_QUANT_METHOD: Mapping[str, str | None] = QUANT_METHOD
"""Front end -> the checkpoint ``quant_method`` it stands for (``None``: not known)."""


def environment_for(dep: Deployment, release: str) -> Environment:
    """The exact environment of ``dep`` under vLLM ``release``."""
    packages = [("vllm", release)]
    for short in dep.packages:
        name = PACKAGE_NAMES[short]
        version = FLASHINFER_PINS.get(release, "0.7.2.post1") if short == "flashinfer" else "1.0"
        packages.append((name, version))
    return Environment(tuple(packages), frozenset(), True, dep.env)


def config_for(dep: Deployment) -> MoEConfig:
    """The :class:`MoEConfig` of ``dep``.

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
        weight_group_size=dep.weight_group_size,
        act_order=dep.act_order or ("none" if dep.weight_group_size is not None else None),
        weight_zero_point=dep.zero_point,
        parallel=ParallelConfig(
            tp_size=dep.tp_size,
            dp_size=dep.dp_size,
            use_ep=dep.use_ep,
            all2all_backend=dep.all2all_backend,
            enable_eplb=dep.enable_eplb,
            num_redundant_experts=dep.num_redundant_experts,
        ),
        lora=dep.lora,
        moe_backend=dep.moe_backend,
    )


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
            return self.oracle.explain(config_for(dep), environment_for(dep, self.release))
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

    def answer(self, dep: Deployment) -> Answer:
        try:
            config = config_for(dep)
            decision = self.oracle.select(config, environment_for(dep, self.release))
        except NoEligibleKernelError as exc:
            return Answer("error", detail=f"nothing eligible ({exc.decision.summary()})"[:300])
        except (ConfigError, ValueError) as exc:
            return Answer("error", detail=f"refused: {exc}"[:300])
        row = decision.rows[decision.winner]
        entry = row.entry
        if entry.provider == "platform":
            return Answer("platform", backend=entry.backend, detail=entry.id)
        if entry.provider != "vllm":
            return Answer("error", experts=entry.upstream, backend=entry.backend, detail=f"only our runtime's {entry.id} is eligible")
        family = decision.normalized.values.get("quant_family") or dep.family
        try:
            backend = vllm_backend_name(family, entry.backend, entry.id, decision.shortcut)
        except UnknownBackend as exc:
            backend = f"(unknown: {exc})"
        return Answer("ok", experts=entry.upstream, activation_format=entry.activation_format.value, backend=backend, detail=entry.id)
