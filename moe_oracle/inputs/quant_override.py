"""The MoE activation override of ``vllm serve --quantization-config``, which the tables do not model.

vLLM 0.29.0-0.34.0 P/oracle/mxfp4.py ``_resolve_activation_key`` lets ``quantization_config.moe.activation``
replace the checkpoint's activation key before the MXFP4 oracle picks a backend variant; answering for
the checkpoint's own key would name the wrong member, so a serve line that sets it is refused.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from packaging.version import Version

from ..core.errors import ConfigError, InputIssue

__all__ = ["online_moe_targets", "refuse_moe_activation_override", "refuse_online_moe_target"]


def refuse_moe_activation_override(value: Any, version: str) -> None:
    """Refuse a ``--quantization-config`` that sets the MoE activation (``moe.activation``, or
    ``activation`` in a ``targets`` spec), which the tables do not model.

    vLLM 0.29.0-0.34.0 P/oracle/mxfp4.py ``_resolve_activation_key`` lets the user's
    ``quantization_config.moe.activation`` (vllm/config/quantization.py ``QUANT_KEY_NAMES``: ``mxfp8``,
    ``mxfp4``, ``fp8_per_tensor_static`` ...) replace the checkpoint's activation key before
    ``_filter_by_activation`` picks the backend variant (0.34.0 through ``user_activation_override``,
    which also reads a layer's ``targets`` spec), so answering for the checkpoint's key would name
    the wrong member. A value that is not a JSON object is left to the note.

    Raises:
        ConfigError: the override is set (from 0.34.0 ``null`` included, read as BF16, and a
            ``targets`` spec's; 0.29.0-0.33.0 ``_user_moe_activation_override`` reads ``moe.activation``
            alone, where null is no override).
    """
    try:
        spec = value if isinstance(value, Mapping) else json.loads(value)
    except (TypeError, ValueError, RecursionError):
        return
    if not isinstance(spec, Mapping):
        return
    # Before 0.34.0 the oracle reads args.moe.activation alone, and null is no override.
    reads_null_and_targets = Version(version) >= Version("0.34.0")
    found = []
    moe = spec.get("moe")
    if isinstance(moe, Mapping) and "activation" in moe and (moe["activation"] is not None or reads_null_and_targets):
        found.append(("moe.activation", moe["activation"]))
    targets = spec.get("targets")
    if isinstance(targets, Mapping) and reads_null_and_targets:
        found += [(f"targets.{name}.activation", t["activation"]) for name, t in targets.items() if isinstance(t, Mapping) and "activation" in t]
    if found:
        raise ConfigError([
            InputIssue(f"--serve --quantization-config {where}",
                       f"vLLM {version} selects the MoE backend variant for this activation override (P/oracle/mxfp4.py _resolve_activation_key); "
                       "moe-oracle does not model the override and refuses rather than answer for the checkpoint's own activations", act if isinstance(act, str) else json.dumps(act), None)
            for where, act in found
        ], headline="bad --serve")


def online_moe_targets(value: Any) -> list[tuple[str, str]]:
    """The online weight targets a ``--quantization-config`` value gives the routed experts, as
    (key, target as given): ``moe`` as a shorthand name or a spec with a ``weight``, and each
    ``targets`` entry with one (a pattern may match the experts). vLLM 0.29.0-0.34.0
    vllm/config/quantization.py ``resolve_quantization_config`` builds the online method from them
    (Q/online/base.py ``resolve_quant_method_cls``). A value that is not a JSON object gives none.

    >>> online_moe_targets('{"moe": "fp8_per_block", "linear": "fp8_per_block"}')
    [('moe', 'fp8_per_block')]
    """
    try:
        spec = value if isinstance(value, Mapping) else json.loads(value)
    except (TypeError, ValueError, RecursionError):
        return []
    if not isinstance(spec, Mapping):
        return []
    found = []
    moe = spec.get("moe")
    if isinstance(moe, str) or (isinstance(moe, Mapping) and moe.get("weight") is not None):
        found.append(("moe", moe))
    targets = spec.get("targets")
    if isinstance(targets, Mapping):
        found += [(f"targets.{name}", t) for name, t in targets.items() if isinstance(t, str) or (isinstance(t, Mapping) and t.get("weight") is not None)]
    return [(where, t if isinstance(t, str) else json.dumps(t)) for where, t in found]


def refuse_online_moe_target(value: Any, version: str) -> None:
    """Refuse a ``--quantization-config`` that gives the routed experts an online weight target
    (:func:`online_moe_targets`) beside a ``--quantization``, which the tables do not model: vLLM
    quantizes the experts online with it (or re-quantizes a quantized checkpoint's, :mod:`.requantization`),
    so answering for the checkpoint's own experts would be wrong. Without ``--quantization`` it
    matters only on a quantized checkpoint (an unquantized one gets no quantization config at
    all, vllm/config/vllm.py), which the checkpoint's checks judge.

    Raises:
        ConfigError: such a target is set.
    """
    found = online_moe_targets(value)
    if found:
        raise ConfigError([
            InputIssue(f"--serve --quantization-config {where}",
                       f"vLLM {version} quantizes the routed experts online with this target beside --quantization (or re-quantizes a quantized checkpoint's; "
                       "vllm/config/quantization.py resolve_quantization_config, Q/online/base.py resolve_quant_method_cls); moe-oracle does not model online "
                       "targets given by --quantization-config and refuses rather than answer for the checkpoint's own experts (an online FP8 shorthand given "
                       "as --quantization alone is modelled)", target, None)
            for where, target in found
        ], headline="bad --serve")
