"""``moe-oracle plan``: every MoE layer of a checkpoint, target and draft, on every rank.

Registered by :mod:`moe_oracle.cli` (one subcommand); reuses its device, deployment and
environment flags. Exit codes as the rest of the CLI: 0 every MoE layer got a kernel,
1 some layer got none (the plan is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..inputs.operator_inputs import OperatorInputs
from .common import EXIT_CODES_PLAN, EXIT_NONE, EXIT_OK, operator_inputs

__all__ = ["add_plan_parser", "cmd_plan", "plan_from_inputs"]

_EPILOG = """\
The plan reads the whole config.json (and hf_quant_config.json beside it, when config.json has no
quantization document, as vLLM does): dense layers, routed MoE layers, hash-routed layers,
MTP draft layers, and each MoE layer's quantization after the checkpoint's exclusion lists.
Layers with identical decisions are grouped. With --ep every rank's experts are placed and
every rank's selection is checked; a plan whose ranks would build different kernels says so.

The draft (MTP) layers inherit --moe-backend unless --draft-moe-backend or the --serve line's
--speculative-config '{"moe_backend": ...}' gives one (vLLM 0.29.0-0.34.0 vllm/config/speculative.py
SpeculativeConfig.moe_backend, matched exactly: marlin, not Marlin);
given both ways, they must agree. --no-draft with a draft backend is refused (nothing to set).

--config (a MoEConfig file) and --quant describe one layer: plan refuses them (use explain).

examples:
  moe-oracle plan --model nvidia-qwen3.5-122b-a10b-nvfp4 --gpu B200 --tp 4
  moe-oracle plan --model /path/to/checkpoint --gpu H200 --dp 8 --ep --all2all deepep_low_latency --json
"""


def add_plan_parser(sub: Any, add_input_args: Any, *, arguments: bool = True) -> None:
    """Register ``plan`` on the CLI's subparsers, with the shared input flags (its arguments only
    when ``arguments``: see :func:`moe_oracle.cli.build_parser`)."""
    p = sub.add_parser("plan", help="every layer of a model: kinds, quantization, kernel per layer group and per rank",
                       description="Plan a whole model: every decoder layer (dense, MoE, hash-routed, MTP draft), each MoE layer's quantization, the kernel each group of identical layers gets, and each rank's experts.",
                       epilog=_EPILOG + "\n" + EXIT_CODES_PLAN, formatter_class=argparse.RawDescriptionHelpFormatter)
    if not arguments:
        return
    add_input_args(p, whole_model=True)
    plan = p.add_argument_group("plan")
    plan.add_argument("--draft-moe-backend", metavar="NAME", help="MoE backend of the draft (MTP) layers, as vLLM's --speculative-config moe_backend: a name of the release's MoEBackend, matched exactly (marlin, not Marlin); default: the --serve line's, else inherit --moe-backend")
    plan.add_argument("--no-draft", action="store_true", help="leave out the MTP draft layers (no speculative decoding); refused with a draft backend")
    plan.add_argument("--quantization", metavar="METHOD", choices=["moe_wna16"], help="vLLM --quantization override for the checkpoint; the one value taken is moe_wna16 (serve a GPTQ/AWQ checkpoint's MoE layers with MoeWNA16); vLLM's other --quantization values are not modelled here")


def cmd_plan(args: argparse.Namespace, catalog: Any) -> int:
    """Run ``moe-oracle plan``; returns the exit code (0 all layers selected, 1 some not)."""
    plan = plan_from_inputs(operator_inputs(args), catalog)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2, default=str))
    else:
        print(plan.render_text())
    return EXIT_OK if plan.ok else EXIT_NONE


def plan_from_inputs(given: OperatorInputs, catalog: Any) -> Any:
    """The whole-model :class:`~moe_oracle.explain.plan.Plan` of ``given`` (``diff`` plans each side).

    Raises:
        ConfigError: a missing or invalid model, device or flag.
    """
    from ..explain.plan import plan_deployment
    from ..inputs.model_deployment import build_model_deployment
    from ..inputs.serve_config_file import charged_to_config_file

    deployment = build_model_deployment(given, catalog)
    with charged_to_config_file(deployment.config_file):  # a layer's start refusal, of a flag the --config file gave
        return plan_deployment(deployment, catalog)
