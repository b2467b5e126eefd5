"""Ask one vLLM release which experts kernel it selects for a deployment (worker side only).

Builds the release's own ``FusedMoEParallelConfig`` and ``FusedMoEConfig`` the way its
layer factory does (``P/layer.py``: global experts = routed + redundant; the EPLB and
redundant-expert refusals), then runs the requested quantization front end of that
release: ``direct`` calls the family's ``select_*_moe_backend`` with the deployment's
quant keys; named front ends construct the release's quantization-method class,
whose constructor builds the keys (e.g. FP8 block refinement under TP) and selects.
Whatever that code raises is vLLM refusing the deployment. After a method selected and
created its weights, the release's ``maybe_make_prepare_finalize`` is asked for the layer's
prepare/finalize (:meth:`VllmSide.prepare_finalize`).

Imports vLLM and torch: only the verification worker imports this module.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from typing import Any, Callable

from .cases import PF_NONE, PF_RAISES, PF_UNASKED, Answer, Deployment, refusal_stage
from .frontends import NotDriven
from .frontends.fp8 import refused_at_load
from .quant_key_names import QUANT_KEY_NAMES
from .vllm_late_checks import check_lora_wrapper, check_megakernel_placement
from .vllm_sim import Simulation

__all__ = ["VllmSide"]

P = "vllm.model_executor.layers.fused_moe"
Q = "vllm.model_executor.layers.quantization"

_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}
_CANNOT_SERVE = " cannot serve "  # marks a P/F answer whose activation format the experts cannot take

# (FusedMoEParallelConfig flag, the P/F class P/all2all_utils.py binds for it only when the package
# probe holds at import, vLLM 0.29.0-0.34.0): without that class the all2all manager of the backend
# refuses at start-up.
_ALL2ALL_PF = (
    ("use_deepep_ht_kernels", "DeepEPHTPrepareAndFinalize"),
    ("use_deepep_ll_kernels", "DeepEPLLPrepareAndFinalize"),
    ("use_deepep_v2_kernels", "DeepEPV2PrepareAndFinalize"),
    ("use_nixl_ep_kernels", "NixlEPPrepareAndFinalize"),
    # MoRI and MoonEP managers refuse too: MoriAll2AllManager asserts has_mori(), MoonEPAll2AllManager
    # calls check_moonep_system_support() (RuntimeError without moonep), vLLM 0.29.0-0.34.0
    # vllm/distributed/device_communicators/all2all.py, vllm/utils/import_utils.py.
    ("use_mori_kernels", "MoriPrepareAndFinalize"),
    ("use_mori_epv1_kernels", "MoriPrepareAndFinalize"),
    ("use_mori_epv2_kernels", "MoriEPv2PrepareAndFinalize"),
    ("use_moonep_kernels", "MoonEPPrepareAndFinalize"),
)


def _no_weight_loader(*_args: Any, **_kwargs: Any) -> None:
    """Stands in for RoutedExperts.weight_loader: the harness loads no weights."""


class VllmSide:
    """Answers deployments with one release's selection code.

    Args:
        sim: the simulated machine (owns the vLLM import).
    """

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        import torch

        self.torch = torch
        self.cfg_mod = importlib.import_module(f"{P}.config")
        self.act_mod = importlib.import_module(f"{P}.activation")
        self.mk = importlib.import_module(f"{P}.modular_kernel")
        self.qu = importlib.import_module(f"{Q}.utils.quant_utils")
        self.parallel_cls = importlib.import_module("vllm.config.parallel").ParallelConfig
        self.kernel_cls = importlib.import_module("vllm.config.kernel").KernelConfig
        self.moe_fields = {f.name for f in dataclasses.fields(self.cfg_mod.FusedMoEConfig) if f.init}
        self.routing = {m.value[0] if isinstance(m.value, tuple) else m.value: m for m in self.cfg_mod.RoutingMethodType}
        self._front_ends: dict[str, Callable[..., tuple[Any, Any]]] = {}
        self.stage = "config"
        self.loaded: tuple[Any, Any, Any] | None = None
        self._pf_state: tuple[Any, ...] | None = None
        self.sizes: tuple[int, int] | None = None

    # ------------------------------------------------------------------ translation

    def quant_key(self, name: str | None) -> Any:
        """The vLLM QuantKey for our key name (``None`` stays ``None``).

        Raises:
            NotDriven: a key this release does not define (or that has no vLLM constant).
        """
        if name is None:
            return None
        const = QUANT_KEY_NAMES.get(name)
        if const is None:
            raise NotDriven(f"our quant key {name} has no vLLM QuantKey constant")
        try:
            return getattr(self.qu, const)
        except AttributeError:
            raise NotDriven(f"vLLM {self.sim.release} has no QuantKey {const} (our {name})") from None

    def vllm_parallel_config(self, dep: Deployment) -> Any:
        """The release's own ``ParallelConfig`` for the flags as given, validating them as ``vllm serve``
        does (``vllm/config/parallel.py``: the all2all backend literal, EPLB needing expert parallelism,
        more than one rank (TP x PCP x DP) and a CUDA-alike or XPU platform, redundant experts
        needing EPLB, 0.29.0's PCP without DP, the expert placement literal),
        with ``distributed_executor_backend="mp"`` (one node's multiprocessing executor, the default
        when the world fits the node: the GPU count of a CPU box is not asked).

        Raises:
            ValueError: what ``ParallelConfig`` refuses (pydantic's ValidationError is one).
        """
        return self.parallel_cls(
            tensor_parallel_size=dep.tp_size,
            data_parallel_size=dep.dp_size,
            prefill_context_parallel_size=dep.pcp_size,
            enable_expert_parallel=dep.use_ep,
            enable_eplb=dep.enable_eplb,
            all2all_backend=dep.all2all_backend,
            eplb_config={"num_redundant_experts": dep.num_redundant_experts},
            expert_placement_strategy=dep.expert_placement_strategy,
            distributed_executor_backend="mp",
            # One host: every DP rank local, as EngineArgs.create_engine_config sets it without
            # --data-parallel-size-local / --nnodes (vLLM 0.29.0-0.34.0 vllm/engine/arg_utils.py).
            data_parallel_size_local=dep.dp_size,
        )

    def parallel_config(self, dep: Deployment, pc: Any) -> Any:
        """``FusedMoEParallelConfig`` as ``make()`` builds it for rank 0 (no process groups) from the
        release's ``ParallelConfig`` ``pc`` (:meth:`vllm_parallel_config`) with the all2all backend
        ``dep`` ends with (:meth:`start_checks`), and ``sp_size`` as ``make_parallel_config`` passes it:
        the TP size where the model class passes ``is_sequence_parallel`` (``dep.sequence_parallel_model``)
        and the release's own ``ParallelConfig.use_sequence_parallel_moe`` holds (deepseek_v2.py,
        qwen3_moe.py ...), else 1."""
        if pc.all2all_backend != dep.all2all_backend:
            # KernelConfig.bind_passthrough_all2all_backend sets it on the ParallelConfig in place.
            pc.all2all_backend = dep.all2all_backend
        # FusedMoEParallelConfig.make (vLLM 0.29.0-0.34.0 P/config.py) for rank 0: TP flattened
        # across DP and PCP (flatten_tp_across_dp_and_pcp), EP over all of them.
        flat = dep.tp_size * dep.pcp_size * dep.dp_size
        use_ep = dep.use_ep and flat > 1
        # is_sequence_parallel -> sp_size = attention TP (P/layer.py make_parallel_config; see the docstring)
        sp_size = dep.tp_size if dep.sequence_parallel_model and bool(pc.use_sequence_parallel_moe) else 1
        kwargs = dict(
            tp_size=1 if use_ep else flat,
            pcp_size=dep.pcp_size,
            dp_size=dep.dp_size,
            ep_size=flat if use_ep else 1,
            tp_rank=0,
            pcp_rank=0,
            dp_rank=0,
            ep_rank=0,
            sp_size=sp_size,
            use_ep=use_ep,
            all2all_backend=pc.all2all_backend,
            enable_eplb=dep.enable_eplb,
            mori_ep_v2=bool(self._resolve_mori(pc, dep)),
        )
        fields = {f.name for f in dataclasses.fields(self.cfg_mod.FusedMoEParallelConfig)}
        return self.cfg_mod.FusedMoEParallelConfig(**{k: v for k, v in kwargs.items() if k in fields})

    def _resolve_mori(self, pc: Any, dep: Deployment) -> bool | None:
        """``ParallelConfig.mori_ep_v2`` after start (vLLM 0.34.0+ ``--all2all-backend mori``): the
        release's own ``resolve_mori_all2all`` decides, called as ``RocmPlatform.check_and_update_config``
        calls it (vLLM 0.34.0 vllm/platforms/rocm.py: ``lsa_spans_hosts`` / ``not sdma_picks_epv1``
        on gfx1250, ``validated_arch`` on gfx950 or gfx1250, read from the simulated GPU). Other
        platforms never call it (``None``: FusedMoEParallelConfig reads it as EPv1).

        Simulated: the one-host launch (``ParallelConfig`` as built above: ``mp`` executor, every DP
        rank local) and the model config it reads (:meth:`_checkpoint_view`); the MoRI stand-in
        module has the EPv2 modules at :data:`.cases.MORI_STANDIN_VERSION`.
        """
        resolve = getattr(importlib.import_module("vllm.config.parallel"), "resolve_mori_all2all", None)
        if resolve is None or pc.all2all_backend != "mori":
            return None
        from vllm.platforms import current_platform

        if not current_platform.is_rocm():
            return None
        rocm = importlib.import_module("vllm.platforms.rocm")
        moe_backend = self.kernel_cls(moe_backend=dep.moe_backend).moe_backend
        gfx1250 = bool(rocm.on_gfx1250())
        resolve(pc, self._checkpoint_view(dep), moe_backend, lsa_spans_hosts=gfx1250, sdma_picks_epv1=not gfx1250, validated_arch=bool(rocm.on_gfx950()) or gfx1250)
        return pc.mori_ep_v2

    def _checkpoint_view(self, dep: Deployment) -> Any:
        """The model config as ``_mori_epv2_unsupported_reason`` reads it (vLLM 0.34.0
        vllm/config/parallel.py: ``dtype``, ``quantization``, ``model_arch_config.quantization_config``),
        written from the deployment's checkpoint: the front end's quant method, an FP8 weight block,
        compressed-tensors input activations with their strategy, ModelOpt's quant algorithm, Quark's
        input tensors (dtype and qscheme)."""
        from .frontends import QUANT_METHOD

        method = QUANT_METHOD.get(dep.front_end)
        act = dep.activation_key or ""
        cfg: dict[str, Any] = {}
        if method == "fp8" and (dep.block or "block" in (dep.weight_key or "")):
            cfg["weight_block_size"] = list(dep.block or (128, 128))
        elif method == "compressed-tensors" and act:
            strategy = "tensor" if act.endswith("_tensor") else "token" if "token" in act else "group"
            cfg["config_groups"] = {"group_0": {"input_activations": {"type": "float" if act.startswith("fp8") else "int", "strategy": strategy}}}
        elif method == "modelopt":
            cfg["quantization"] = {"quant_algo": dep.family.upper()}
        elif method == "quark" and act:
            scheme = "per_tensor" if act.endswith("_tensor") else "per_token" if "token" in act else "per_group"
            cfg["global_quant_config"] = {"input_tensors": {"dtype": "fp8_e4m3" if act.startswith("fp8") else act.split("_")[0], "qscheme": scheme}}
        return types.SimpleNamespace(dtype=getattr(self.torch, dep.in_dtype), quantization=method, model_arch_config=types.SimpleNamespace(quantization_config=cfg))

    def start_checks(self, dep: Deployment) -> Deployment:
        """What vLLM checks of the deployment's flags at start, before any layer is built;
        returns ``dep`` with the all2all backend the release's config ends with.

        (``ParallelConfig`` and ``KernelConfig`` themselves validate in :meth:`parallel_config`
        and :meth:`moe_config`.)

        * ``KernelConfig.set_platform_defaults``: ``validate_flashinfer_moe_ep_model`` (the
          FlashInfer MoE-EP backends that are DeepSeek-V4-only in this release) and, from
          0.32.0, ``bind_passthrough_all2all_backend`` (a MoE-EP backend turns the default
          all2all backend into ``passthrough``; any other pairing with ``passthrough`` raises).
        * ``VllmConfig.__post_init__``'s moonep checks (0.31.0+; transcribed): unquantized BF16
          models only, no EPLB, linear expert placement requested (tests/differential/
          test_release_sources.py fails when the release's block raises on anything else).

        Raises:
            ValueError: what the release raises at start.
        """
        kernel = importlib.import_module("vllm.config.kernel")
        cfg = types.SimpleNamespace(all2all_backend=dep.all2all_backend)
        architectures = [dep.architecture] if dep.architecture else []
        if hasattr(kernel, "validate_flashinfer_moe_ep_model"):
            kernel.validate_flashinfer_moe_ep_model(dep.moe_backend, architectures)
        if cfg.all2all_backend == "moonep":
            # VllmConfig.__post_init__ (vllm/config/vllm.py, 0.31.0+), transcribed: the whole
            # VllmConfig cannot be built here. The harness's model is quantized iff it has a weight key.
            if dep.weight_key is not None:
                raise ValueError("The moonep all2all backend currently supports unquantized BF16 models only")
            if dep.in_dtype != "bfloat16":
                raise ValueError("The moonep all2all backend currently supports BF16 models only")
            if dep.enable_eplb:
                raise ValueError("The moonep all2all backend does not support EPLB yet")
            if dep.expert_placement_strategy != "linear":
                raise ValueError(f"The moonep all2all backend requires linear expert placement. Got --expert-placement-strategy {dep.expert_placement_strategy!r}.")
        if hasattr(kernel, "bind_passthrough_all2all_backend"):
            kernel.bind_passthrough_all2all_backend(dep.moe_backend, cfg)
        return dataclasses.replace(dep, all2all_backend=cfg.all2all_backend) if cfg.all2all_backend != dep.all2all_backend else dep

    def moe_config(self, dep: Deployment) -> Any:
        """``FusedMoEConfig`` as the release's layer factory builds it (after :meth:`start_checks`).

        Raises:
            ValueError, AssertionError: what the layer factory raises (EPLB with uneven
                experts, redundant experts without EPLB, an intermediate size TP cannot split),
                and what ``KernelConfig`` refuses (a ``moe_backend`` outside the release's
                ``MoEBackend`` literal).
        """
        self.stage = "config"
        # In the order vLLM starts (0.29.0-0.34.0 vllm/engine/arg_utils.py): KernelConfig validates and
        # normalizes --moe-backend (lower case, "_" for "-"), ParallelConfig validates its flags, then
        # VllmConfig.__post_init__ runs the checks across them.
        moe_backend = self.kernel_cls(moe_backend=dep.moe_backend).moe_backend
        pc = self.vllm_parallel_config(dep)
        dep = self.start_checks(dep)
        par = self.parallel_config(dep, pc)
        self.stage = "layer"
        global_experts = dep.num_experts + dep.num_redundant_experts
        if dep.enable_eplb:
            if par.use_ep and global_experts % par.ep_size != 0:
                raise ValueError(f"EPLB currently only supports even distribution of experts across ranks. Got {global_experts} experts and {par.ep_size} EP ranks.")
        elif dep.num_redundant_experts:
            raise AssertionError("Redundant experts are only supported with EPLB.")
        torch = self.torch
        act = self.act_mod.MoEActivation(dep.activation)
        routing = self._routing(dep.routing_method)
        values: dict[str, Any] = dict(
            num_experts=global_experts,
            experts_per_token=dep.top_k,
            hidden_dim=dep.hidden_size,
            intermediate_size=dep.intermediate_size,
            num_local_experts=-(-global_experts // par.ep_size),
            num_logical_experts=dep.num_experts,
            activation=act,
            device="cpu" if dep.platform == "cpu" else dep.platform,
            routing_method=routing,
            moe_parallel_config=par,
            in_dtype=getattr(torch, _DTYPES[dep.in_dtype]),
            router_logits_dtype=getattr(torch, _DTYPES[dep.router_logits_dtype]) if dep.router_logits_dtype else None,
            moe_backend=moe_backend,
            has_bias=dep.has_bias,
            is_lora_enabled=dep.lora,
            has_hash_routing=dep.has_hash_routing,
            require_decomposed_backend=dep.require_decomposed,
            swiglu_limit=dep.swiglu_limit,
            swiglu_alpha=dep.swiglu_alpha,
            swiglu_beta=dep.swiglu_beta,
            activation_situ_beta=dep.situ_beta,
            activation_situ_linear_beta=dep.situ_linear_beta,
        )
        return self.cfg_mod.FusedMoEConfig(**{k: v for k, v in values.items() if k in self.moe_fields})

    def _routing(self, name: str) -> Any:
        from ..core.vocab import RoutingMethod

        return self.routing[RoutingMethod(name).flashinfer_id]

    def _model_config(self, dep: Deployment) -> None:
        """Make the current VllmConfig carry a model config for ``dep`` (vLLM serving always has one).

        Only what selection reads is set: the text model's ``model_type`` and architectures,
        the dtype, and no user ``quantization_config`` override.
        """
        from vllm.config import get_current_vllm_config

        cfg = get_current_vllm_config()
        text = types.SimpleNamespace(model_type=dep.model_type, architectures=[dep.architecture] if dep.architecture else [])
        fake = types.SimpleNamespace(
            hf_text_config=text,
            hf_config=text,
            architectures=text.architectures,
            architecture=dep.architecture,
            dtype=getattr(self.torch, dep.in_dtype),
            quantization_config=None,
            quantization=None,
            # Read by maybe_make_prepare_finalize for DeepEP v2 (0.33.0 P/all2all_utils.py: CUDA
            # graphs unless --enforce-eager, which the harness never passes).
            enforce_eager=False,
        )
        try:
            cfg.model_config = fake
        except Exception:  # noqa: BLE001 - pydantic dataclasses may refuse; bypass validation
            object.__setattr__(cfg, "model_config", fake)
        # Selection code also reads the global parallel config (vLLM 0.32+ P/flashinfer_moe_ep.py
        # flashinfer_moe_ep_unsupported_reasons: "EPLB" for the DeepGEMM MoE-EP kernel), which vLLM
        # fills from the same flags as the MoE layer's.
        parallel = getattr(cfg, "parallel_config", None)
        if parallel is not None and hasattr(parallel, "enable_eplb"):
            object.__setattr__(parallel, "enable_eplb", dep.enable_eplb)

    # ------------------------------------------------------------------ front ends

    def front_end(self, name: str) -> Callable[..., tuple[Any, Any]]:
        """The front-end function registered as ``name`` (see :mod:`.frontends`).

        Raises:
            KeyError: no such front end.
        """
        fn = self._front_ends.get(name)
        if fn is None:
            from .frontends import FRONT_ENDS

            module, func = FRONT_ENDS[name].split(":")
            fn = getattr(importlib.import_module(f"{__package__}.frontends.{module}"), func)
            self._front_ends[name] = fn
        return fn

    def check_eplb(self, dep: Deployment, method: Any) -> None:
        # P/routed_experts.py: EPLB with a method that does not support it raises.
        if dep.enable_eplb and not getattr(method, "supports_eplb", True):
            raise NotImplementedError(f"EPLB is not supported {type(method).__name__}.")

    def round_up(self, moe: Any, method: Any) -> None:
        """The layer's padding step (vLLM 0.29.0-0.34.0 P/routed_experts.py ``RoutedExperts.__init__``,
        right after the quantization method is built): the method's own ``maybe_roundup_sizes``,
        whose result the layer writes into ``moe`` (``hidden_dim``, ``intermediate_size_per_partition``).
        The padded sizes are kept for the answer (:attr:`.cases.Answer.sizes`).

        Raises:
            NotDriven: the deployment runs DeepEP / NIXL / MoRI / MoonEP kernels whose prepare/finalize class
                ``all2all_utils`` never imported (package absent, or a platform that is not
                CUDA-alike): real vLLM refuses it at start-up, in the all2all manager, which the
                tier does not build; the case is not compared.
            whatever the release raises (NIXL / DeepEP LL above their largest hidden size).
        """
        self.stage = "layer"
        par = moe.moe_parallel_config
        a2a = vars(importlib.import_module(f"{P}.all2all_utils"))
        for flag, name in _ALL2ALL_PF:
            if getattr(par, flag, False) and name not in a2a:
                why = self.sim.a2a_error or "its package is absent or the platform is not CUDA-alike"
                raise NotDriven(f"{name} was not imported ({why}): without its package vLLM refuses this all2all backend at start-up, "
                                "when the EP group's all2all manager asserts it (vllm/distributed/device_communicators/all2all.py), before any layer; the tier builds no all2all manager", at_start=True)
        if (getattr(par, "use_fi_nvl_one_sided_kernels", False) or getattr(par, "use_fi_nvl_two_sided_kernels", False)) and self._cuda_alike() \
                and not importlib.import_module("vllm.utils.flashinfer").has_flashinfer():
            raise NotDriven("the FlashInfer NVLink all2all manager asserts has_flashinfer_nvlink_one_sided() / _two_sided() when the EP communicator starts, "
                            "false here because has_flashinfer() is false (no flashinfer-python, or neither flashinfer-cubin nor nvcc; vllm/utils/flashinfer.py "
                            "has_flashinfer_comm); vLLM refuses at start-up, before any layer; the tier builds no all2all manager", at_start=True)
        hidden, partition = method.maybe_roundup_sizes(moe.hidden_dim, moe.intermediate_size_per_partition, moe.in_dtype, moe.moe_parallel_config)
        moe.hidden_dim = hidden
        moe.intermediate_size_per_partition = partition
        self.sizes = (int(hidden), int(partition))

    @staticmethod
    def _cuda_alike() -> bool:
        """CUDA and ROCm start ``CudaCommunicator``, which builds each backend's own manager; the
        CPU and XPU communicators fall back to the allgather/reduce-scatter one (vLLM
        0.29.0-0.34.0 vllm/distributed/device_communicators/)."""
        from vllm.platforms import current_platform

        return bool(current_platform.is_cuda_alike())

    def load(self, dep: Deployment, moe: Any, method: Any) -> None:
        """What the layer does with the quantization method after it selected (vLLM 0.29.0-0.34.0
        P/routed_experts.py ``RoutedExperts.__init__``): the method's ``maybe_roundup_sizes``
        pads the hidden size and the intermediate size per partition (the all2all kernels'
        hidden-size round-up of P/all2all_utils.py ``maybe_roundup_layer_hidden_size``, then the
        selected backend's own, e.g. MXFP4 and unquantized) and the layer writes the padded sizes
        into its ``FusedMoEConfig``; then it refuses EPLB when the method does not support it, and
        calls ``create_weights`` with the padded sizes (here on the meta device, so nothing is
        allocated), whose shape checks refuse deployments too (e.g. FP8 weight blocks that do not
        divide the TP shard, Q/utils/fp8_utils.py validate_fp8_block_shape_moe; compressed-tensors
        W4A8-FP8 ``hidden_size % 256``, which the DeepEP round-up can satisfy). The TP group is the
        attention TP group of rank 0 (``tp_size`` ranks).

        Raises:
            whatever the release raises (vLLM refusing the deployment).
        """
        self.round_up(moe, method)
        self.check_eplb(dep, method)
        self.stage = "construction"
        self.sim.set_tp_world(dep.tp_size)
        torch = self.torch
        layer = torch.nn.Module()
        # What RoutedExperts has set when it calls create_weights (P/routed_experts.py).
        layer.hidden_size = moe.hidden_dim
        layer.intermediate_size_per_partition = moe.intermediate_size_per_partition
        layer.moe_config = moe
        params: dict[str, Any] = dict(
            num_experts=moe.num_local_experts,
            hidden_size=moe.hidden_dim,
            unpadded_hidden_size=getattr(moe, "hidden_dim_unpadded", moe.hidden_dim),
            intermediate_size_per_partition=moe.intermediate_size_per_partition,
            params_dtype=moe.in_dtype,
            weight_loader=_no_weight_loader,
            global_num_experts=moe.num_experts,
        )
        # vLLM 0.29.0 also passes the unsharded intermediate size to the methods its layer
        # names (RoutedExperts._needs_intermediate_size_param, an exact class-name match).
        needs_full = getattr(importlib.import_module(f"{P}.routed_experts").RoutedExperts, "_needs_intermediate_size_param", None)
        if needs_full is not None and needs_full(None, method):
            params["intermediate_size_full"] = moe.intermediate_size
        with torch.device("meta"):
            method.create_weights(layer=layer, **params)
        self.loaded = (moe, method, layer)

    # ------------------------------------------------------------------ prepare/finalize

    def prepare_finalize(self, dep: Deployment, backend: Any, experts: Any) -> str | None:
        """The prepare/finalize class the release builds for the layer :meth:`load` made
        (``None``: no method was loaded, as for the ``direct`` front end).

        Asked as the release's ``make_*_moe_kernel`` asks it, through the model-construction
        tier's :func:`~moe_oracle.verify.model_build.reader.prepare_finalize_of` (the method's
        ``FusedMoEQuantConfig`` from the meta-device layer, ``allow_new_interface=True``,
        ``use_monolithic`` from the experts class; 0.33.0 ``make_fp8_moe_kernel`` also passes the
        model dtype as ``input_dtype`` for FlashInfer CUTLASS block FP8), with that tier's
        stand-ins (:mod:`~moe_oracle.verify.model_build.standins` 1-3 and 5): the process groups
        and the all2all manager of rank 0, installed for the call and then put back so that
        selection never sees them; ``all2all_utils`` re-executed when the platform or packages
        change (its import-time probes bind the optional P/F classes). A P/F whose activation format
        is not the experts class's is answered as raising (marked ``_CANNOT_SERVE``): building the
        kernel raises, and :meth:`answer` makes that a refusal at construction.
        """
        if self.loaded is None or not str(getattr(experts, "__module__", "")).startswith("vllm"):
            # No method, or one that runs its own kernel (frontends/layer.py _SELF_RUNNING): no P/F.
            return None
        import vllm.distributed.parallel_state as ps

        from .model_build import standins
        from .model_build.reader import prepare_finalize_of

        moe, method, layer = self.loaded
        state = (dep.platform, dep.capability, dep.arch, dep.packages)
        if state != self._pf_state:
            if self._pf_state is None:
                # Stand-in 12 (``cuda``): 0.29.0's nixl_ep P/F imports device_communicators/all2all.py,
                # which imports flashinfer.comm, which needs cuda-python.
                standins.install_host_packages()
            standins.patch_stub_values()
            try:
                standins.reload_all2all_utils()
            except Exception as exc:  # noqa: BLE001 - a stand-in gap: counted as not asked, never as vLLM's answer
                self._pf_state = None
                return f"{PF_UNASKED}harness: re-executing all2all_utils: {type(exc).__name__}: {exc}"[:300]
            self._pf_state = state
        names = [g for g in standins.GROUP_GLOBALS + standins.OPTIONAL_GROUP_GLOBALS if hasattr(ps, g)]
        saved = {g: getattr(ps, g) for g in names}
        torch = self.torch
        fp8_cutlass = getattr(backend, "name", None) == "FLASHINFER_CUTLASS" and type(backend).__name__ == "Fp8MoeBackend"

        def input_dtype(quant_config: Any) -> Any:
            return moe.in_dtype if fp8_cutlass and getattr(quant_config, "is_block_quantized", False) else None

        try:
            standins.install_groups(dep.tp_size, dep.dp_size, dep.use_ep, pcp=dep.pcp_size)
            with torch.device("meta"), standins.cuda_to_meta(), standins.cuda_runtime():
                got = prepare_finalize_of(moe, method, layer, experts, input_dtype)
        finally:
            for g, v in saved.items():
                setattr(ps, g, v)
        if got["error"]:
            # The quant config is read from the meta-device layer: a failure there is the harness's.
            return (PF_UNASKED if got["error"].startswith("get_fused_moe_quant_config:") else PF_RAISES) + got["error"]
        if got["class"] is None:
            return PF_NONE
        fmt = experts.activation_format()
        fmt_value = fmt.value[0] if isinstance(fmt.value, tuple) else fmt.value
        if got["activation_format"] is not None and got["activation_format"] != fmt_value and not self._format_serves(fmt, got["activation_format"]):
            # FusedMoEKernel._post_init_setup (P/modular_kernel.py) asserts the formats are equal
            # (0.29.0-0.33.0) or that the experts' is a superset of the P/F's (0.34.0
            # FusedMoEActivationFormat.is_superset): the kernel cannot be built with this P/F.
            return f"{PF_RAISES}{got['class']} ({got['activation_format']}){_CANNOT_SERVE}{experts.__name__} ({fmt_value})"
        return got["class"]

    @staticmethod
    def _format_serves(experts_format: Any, pf_value: str) -> bool:
        """Whether the release's own ``is_superset`` (0.34.0+) lets experts of ``experts_format``
        take a P/F of format ``pf_value`` (``False`` where the release has no such method)."""
        superset = getattr(experts_format, "is_superset", None)
        members = [m for m in type(experts_format) if (m.value[0] if isinstance(m.value, tuple) else m.value) == pf_value]
        return callable(superset) and bool(members) and bool(superset(members[0]))

    # ------------------------------------------------------------------ answer

    def answer(self, dep: Deployment) -> Answer:
        """Run the release's front end for ``dep``; an exception is the engine refusing it."""
        try:
            self.sim.apply(dep)
            self._model_config(dep)
        except ValueError as exc:
            return Answer("unsupported", detail=str(exc))
        self.stage = "config"
        self.loaded = None
        self.sizes = None
        try:
            front = self.front_end(dep.front_end)
            moe = self.moe_config(dep)
            self.stage = "selection"
            backend, experts = front(self, dep, moe)
        except NotDriven as exc:
            # A KeyError raised by the release's own code is the release refusing, not the harness.
            return Answer("unsupported", detail=f"not driven: {exc}", stage="config" if exc.at_start else None)
        except Exception as exc:  # noqa: BLE001 - any exception is vLLM refusing the deployment
            return Answer("error", detail=f"{type(exc).__name__}: {exc}"[:300], stage=refusal_stage(self.stage, exc))
        backend_name = getattr(backend, "name", str(backend))
        if experts is None:
            if (refused := refused_at_load(dep, backend)) is not None:
                return Answer("error", detail=refused[:300], stage="construction")
            return Answer("platform", backend=backend_name, detail=f"vLLM returns {backend_name} with no experts class")
        try:
            # Every method builds its kernel when its weights are processed, the MXFP4 ones too (whose
            # layer the harness does not build); under the direct front end nothing is built.
            if dep.front_end != "direct":
                check_megakernel_placement(dep, moe, experts)
        except ValueError as exc:
            return Answer("error", detail=f"{type(exc).__name__}: {exc}"[:300], stage="construction")
        fmt = experts.activation_format()
        value = fmt.value[0] if isinstance(fmt.value, tuple) else fmt.value
        pf = self.prepare_finalize(dep, backend, experts)
        if pf is not None and pf.startswith(PF_RAISES) and _CANNOT_SERVE in pf:
            # The release builds the kernel from this P/F and these experts and raises: 0.34.0
            # P/oracle/base.py make_moe_kernel (ValueError on the format), 0.29.0-0.33.0 the
            # method's make_*_moe_kernel (the experts built without or with the batched-only
            # max_num_tokens: TypeError) or FusedMoEKernel._post_init_setup's assert. The layer is
            # refused at construction, whatever was selected.
            return Answer("error", detail=f"building {experts.__name__} raises: {pf[len(PF_RAISES):]}"[:300], stage="construction")
        if dep.lora and dep.front_end != "direct" and not (pf or "").startswith(PF_RAISES):
            # The model runner wraps the layer for LoRA once every kernel is built (a kernel whose
            # prepare/finalize raises stops vLLM first; its P/F is compared instead). Under the
            # direct front end nothing is built, so a construction refusal could come first.
            try:
                check_lora_wrapper(dep, moe)
            except (ValueError, AssertionError) as exc:
                if (pf or "").startswith(PF_UNASKED):
                    # Building the kernel comes first and may refuse (its P/F): unknown here, so not compared.
                    return Answer("unsupported", detail=f"not driven: the LoRA wrapper refuses ({type(exc).__name__}: {exc}), but the prepare/finalize, whose "
                                  f"build comes first, could not be asked: {pf[len(PF_UNASKED):]}"[:300])
                return Answer("error", detail=f"LoRA wrapper: {type(exc).__name__}: {exc}"[:300], stage="lora")
        return Answer("ok", experts=experts.__name__, activation_format=value, backend=backend_name, prepare_finalize=pf, sizes=self.sizes)
