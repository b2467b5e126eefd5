"""How a release reads ``moe_backend``: the family-independent reading (``KernelConfig``), the
family's request map (vLLM's ``map_<family>_backend``), names that imply a quant scheme or bind an
all2all backend, and which conditional table groups hold for a layer's values.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .catalog import Catalog, RequestMap
from .config import MoEConfig, Provenance
from .environment import Environment
from .errors import ConfigError, InputIssue
from .names import ascii_lower, non_ascii_message
from .predicates import Predicate
from .quant import SCHEMES
from .versions import EngineRelease
from .vocab import All2AllBackend, Source

__all__ = ["apply_implied_quant", "bind_all2all", "check_request", "engine_request", "family_request", "held_groups", "holds", "request_map", "request_name", "resolve_request"]


def _known_names(catalog: Catalog) -> frozenset[str]:
    """Backend ids and aliases, the names request maps read, and every name a modelled release's
    ``KernelConfig.moe_backend`` accepts (whether this release accepts it is :func:`evaluate`'s
    question: the doors do not know the release yet). Built once per view."""
    known = catalog.__dict__.get("_known_names")
    if known is None:
        known = catalog.__dict__.setdefault("_known_names", frozenset(_collect_names(catalog)))
    return known


def _collect_names(catalog: Catalog) -> set[str]:
    names = set(catalog.backend_names)
    for rm in catalog.request_maps:
        names.update(rm.names)
        names.update(rm.auto)
    if catalog.source is not None:
        for accepted, _ in catalog.source.engine_names:
            names.update(accepted)
    return names


def resolve_request(catalog: Catalog, moe_backend: str, where: str = "$.moe_backend") -> tuple[str, ...] | None:
    """Backend ids a ``moe_backend`` name selects, whatever the family; ``None`` for ``auto``.

    A family's request map (``rules/aliases.yaml`` ``requests``) may read the name otherwise
    (:func:`family_request`); this is the family-independent reading. ``where``: the input
    an error names (``--backend``; default the config field).

    Raises:
        ConfigError: unknown name (with did-you-mean and every accepted name).
    """
    name = ascii_lower(moe_backend.strip()).replace("-", "_")
    if name == "auto":
        return None
    if name not in catalog.backend_names:
        known = _known_names(catalog)
        if name not in known:
            raise ConfigError([InputIssue(where, non_ascii_message("MoE backend", moe_backend) or "unknown MoE backend", moe_backend, ["auto", *sorted(known - {"auto"})])])
        return tuple(sorted({b for rm in catalog.request_maps for b in rm.names.get(name, ())}))
    return catalog.backend_names[name]


def request_name(catalog: Catalog, backend: str) -> str:
    """A ``moe_backend`` value the engine accepts that requests ``backend`` (``"auto"`` when none
    does: vLLM reaches some backends, e.g. the CPU and XPU kernels, only through its priority lists)."""
    accepted = catalog.accepted_names if catalog.view_name == "engine" else None
    names = sorted(n for n, bs in catalog.backend_names.items() if backend in bs)
    names += sorted(n for rm in catalog.request_maps for n, bs in rm.names.items() if backend in bs)
    return next((n for n in names if accepted is None or n in accepted), "auto")


def check_request(catalog: Catalog, moe_backend: str, env: Environment) -> None:
    """Refuse ``moe_backend`` exactly as :func:`evaluate` would under ``env`` (for the doors that
    read it from a file: the same message as the ``--moe-backend`` flag, with the names the
    release accepts and a did-you-mean).

    Raises:
        ConfigError: a value the release of ``env`` refuses, or an unknown name.
    """
    release = catalog.release(env) if catalog.source is not None else None
    view = catalog.for_release(release) if release is not None else catalog
    engine_request(view, moe_backend, release)


def engine_request(view: Catalog, moe_backend: str, release: EngineRelease | None) -> tuple[str, ...] | None:
    """The family-independent reading of ``moe_backend``; in the engine view, a value the release's
    configuration does not accept is refused (vLLM validates ``KernelConfig.moe_backend`` at start),
    and an accepted value no backend of ours answers to requests nothing.

    Raises:
        ConfigError: a value the engine refuses, or an unknown name.
    """
    name = ascii_lower(moe_backend.strip()).replace("-", "_")
    accepted = view.accepted_names if view.view_name == "engine" else None
    if accepted is not None and name not in accepted:
        who = f"{release.display} {release.version}" if release is not None else "the engine"
        odd = non_ascii_message("MoE backend", moe_backend)
        raise ConfigError([InputIssue("$.moe_backend", f"{who} does not accept this moe_backend (KernelConfig.moe_backend)" + (f": {odd}" if odd else ""), moe_backend, sorted(accepted))])
    if accepted is not None and name != "auto" and name not in view.backend_names and name not in _known_names(view):
        return ()  # accepted by the release, answered by no backend of ours (resolve_request would raise)
    return resolve_request(view, moe_backend)


def family_request(catalog: Catalog, name: str, values: Mapping[str, Any]) -> tuple[RequestMap | None, tuple[str, ...] | None, str | None]:
    """(the family's request map, the backends ``name`` requests (``None``: auto; ``()``: refused), a forced activation format).

    Only the engine view reads a request through the family's map (vLLM's ``map_<family>_backend``);
    our runtime's view takes backend ids and aliases for every family."""
    if catalog.view_name != "engine":
        return None, None, None
    rm = next((r for r, held in zip(catalog.request_maps, held_groups(catalog, "request_maps", values)) if held), None)
    if rm is None:
        return None, None, None
    if name == "auto" or name in rm.auto:
        return rm, None, rm.asks_format
    if name not in rm.names:
        return rm, (), None
    return rm, rm.names[name], rm.formats.get(name) or rm.asks_format


