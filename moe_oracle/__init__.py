"""moe_oracle: choose the fused MoE kernel for a model layer on a given machine, and say why.

>>> from moe_oracle import MoEConfig, Device, Oracle
>>> cfg = MoEConfig(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768,
...                 device=Device("cuda", capability=90))
>>> Oracle.default().select(cfg).kernel is not None
True
"""

from .core.config import Device, MoEConfig, ParallelConfig, Provenance
from .core.decision import Decision, NoEligibleKernelError
from .core.environment import Environment, probe_environment
from .core.errors import ConfigError, MoEOracleError, TableError
from .core.oracle import Oracle, default_catalog, select
from .core.quant import QuantScheme, scheme_by_name
from .core.vocab import Activation, All2AllBackend, DType, Interface, Platform, Policy, ReasonCode, RoutingMethod

__all__ = [
    "Activation",
    "All2AllBackend",
    "ConfigError",
    "DType",
    "Decision",
    "Device",
    "Environment",
    "Interface",
    "MoEConfig",
    "MoEOracleError",
    "NoEligibleKernelError",
    "Oracle",
    "ParallelConfig",
    "Platform",
    "Policy",
    "Provenance",
    "QuantScheme",
    "ReasonCode",
    "RoutingMethod",
    "TableError",
    "default_catalog",
    "probe_environment",
    "scheme_by_name",
    "select",
    "why_not",
]

from .core._resources import PACKAGE_VERSION as _PACKAGE_VERSION  # noqa: E402

__version__ = _PACKAGE_VERSION


def __getattr__(name: str) -> object:
    # why_not lives in the explanations layer (moe_oracle.explain.whynot), which imports the input
    # readers; it is loaded on first use so that `import moe_oracle` stays as light as a select.
    if name == "why_not":
        from .explain.whynot import why_not

        return why_not
    raise AttributeError(f"module 'moe_oracle' has no attribute {name!r}")
