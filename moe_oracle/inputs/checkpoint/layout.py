"""Every decoder layer of a model and its feed-forward kind, as one vLLM release builds them.

:func:`layer_layout` lists the target model's layers (dense, routed MoE, hash-routed MoE,
or no feed-forward at all, as in Mamba/attention-only hybrid layers) and the MTP draft
layers the same checkpoint carries, each with the checkpoint module name of its routed
experts (what exclusion lists match) and the field that decided its kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...core.errors import ConfigError, InputIssue
from .families import GENERIC, Family
from .releases import ReaderRelease

__all__ = ["KINDS", "LayerSpec", "layer_layout"]

KINDS = ("moe", "hash_moe", "dense", "none")
"""Layer kinds: routed MoE, hash-routed MoE (DeepSeek-V4), dense MLP, no feed-forward."""


@dataclass(frozen=True)
class LayerSpec:
    """One decoder layer.

    Attributes:
        index: decoder layer index; an MTP layer counts on from ``num_hidden_layers`` as
            vLLM numbers it.
        name: display name: the index, or ``mtp.<k>`` for draft layers.
        kind: one of :data:`KINDS`.
        role: ``target`` or ``draft`` (MTP / next-n layers, built for speculative decoding).
        experts: checkpoint module of the routed experts, ``None`` for non-MoE layers.
        shared: checkpoint module of the shared experts, ``None`` when there are none.
        why: the config field (and engine rule) that decided the kind.
    """

    index: int
    name: str
    kind: str
    role: str
    experts: str | None
    shared: str | None
    why: str

    @property
    def is_moe(self) -> bool:
        return self.kind in ("moe", "hash_moe")


def _fail(file: str | None, path: str, message: str, value: Any = None, allowed: Any = None) -> ConfigError:
    return ConfigError([InputIssue(path, message, value, allowed, file)])


def _int(cfg: Mapping[str, Any], key: str, default: int | None, file: str | None, path: str, minimum: int = 0) -> int | None:
    value = cfg.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or value > 1 << 20:
        raise _fail(file, f"{path}{key}", f"must be an integer >= {minimum}", value, {"minimum": minimum})
    return value


def _has_shared(cfg: Mapping[str, Any]) -> bool:
    for key in ("n_shared_experts", "num_shared_experts", "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size"):
        v = cfg.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return True
    return False


def layer_layout(family: Family, cfg: Mapping[str, Any], prefix: str, *, file: str | None = None, path: str = "$.", layers_required: bool = True, release: "ReaderRelease | str | None" = None) -> tuple[tuple[LayerSpec, ...], tuple[str, ...]]:
    """Target and draft layers of a model.

    Args:
        family: the engine family (:func:`~moe_oracle.inputs.checkpoint.families.family_for`).
        cfg: the text-model config (``text_config`` merged over the top level) with the
            family's defaults filled in for absent fields.
        prefix: checkpoint path of the decoder layers (``model.layers``).
        file: path for error messages.
        path: JSON path prefix of ``cfg`` in the file (``$.text_config.``).
        layers_required: without ``num_hidden_layers``, raise (a plan) or describe one MoE
            layer (the one-layer door of ``explain``).
        release: the vLLM release the layout is for (Gemma-4's MoE switch differs before
            0.32.0: fact ``gemma4_moe_by_num_experts``); its words name it in notes.

    Returns:
        The layers in order (target, then draft) and notes (generic fields used, MTP modules
        vLLM drops, pattern lengths that disagree with ``num_hidden_layers``).

    Raises:
        ConfigError: ``num_hidden_layers`` or a layout field is missing or malformed.
    """
    rel = ReaderRelease.of(release)
    notes: list[str] = []
    n = _int(cfg, "num_hidden_layers", None, file, path, minimum=1)
    if n is None:
        if layers_required:
            raise _fail(file, f"{path}num_hidden_layers", "missing num_hidden_layers: the plan needs the number of decoder layers", None, None)
        notes.append("no num_hidden_layers: one MoE layer described")
        return (_spec(family, prefix, 0, "0", "moe", "target", "num_hidden_layers absent: one MoE layer described", _has_shared(cfg)),), tuple(notes)
    shared = family.shared_always or _has_shared(cfg)
    if family.name == "glm5_next" and cfg.get("mlp_layer_types") is None:
        # the config class fills mlp_layer_types: transformers' (0.32.0+) with 3 dense layers, vLLM's own before from first_k_dense_replace
        first_k = 3 if rel.holds("glm5_next_transformers_config") else _int(cfg, "first_k_dense_replace", 0, file, path) or 0
        cfg = {**cfg, "first_k_dense_replace": first_k}
    if family.name == "beam" and cfg.get("mlp_layer_types") is None and not rel.holds("beam_vllm_config"):
        # transformers' BeamConfig (the Transformers backend, 0.32.0) fills 3 dense layers, vLLM's own (0.33.0+) none
        cfg = {**cfg, "first_k_dense_replace": min(3, n)}
    kinds = _target_kinds(family, cfg, n, file, path, notes)
    if family.name == "gemma4" and not rel.holds("gemma4_moe_by_num_experts"):
        flag = next((k for k in ("enable_moe_block", "use_second_mlp_block") if cfg.get(k)), None)
        if flag is None:
            kinds = [("dense", f"{rel.words} Gemma4DecoderLayer builds the MoE block only when enable_moe_block or use_second_mlp_block is true (from 0.32.0: when num_experts is set)")] * n
        else:
            kinds = [("moe", f"{flag} = true: {rel.words} Gemma4DecoderLayer builds the MoE block beside the dense MLP")] * n
    if family.name == "step3p5" and not rel.holds("step3p5_transformers_config"):
        kinds = _step3p5_own_config(cfg, n, file, path, rel)
    layers = [_spec(family, prefix, i, str(i), kind, "target", why, shared) for i, (kind, why) in enumerate(kinds)]
    layers += _draft_layers(family, cfg, n, prefix, shared, file, path, notes, rel)
    return tuple(layers), tuple(notes)


def _spec(family: Family, prefix: str, index: int, name: str, kind: str, role: str, why: str, shared: bool, base: str | None = None) -> LayerSpec:
    base = base if base is not None else f"{prefix}.{index}"
    moe = kind in ("moe", "hash_moe")
    experts_rel = family.experts if family is not GENERIC else "mlp.experts"
    shared_rel = family.shared if family is not GENERIC else "mlp.shared_experts"
    return LayerSpec(index, name, kind, role, f"{base}.{experts_rel}" if moe else None, f"{base}.{shared_rel}" if moe and shared and shared_rel else None, why)


def _freq_kind(freq: Any, i: int, first_k: int, file: str | None, path: str) -> tuple[str, str]:
    if isinstance(freq, list):
        v = freq[i]
        return ("moe", f"moe_layer_freq[{i}] = {v}") if v != 0 else ("dense", f"moe_layer_freq[{i}] = 0")
    if i < first_k:
        return "dense", f"index < first_k_dense_replace ({first_k})"
    if i % freq != 0:
        return "dense", f"index % moe_layer_freq ({freq}) != 0"
    return "moe", f"index >= first_k_dense_replace ({first_k}) and index % moe_layer_freq ({freq}) == 0"


def _first_k_dense(cfg: Mapping[str, Any], n: int, file: str | None, path: str, count: int | None = None) -> list[tuple[str, str]]:
    freq = cfg.get("moe_layer_freq", 1)
    if isinstance(freq, list):
        if len(freq) < (count or n) or not all(isinstance(v, int) and not isinstance(v, bool) for v in freq):
            raise _fail(file, f"{path}moe_layer_freq", f"a per-layer moe_layer_freq list needs one integer per layer ({count or n})", len(freq), {"minItems": count or n})
    elif isinstance(freq, bool) or not isinstance(freq, int) or freq < 1:
        raise _fail(file, f"{path}moe_layer_freq", "must be an integer >= 1 or a per-layer list", freq, {"minimum": 1})
    first_k = _int(cfg, "first_k_dense_replace", 0, file, path) or 0
    return [_freq_kind(freq, i, first_k, file, path) for i in range(count or n)]


def _target_kinds(family: Family, cfg: Mapping[str, Any], n: int, file: str | None, path: str, notes: list[str]) -> list[tuple[str, str]]:
    layout = family.layout
    if layout == "generic":
        layout = _generic_layout(cfg, notes)
    if layout == "first_k_dense":
        return _first_k_dense(cfg, n, file, path)
    if layout == "first_k":
        first_k = _int(cfg, "first_k_dense_replace", 0, file, path) or 0
        return [("dense", f"index < first_k_dense_replace ({first_k})") if i < first_k else ("moe", f"index >= first_k_dense_replace ({first_k}); {family.name} reads no moe_layer_freq") for i in range(n)]
    if layout == "sparse_step":
        only = cfg.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in only):
            raise _fail(file, f"{path}mlp_only_layers", "must be a list of layer indices", only, None)
        step = _int(cfg, "decoder_sparse_step", 1, file, path, minimum=1) or 1
        out = []
        for i in range(n):
            if i in only:
                out.append(("dense", f"index in mlp_only_layers {only}"))
            elif (i + 1) % step:
                out.append(("dense", f"(index + 1) % decoder_sparse_step ({step}) != 0"))
            else:
                out.append(("moe", f"not in mlp_only_layers and (index + 1) % decoder_sparse_step ({step}) == 0"))
        return out
    if layout == "interleave":
        step = _int(cfg, "interleave_moe_layer_step", 1, file, path) or 0
        if step <= 0:
            return [("dense", "interleave_moe_layer_step = 0")] * n
        return [("moe", f"(index + 1) % interleave_moe_layer_step ({step}) == 0") if (i + 1) % step == 0 else ("dense", f"(index + 1) % interleave_moe_layer_step ({step}) != 0") for i in range(n)]
    if layout == "hybrid_pattern":
        pattern = cfg.get("hybrid_override_pattern")
        if not isinstance(pattern, str) or not pattern:
            raise _fail(file, f"{path}hybrid_override_pattern", "a hybrid model needs hybrid_override_pattern (one letter per layer: M mamba, * attention, - MLP, E MoE)", pattern, None)
        bad = sorted(set(pattern) - set("M*-E"))
        if bad:
            raise _fail(file, f"{path}hybrid_override_pattern", "unknown layer letters", bad, ["M", "*", "-", "E"])
        if len(pattern) != n:
            notes.append(f"hybrid_override_pattern has {len(pattern)} letters and num_hidden_layers is {n}: vLLM builds one layer per letter")
        names = {"M": "Mamba mixer", "*": "attention", "-": "MLP", "E": "MoE"}
        return [("moe" if c == "E" else "dense" if c == "-" else "none", f"hybrid_override_pattern[{i}] = {c!r} ({names[c]})") for i, c in enumerate(pattern)]
    if layout == "hash_then_moe":
        types = cfg.get("mlp_layer_types")
        if isinstance(types, list):
            if len(types) < n or any(t not in ("hash_moe", "moe") for t in types[:n]):
                raise _fail(file, f"{path}mlp_layer_types", "needs one 'hash_moe' or 'moe' per layer", types, ["hash_moe", "moe"])
            return [("hash_moe", f"mlp_layer_types[{i}] = hash_moe") if t == "hash_moe" else ("moe", f"mlp_layer_types[{i}] = moe") for i, t in enumerate(types[:n])]
        h = _int(cfg, "num_hash_layers", 3, file, path) or 0
        return [("hash_moe", f"index < num_hash_layers ({h}): routed by the token-hash table") if i < h else ("moe", f"index >= num_hash_layers ({h})") for i in range(n)]
    if layout == "start_end_interval":
        return _start_end_interval(cfg, n, n, file, path)
    if layout == "period_offset":
        period = _int(cfg, "expert_layer_period", 2, file, path, minimum=1) or 1
        offset = _int(cfg, "expert_layer_offset", 1, file, path) or 0
        return [("moe", f"index % expert_layer_period ({period}) == expert_layer_offset ({offset})") if i % period == offset
                else ("dense", f"index % expert_layer_period ({period}) != expert_layer_offset ({offset})") for i in range(n)]
    if layout == "all" and family.name == "deepseek_v41":
        for key in ("num_hash_layers", "mlp_layer_types"):
            if cfg.get(key):
                notes.append(f"{key} is not read: vLLM's DeepSeek-V4.1 DeepseekV4MoE passes num_hash_layers=0 (no hash-routed layer)")
    if layout == "moe_layer_freq_list":
        freq = cfg.get("moe_layer_freq")
        if not isinstance(freq, list):
            return [("dense", f"moe_layer_freq is not a per-layer list ({freq!r}): {family.name} builds no MoE layer")] * n
        if len(freq) < n:
            raise _fail(file, f"{path}moe_layer_freq", f"a per-layer moe_layer_freq list needs one entry per layer ({n})", len(freq), {"minItems": n})
        return [("moe", f"moe_layer_freq[{i}] = {freq[i]}") if freq[i] else ("dense", f"moe_layer_freq[{i}] = {freq[i]}") for i in range(n)]
    if layout == "moe_layers_enum":
        spec = cfg.get("moe_layers_enum")
        if not isinstance(spec, str) or not all(t.strip().isdigit() for t in spec.strip().split(",")):
            raise _fail(file, f"{path}moe_layers_enum", "Step3 needs the MoE layer indices as a comma-separated string (step3_text.py splits it on ',')", spec, None)
        idx = {int(t) for t in spec.strip().split(",")}
        return [("moe", "index in moe_layers_enum") if i in idx else ("dense", "index not in moe_layers_enum") for i in range(n)]
    if layout == "step3p5":
        return _step3p5(cfg, n, file, path)
    if layout == "step5":
        return _step5(cfg, n, file, path)
    if layout == "mlp_layer_types" and cfg.get("mlp_layer_types") is None and family.name == "axk1":
        return _first_k_dense(cfg, n, file, path)
    if layout == "mlp_layer_types" and cfg.get("mlp_layer_types") is None:
        first_k = _int(cfg, "first_k_dense_replace", 0, file, path) or 0
        return [("dense", f"no mlp_layer_types: index < first_k_dense_replace ({first_k}) (the config class's derivation)") if i < first_k
                else ("moe", f"no mlp_layer_types: index >= first_k_dense_replace ({first_k}) (the config class's derivation)") for i in range(n)]
    if layout == "mlp_layer_types":
        types = cfg["mlp_layer_types"]
        if not isinstance(types, list) or len(types) < n:
            raise _fail(file, f"{path}mlp_layer_types", "needs one entry per layer", types, None)
        kind = {"dense": "dense", "sparse": "moe", "moe": "moe", "hash_moe": "hash_moe"}
        if any(t not in kind for t in types[:n]):
            raise _fail(file, f"{path}mlp_layer_types", "unknown MLP layer type", sorted({t for t in types if t not in kind}, key=str), sorted(kind))
        return [(kind[t], f"mlp_layer_types[{i}] = {t}") for i, t in enumerate(types[:n])]
    return [("moe", "every layer is MoE (" + (family.source or "no layout field") + ")")] * n


def _step3p5(cfg: Mapping[str, Any], n: int, file: str | None, path: str) -> list[tuple[str, str]]:
    """Step-3.5: ``mlp_layer_types`` (``sparse``), else the comma-separated ``moe_layers_enum``, else
    layers 3.. (transformers 5.20.2 Step3p7TextConfig derives ``mlp_layer_types`` from
    ``moe_layers_enum`` or ``range(3, n)``; vLLM step3p5.py ``_is_moe_layer`` reads it)."""
    types = cfg.get("mlp_layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) < n or any(t not in ("dense", "sparse") for t in types[:n]):
            raise _fail(file, f"{path}mlp_layer_types", "needs one 'dense' or 'sparse' per layer", types, ["dense", "sparse"])
        return [("moe", f"mlp_layer_types[{i}] = sparse") if t == "sparse" else ("dense", f"mlp_layer_types[{i}] = {t}") for i, t in enumerate(types[:n])]
    spec = cfg.get("moe_layers_enum")
    if spec is not None:
        items = spec.split(",") if isinstance(spec, str) else spec
        if not isinstance(items, list) or not all(str(t).strip().isdigit() for t in items):
            raise _fail(file, f"{path}moe_layers_enum", "Step-3.5 needs the MoE layer indices (a comma-separated string or a list)", spec, None)
        idx = {int(str(t).strip()) for t in items}
        return [("moe", "index in moe_layers_enum") if i in idx else ("dense", "index not in moe_layers_enum") for i in range(n)]
    return [("moe", "no mlp_layer_types / moe_layers_enum: index >= 3 (the config class's default)") if i >= 3
            else ("dense", "no mlp_layer_types / moe_layers_enum: index < 3 (the config class's default)") for i in range(n)]


def _step5(cfg: Mapping[str, Any], n: int, file: str | None, path: str) -> list[tuple[str, str]]:
    """Step5 (vLLM 0.33.0-0.34.0 vllm/models/step5/nvidia/model.py _get_step5_moe_layer_indices):
    ``moe_layers_enum`` or ``moe_layer_list`` (a comma-separated string or a list; both given must
    agree), else layers 1.."""
    found = {}
    for key in ("moe_layers_enum", "moe_layer_list"):
        spec = cfg.get(key)
        if spec is None:
            continue
        items = spec.split(",") if isinstance(spec, str) else spec
        if not isinstance(items, list) or not all(isinstance(t, int) and not isinstance(t, bool) or str(t).strip().isdigit() or not str(t).strip() for t in items):
            raise _fail(file, f"{path}{key}", "Step5 needs integer layer indices (a comma-separated string or a list)", spec, None)
        found[key] = {int(t) for t in items if str(t).strip()}
    if len(found) == 2 and found["moe_layers_enum"] != found["moe_layer_list"]:
        raise _fail(file, f"{path}moe_layer_list", "Step5 refuses moe_layers_enum and moe_layer_list that describe different layers", cfg.get("moe_layer_list"), None)
    if not found:
        return [("moe", "no moe_layers_enum / moe_layer_list: index >= 1") if i else ("dense", "no moe_layers_enum / moe_layer_list: index 0 is dense") for i in range(n)]
    key, idx = next(iter(found.items()))
    return [("moe", f"index in {key}") if i in idx else ("dense", f"index not in {key}") for i in range(n)]


def _step3p5_own_config(cfg: Mapping[str, Any], n: int, file: str | None, path: str, rel: ReaderRelease) -> list[tuple[str, str]]:
    """Step-3.5 before vLLM 0.33.0 (its own Step3p5Config, step3p5.py Step3p5DecoderLayer): the
    comma-separated ``moe_layers_enum``, else layers 1.. (``mlp_layer_types`` is not read)."""
    spec = cfg.get("moe_layers_enum")
    if spec is None:
        return [("moe", f"no moe_layers_enum: index >= 1 ({rel.words} step3p5.py)") if i else ("dense", f"no moe_layers_enum: index 0 is dense ({rel.words} step3p5.py)") for i in range(n)]
    if not isinstance(spec, str) or not all(t.strip().isdigit() for t in spec.strip().split(",")):
        raise _fail(file, f"{path}moe_layers_enum", f"{rel.words} step3p5.py splits moe_layers_enum on ',': a comma-separated string of layer indices", spec, None)
    idx = {int(t) for t in spec.strip().split(",")}
    return [("moe", "index in moe_layers_enum") if i in idx else ("dense", "index not in moe_layers_enum") for i in range(n)]


def _start_end_interval(cfg: Mapping[str, Any], n: int, count: int, file: str | None, path: str) -> list[tuple[str, str]]:
    """ERNIE-4.5: MoE where ``start <= index <= end`` and ``(index + 1) % interval == 0``; an end
    of -1 (the config class's default) is the last target layer, ``n - 1``."""
    start = _int(cfg, "moe_layer_start_index", 0, file, path) or 0
    end = cfg.get("moe_layer_end_index", -1)
    if end == -1 or end is None:
        end = n - 1
    elif isinstance(end, bool) or not isinstance(end, int) or end < 0:
        raise _fail(file, f"{path}moe_layer_end_index", "must be a layer index or -1 (the last layer)", end, {"minimum": -1})
    interval = _int(cfg, "moe_layer_interval", 1, file, path, minimum=1) or 1
    out = []
    for i in range(count):
        if start <= i <= end and (i + 1) % interval == 0:
            out.append(("moe", f"moe_layer_start_index ({start}) <= index <= moe_layer_end_index ({end}) and (index + 1) % moe_layer_interval ({interval}) == 0"))
        elif (i + 1) % interval:
            out.append(("dense", f"(index + 1) % moe_layer_interval ({interval}) != 0"))
        else:
            out.append(("dense", f"index outside moe_layer_start_index ({start}) .. moe_layer_end_index ({end})"))
    return out


def _generic_layout(cfg: Mapping[str, Any], notes: list[str]) -> str:
    """An unknown model_type: the first generic layout field present decides."""
    for key, layout in (("mlp_layer_types", "mlp_layer_types"), ("hybrid_override_pattern", "hybrid_pattern"), ("first_k_dense_replace", "first_k_dense"),
                        ("moe_layer_freq", "first_k_dense"), ("mlp_only_layers", "sparse_step"), ("decoder_sparse_step", "sparse_step"), ("interleave_moe_layer_step", "interleave")):
        if cfg.get(key) is not None:
            notes.append(f"unknown model_type: the layer layout rests on the generic field {key}")
            return layout
    notes.append("unknown model_type and no layout field (first_k_dense_replace, moe_layer_freq, mlp_only_layers, decoder_sparse_step, interleave_moe_layer_step, hybrid_override_pattern, mlp_layer_types): every layer assumed MoE")
    return "all"


def _draft_layers(family: Family, cfg: Mapping[str, Any], n: int, prefix: str, shared: bool, file: str | None, path: str, notes: list[str], rel: ReaderRelease) -> list[LayerSpec]:
    mtp = family.mtp
    if family is GENERIC:
        mtp = "deepseek" if (cfg.get("num_nextn_predict_layers") or 0) > 0 else None
        if mtp:
            notes.append("unknown model_type: MTP layers planned from the generic field num_nextn_predict_layers, named like DeepSeek's (model.layers.<N+k>)")
    out: list[LayerSpec] = []
    if mtp == "deepseek":
        k = _int(cfg, "num_nextn_predict_layers", 0, file, path) or 0
        if k and family.layout == "first_k":
            first_k = _int(cfg, "first_k_dense_replace", 0, file, path) or 0
            for j in range(k):
                kind = "moe" if n + j >= first_k else "dense"
                out.append(_spec(family, prefix, n + j, f"mtp.{j}", kind, "draft", f"num_nextn_predict_layers = {k}: MTP layer {n + j}; index {'>=' if kind == 'moe' else '<'} first_k_dense_replace ({first_k})", shared))
        elif k and family.layout == "start_end_interval":
            kinds = _start_end_interval(cfg, n, n + k, file, path)
            for j in range(k):
                kind, why = kinds[n + j]
                out.append(_spec(family, prefix, n + j, f"mtp.{j}", kind, "draft", f"num_nextn_predict_layers = {k}: MTP layer {n + j}, built by the target's decoder layer class; {why}", shared))
        elif k:
            freq_cfg = dict(cfg)
            if isinstance(freq_cfg.get("moe_layer_freq"), list):
                freq_cfg["moe_layer_freq"] = 1
            kinds = _first_k_dense(freq_cfg, n + k, file, path, count=n + k)
            for j in range(k):
                kind, why = kinds[n + j]
                out.append(_spec(family, prefix, n + j, f"mtp.{j}", kind, "draft", f"num_nextn_predict_layers = {k}: MTP layer {n + j}; {why}", shared))
    elif mtp == "deepseek_v4":
        k = _int(cfg, "num_nextn_predict_layers", 0, file, path) or 0
        out += [_spec(family, prefix, n + j, f"mtp.{j}", "moe", "draft", f"num_nextn_predict_layers = {k}: MTP layer mtp.{j} (vLLM numbers it {n + j}; not hash-routed)", shared, base=f"mtp.{j}") for j in range(k)]
    elif mtp == "dspark":
        k, key = next(((v, key) for key in ("n_mtp_layers", "num_nextn_predict_layers") if (v := _int(cfg, key, None, file, path))), (3, None))
        why = f"{key} = {k}" if key else "no n_mtp_layers / num_nextn_predict_layers: vLLM builds 3"
        out += [_spec(family, prefix, n + j, f"mtp.{j}", "moe", "draft", f"{why}: DSpark draft layer {n + j} (weights mtp.{j}; not hash-routed)", shared, base=f"mtp.{j}") for j in range(k)]
    elif mtp == "qwen3_5":
        k = _int(cfg, "mtp_num_hidden_layers", 0, file, path) or 0
        out += [_spec(family, prefix, n + j, f"mtp.{j}", "moe", "draft", f"mtp_num_hidden_layers = {k}: MTP layer mtp.layers.{j}", shared, base=f"mtp.layers.{j}") for j in range(k)]
    elif mtp == "nemotron_h":
        steps = _int(cfg, "num_nextn_predict_layers", 0, file, path) or 0
        if steps:
            pattern = cfg.get("mtp_hybrid_override_pattern")
            if not isinstance(pattern, str) or not pattern or set(pattern) - set("*E"):
                raise _fail(file, f"{path}mtp_hybrid_override_pattern", "Nemotron-H MTP needs a pattern of '*' (attention) and 'E' (MoE) letters", pattern, ["*", "E"])
            if steps != 1:
                notes.append(f"num_nextn_predict_layers = {steps}: {rel.words} NemotronHMTP supports one MTP layer only (nemotron_h_mtp.py asserts it in 0.29.0-0.33.0)")
            for i in range(steps * len(pattern)):
                c = pattern[i % len(pattern)]
                out.append(_spec(family, prefix, n + i, f"mtp.{i}", "moe" if c == "E" else "none", "draft", f"mtp_hybrid_override_pattern[{i % len(pattern)}] = {c!r} ({'MoE' if c == 'E' else 'attention'})", shared, base=f"mtp.layers.{i}"))
    elif mtp == "minimax_m3":
        k = _int(cfg, "num_mtp_modules", 1, file, path) or 0
        root = prefix.rsplit(".layers", 1)[0]
        out += [_spec(family, prefix, n + j, f"mtp.{j}", "moe", "draft", f"num_mtp_modules = {k}: MTP layer {j} (force_moe)", shared, base=f"{root}.mtp.layers.{j}") for j in range(k)]
    elif mtp == "dropped":
        k = cfg.get("num_mtp_modules") or 0
        if k:
            notes.append(f"the config declares {k} MTP modules; {rel.words} {family.name} drops their weights at load (no MTP draft)")
    return out