def request_map(view: Catalog, values: Mapping[str, Any]) -> RequestMap | None:
    """The request map through which the layer with normalized ``values`` reads ``moe_backend``
    (vLLM's ``map_<family>_backend``), ``None`` where the family's oracle does not read it itself."""
    return family_request(view, "auto", values)[0]


def apply_implied_quant(catalog: Catalog, config: MoEConfig) -> tuple[MoEConfig, str | None]:
    """A backend name that also names an activation key (vLLM's ``*_afp8``) sets the quant scheme.

    It applies only to layers whose weight key is the one the name is for; otherwise the name
    requests its backend alone, and the returned note says why (vLLM raises instead).
    """
    scheme_name = catalog.implied_quant.get(config.moe_backend)
    if scheme_name is None or config.quant.name == scheme_name:
        return config, None
    scheme = SCHEMES[scheme_name]
    if config.quant.weight != scheme.weight:
        return config, f"moe_backend={config.moe_backend} selects the {scheme_name} scheme for {scheme.weight} weights; this layer's weights are {config.quant.weight or 'unquantized'}, so it requests {', '.join(catalog.backend_names[config.moe_backend])} with the layer's own scheme"
    note = Provenance("quant", Source.USER_FLAG, f"moe_backend={config.moe_backend} selects activation key {scheme.activation} ({scheme_name})")
    kept = tuple(p for p in config.provenance if p.field != "quant")
    return replace(config, quant=scheme, provenance=tuple(sorted(kept + (note,), key=lambda p: p.field))), None


def bind_all2all(catalog: Catalog, config: MoEConfig) -> tuple[MoEConfig, str | None]:
    """A ``moe_backend`` name that dispatches and combines itself binds its all2all backend.

    vLLM 0.32-0.33 ``bind_passthrough_all2all_backend`` (vllm/config/kernel.py): with such a name
    the all2all backend left at its default becomes the bound one, any other explicit choice is a
    ValueError at start, and the bound backend with any other ``moe_backend`` is a ValueError too.

    Raises:
        ConfigError: the refused pairings (vLLM refuses them before any layer is built).
    """
    par = config.parallel
    current = par.all2all_backend.value
    bound = catalog.bound_all2all.get(config.moe_backend)
    if bound is None:
        if current not in catalog.bound_all2all.values():
            return config, None
        owners = sorted(n for n, b in catalog.bound_all2all.items() if b == current)
        if owners:
            raise ConfigError([InputIssue("$.parallel.all2all_backend", f"all2all backend {current} is bound to the MoE backends that dispatch and combine themselves; it cannot be used with moe_backend={config.moe_backend}", current, owners)])
        return config, None
    if current == bound:
        return config, None
    default = All2AllBackend.ALLGATHER_REDUCESCATTER.value
    if current != default:
        raise ConfigError([InputIssue("$.parallel.all2all_backend", f"moe_backend={config.moe_backend} dispatches and combines itself and cannot be paired with all2all backend {current}; leave the all2all backend at its default", current, [default, bound])])
    note = f"moe_backend={config.moe_backend} dispatches and combines itself: the all2all backend is {bound}, not {default}"
    return replace(config, parallel=replace(par, all2all_backend=All2AllBackend(bound))), note


def holds(preds: tuple[Predicate, ...], values: Mapping[str, Any]) -> bool | None:
    """All predicates hold (True), one fails (False), or one input is unknown (None)."""
    unknown = False
    for p in preds:
        v = values.get(p.field)
        if v is None:
            unknown = True
        elif not p.test(v):
            return False
    return None if unknown else True


def held_groups(view: Catalog, group: str, values: Mapping[str, Any]) -> tuple[bool | None, ...]:
    """:func:`holds` of the ``when`` of every item of ``view.<group>`` (``rewrites``,
    ``request_maps``, ``opt_in`` or ``shortcuts``), in table order.

    A function of the fields those conditions read: each answer is kept per view and group (the
    platform, quant family, all2all ... combinations a process meets), so most selections pay one
    lookup instead of a pass over every condition.
    """
    memos = view.__dict__.get("_held_memo")
    if memos is None:
        memos = view.__dict__.setdefault("_held_memo", {})
    entry = memos.get(group)
    if entry is None:
        whens = tuple(item.when for item in getattr(view, group))
        fields = tuple(sorted({p.field for when in whens for p in when}))
        entry = memos.setdefault(group, (whens, fields, {}))
    whens, fields, answers = entry
    try:
        key = tuple(map(values.get, fields))
        hit = answers.get(key)
    except TypeError:  # an unhashable value: answered without the memo
        return tuple(holds(when, values) for when in whens)
    if hit is None:
        hit = tuple(holds(when, values) for when in whens)
        if len(answers) >= 4096:
            answers.clear()
        answers[key] = hit
    return hit
