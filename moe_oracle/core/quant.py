"""Quantization keys and schemes: what the weights and activations of experts hold.

A :class:`QuantKey` describes one tensor's quantization: storage dtype, scale
dtype, scale granularity, static or dynamic scales. A :class:`QuantScheme` is the
pair (weight key, activation key) that kernels accept; ``None`` on a side means
that side stays in the model dtype (bf16/fp16).

Source: vLLM main 00f7f258 ``Q/utils/quant_utils.py`` (``kFp8StaticTensorSym`` ...)
and the scheme aliases of the reference catalog §0. Names here are the
snake_case of vLLM's constants (``kFp8Static128BlockSym`` -> ``fp8_static_block128``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .errors import ConfigError, InputIssue, did_you_mean
from .names import ascii_lower, non_ascii_message

__all__ = [
    "Granularity",
    "QuantFamily",
    "QuantKey",
    "QuantScheme",
    "QUANT_KEYS",
    "SCHEMES",
    "UNQUANTIZED",
    "UnknownSchemeError",
    "method_weight_key",
    "unknown_scheme_issue",
    "scheme_by_name",
    "scheme_name",
]


class Granularity(str, enum.Enum):
    """Scale granularity (vLLM ``GroupShape``)."""

    PER_TENSOR = "per_tensor"  # (-1, -1)
    PER_TOKEN = "per_token"  # (1, -1)
    PER_CHANNEL = "per_channel"  # (-1, 1)
    BLOCK_128X128 = "block_128x128"  # DeepSeek weight blocks
    GROUP_128 = "group_128"  # 1x128 activation groups
    GROUP_64 = "group_64"
    GROUP_32 = "group_32"  # MX formats, GPTQ g32
    GROUP_16 = "group_16"  # NVFP4
    GROUP = "group"  # GPTQ/AWQ group size carried outside the key (vLLM (1,-1) TODO)
    TILE_8X64 = "tile_8x64"  # LUT-B: one codebook (and UE8M0 scale) per 8x64 weight tile


class QuantFamily(str, enum.Enum):
    """Which vLLM oracle owns a scheme; priority rules are declared per family."""

    UNQUANTIZED = "unquantized"
    FP8 = "fp8"
    MXFP8 = "mxfp8"
    NVFP4 = "nvfp4"
    MXFP4 = "mxfp4"
    INT8 = "int8"
    WNA16 = "wna16"
    W4A8_FP8 = "w4a8_fp8"
    W4A8_INT8 = "w4a8_int8"
    LUT_B = "lut_b"


@dataclass(frozen=True)
class QuantKey:
    """Quantization of one tensor.

    Attributes:
        name: vocabulary name, e.g. ``"fp8_static_block128"``.
        dtype: storage dtype name (``float8_e4m3fn``, ``fp4_e2m1`` stored as uint8, ``int8``, ``uint4b8`` ...).
        scale_dtype: dtype of the scales (``float32``, ``float8_e4m3fn``, ``e8m0``, ``float16``, ``bfloat16``).
        granularity: scale granularity.
        static: scales fixed at load time (``True``) or computed per call.
        symmetric: no zero point.
    """

    name: str
    dtype: str
    scale_dtype: str
    granularity: Granularity
    static: bool
    symmetric: bool = True


def _k(name: str, dtype: str, scale_dtype: str, gran: Granularity, static: bool, symmetric: bool = True) -> QuantKey:
    return QuantKey(name, dtype, scale_dtype, gran, static, symmetric)


G = Granularity
_KEYS = (
    _k("fp8_static_tensor", "float8_e4m3fn", "float32", G.PER_TENSOR, True),
    _k("fp8_dynamic_tensor", "float8_e4m3fn", "float32", G.PER_TENSOR, False),
    _k("fp8_static_token", "float8_e4m3fn", "float32", G.PER_TOKEN, True),
    _k("fp8_static_channel", "float8_e4m3fn", "float32", G.PER_CHANNEL, True),
    _k("fp8_dynamic_token", "float8_e4m3fn", "float32", G.PER_TOKEN, False),
    _k("fp8_dynamic_group128", "float8_e4m3fn", "float32", G.GROUP_128, False),
    _k("fp8_static_block128", "float8_e4m3fn", "float32", G.BLOCK_128X128, True),
    _k("fp8_dynamic_group64", "float8_e4m3fn", "float32", G.GROUP_64, False),
    _k("nvfp4_static", "fp4_e2m1", "float8_e4m3fn", G.GROUP_16, True),
    _k("nvfp4_dynamic", "fp4_e2m1", "float8_e4m3fn", G.GROUP_16, False),
    _k("mxfp8_static", "float8_e4m3fn", "e8m0", G.GROUP_32, True),
    _k("mxfp8_dynamic", "float8_e4m3fn", "e8m0", G.GROUP_32, False),
    _k("mxfp4_static", "fp4_e2m1", "e8m0", G.GROUP_32, True),
    _k("mxfp4_dynamic", "fp4_e2m1", "e8m0", G.GROUP_32, False),
    _k("int4_static", "uint4b8", "float16", G.GROUP, True),
    _k("int8_static", "uint8b128", "float16", G.GROUP, True),
    _k("int4_static_g32", "uint4b8", "float16", G.GROUP_32, True),
    _k("int4_static_asym", "uint4", "float16", G.GROUP, True, symmetric=False),
    _k("int4_static_g32_asym", "uint4", "float16", G.GROUP_32, True, symmetric=False),
    _k("int8_static_asym", "uint8", "float16", G.GROUP, True, symmetric=False),  # compressed-tensors 8-bit with zero points (no vLLM constant)
    _k("int8_static_channel", "int8", "float32", G.PER_CHANNEL, True),
    _k("int8_dynamic_token", "int8", "float32", G.PER_TOKEN, False),
    _k("int8_static_tensor", "int8", "float32", G.PER_TENSOR, True),
    _k("int8_dynamic_tensor", "int8", "float32", G.PER_TENSOR, False),
    _k("int4_w4a8_static_channel", "int8", "float32", G.PER_CHANNEL, True),
    _k("int4_w4a8_static_group128", "int8", "bfloat16", G.GROUP_128, True),
    _k("int4_w4a8_static_group64", "int8", "bfloat16", G.GROUP_64, True),
    _k("int4_w4a8_static_group32", "int8", "bfloat16", G.GROUP_32, True),
    # vLLM 0.30-0.33 Q/utils/quant_utils.py additions.
    _k("nvfp4_dynamic_token", "fp4_e2m1", "float8_e4m3fn", G.GROUP_16, False),  # kNvfp4DynamicToken (second-level scale per token)
    _k("fp8_static_block128_e8m0", "float8_e4m3fn", "e8m0", G.BLOCK_128X128, True),  # kFp8Static128BlockE8M0Sym
    _k("int8_dynamic_token_asym", "int8", "float32", G.PER_TOKEN, False, symmetric=False),  # kInt8DynamicTokenAsym
    _k("int8_static_tensor_asym", "int8", "float32", G.PER_TENSOR, True, symmetric=False),  # kInt8StaticTensorAsym
    _k("int8_dynamic_tensor_asym", "int8", "float32", G.PER_TENSOR, False, symmetric=False),  # kInt8DynamicTensorAsym
    _k("int8_dynamic_group32", "int8", "float32", G.GROUP_32, False),  # kInt8Dynamic32Sym
    _k("int4_w4a8_static_group", "int8", "bfloat16", G.GROUP, True),  # kInt4W4A8StaticGroupSym (group size outside the key)
    # vLLM 0.34.0 Q/utils/quant_utils.py kLutBStatic: 3-bit indices (uint8 storage) into one E4M3
    # codebook per 8x64 tile (kLutBStaticCodebook); online only (Q/online/lut_b.py).
    _k("lut_b_static", "uint8", "float8_e4m3fn", G.TILE_8X64, True),
)
del G

QUANT_KEYS: Mapping[str, QuantKey] = MappingProxyType({k.name: k for k in _KEYS})


@dataclass(frozen=True)
class QuantScheme:
    """A (weight key, activation key) pair.

    Attributes:
        weight: name of the weight :class:`QuantKey`, or ``None`` (model dtype).
        activation: name of the activation key, or ``None`` (weight-only / unquantized).

    Raises:
        ValueError: a key name that is not in :data:`QUANT_KEYS`, or an
            activation key without a weight key.
    """

    weight: str | None = None
    activation: str | None = None

    def __post_init__(self) -> None:
        for side, key in (("weight", self.weight), ("activation", self.activation)):
            if key is not None and key not in QUANT_KEYS:
                raise ValueError(f"quant.{side}: unknown quant key {key!r}; allowed: {sorted(QUANT_KEYS)}")
        if self.weight is None and self.activation is not None:
            raise ValueError("quant.activation is set but quant.weight is not: activation-only quantization is not a MoE scheme")

    @property
    def name(self) -> str:
        """Vocabulary name of the pair (``"fp8_block"``), or ``"<weight>+<activation>"`` if unnamed.

        >>> QuantScheme("fp8_static_block128", "fp8_dynamic_group128").name
        'fp8_block'
        """
        return _NAME_BY_PAIR.get((self.weight, self.activation)) or f"{self.weight}+{self.activation}"

    @property
    def family(self) -> QuantFamily:
        """The vLLM oracle family of this pair (priority rules are per family)."""
        named = _FAMILY_BY_PAIR.get((self.weight, self.activation))
        if named is not None:
            return named
        return _family_of_weight(self.weight)


def _family_of_weight(weight: str | None) -> QuantFamily:
    if weight is None:
        return QuantFamily.UNQUANTIZED
    for prefix, fam in (
        ("fp8", QuantFamily.FP8),
        ("nvfp4", QuantFamily.NVFP4),
        ("mxfp8", QuantFamily.MXFP8),
        ("mxfp4", QuantFamily.MXFP4),
        ("int4_w4a8", QuantFamily.W4A8_INT8),
        ("int8_static_channel", QuantFamily.INT8),
        ("int8_static_tensor", QuantFamily.INT8),
        ("lut_b", QuantFamily.LUT_B),
    ):
        if weight.startswith(prefix):
            return fam
    return QuantFamily.WNA16


F = QuantFamily
# name -> (weight key, activation key, family, reference alias)
_SCHEMES: tuple[tuple[str, str | None, str | None, QuantFamily, str], ...] = (
    ("unquantized", None, None, F.UNQUANTIZED, "BF16"),
    ("fp8_tensor_static", "fp8_static_tensor", "fp8_static_tensor", F.FP8, "FP8-T-S"),
    ("fp8_tensor_dynamic", "fp8_static_tensor", "fp8_dynamic_tensor", F.FP8, "FP8-T-DT"),
    ("fp8_tensor_token", "fp8_static_tensor", "fp8_dynamic_token", F.FP8, "FP8-T-Tok"),
    ("fp8_channel_token", "fp8_static_channel", "fp8_dynamic_token", F.FP8, "FP8-Ch-Tok"),
    ("fp8_block", "fp8_static_block128", "fp8_dynamic_group128", F.FP8, "FP8-Blk"),
    ("fp8_w16", "fp8_static_tensor", None, F.FP8, "FP8-T-W16"),
    ("fp8_channel_w16", "fp8_static_channel", None, F.FP8, "FP8-Ch-W16"),
    ("fp8_block_w16", "fp8_static_block128", None, F.FP8, "FP8-Blk-W16"),
    ("mxfp8", "mxfp8_static", "mxfp8_dynamic", F.MXFP8, "MXFP8"),
    ("mxfp8_w16", "mxfp8_static", None, F.MXFP8, "MXFP8-W16"),
    ("nvfp4", "nvfp4_static", "nvfp4_dynamic", F.NVFP4, "NVFP4"),
    ("nvfp4_w16", "nvfp4_static", None, F.NVFP4, "NVFP4-W16"),
    ("nvfp4_token", "nvfp4_static", "nvfp4_dynamic_token", F.NVFP4, "NVFP4-Tok"),  # vLLM 0.31+ kNvfp4DynamicToken
    ("mxfp4_w16", "mxfp4_static", None, F.MXFP4, "MXFP4-W16"),
    ("mxfp4_mxfp8", "mxfp4_static", "mxfp8_dynamic", F.MXFP4, "MXFP4-A8mx"),
    ("mxfp4_mxfp4", "mxfp4_static", "mxfp4_dynamic", F.MXFP4, "MXFP4-A4"),
    ("mxfp4_fp8_tensor", "mxfp4_static", "fp8_static_tensor", F.MXFP4, "MXFP4-Afp8T"),
    ("mxfp4_fp8_block", "mxfp4_static", "fp8_dynamic_group128", F.MXFP4, "MXFP4-Afp8Blk"),
    ("int8_channel_token", "int8_static_channel", "int8_dynamic_token", F.INT8, "INT8-Ch-Tok"),
    ("int8_tensor_dynamic", "int8_static_tensor", "int8_dynamic_tensor", F.INT8, "INT8-T-DT"),
    ("w4a8_fp8", "int4_static", "fp8_dynamic_token", F.W4A8_FP8, "W4A8-FP8"),
    ("int4_w16", "int4_static", None, F.WNA16, "kInt4Static"),
    ("int4_g32_w16", "int4_static_g32", None, F.WNA16, "kInt4Static32"),
    ("int4_asym_w16", "int4_static_asym", None, F.WNA16, "kInt4StaticAsym"),
    ("int4_g32_asym_w16", "int4_static_g32_asym", None, F.WNA16, "kInt4Static32Asym"),
    ("int8_w16", "int8_static", None, F.WNA16, "kInt8Static"),
    ("int8_asym_w16", "int8_static_asym", None, F.WNA16, "kInt8StaticAsym"),
    ("w4a8_int8_channel", "int4_w4a8_static_channel", None, F.W4A8_INT8, "kInt4W4A8StaticChannelSym"),
    ("w4a8_int8_group128", "int4_w4a8_static_group128", None, F.W4A8_INT8, "kInt4W4A8StaticGroup128Sym"),
    ("w4a8_int8_group64", "int4_w4a8_static_group64", None, F.W4A8_INT8, "kInt4W4A8StaticGroup64Sym"),
    ("w4a8_int8_group32", "int4_w4a8_static_group32", None, F.W4A8_INT8, "kInt4W4A8StaticGroup32Sym"),
    ("lut_b", "lut_b_static", "mxfp8_dynamic", F.LUT_B, "LUT-B"),  # vLLM 0.34.0 (kLutBStatic, kMxfp8Dynamic)
)
del F

_NAME_BY_PAIR = {(w, a): name for name, w, a, _, _ in _SCHEMES}
_FAMILY_BY_PAIR = {(w, a): fam for _, w, a, fam, _ in _SCHEMES}

SCHEMES: Mapping[str, QuantScheme] = MappingProxyType({name: QuantScheme(w, a) for name, w, a, _, _ in _SCHEMES})
"""Named schemes, in declaration order; tables list accepted schemes by these names."""

SCHEME_ALIASES: Mapping[str, str] = MappingProxyType({alias: name for name, _, _, _, alias in _SCHEMES})
"""Reference-catalog alias (``"FP8-Blk"``) -> scheme name (``"fp8_block"``)."""

UNQUANTIZED = SCHEMES["unquantized"]

QUANT_FORMS: tuple[str, ...] = (
    "a quant scheme name (fp8_block, nvfp4, ...; unquantized for none)",
    "a reference alias (FP8-Blk, ...)",
    "a {weight, activation} mapping of quant keys (null: that tensor is not quantized)",
)
"""The forms a quant scheme input (``--quant``, a MoEConfig file's ``model.quant``) takes, as an
error lists them."""


def _spelling(name: str) -> str:
    """A name with case and ``-``/``_`` ignored (``FP8-Blk`` and ``fp8_blk`` spell one name);
    case folded on ASCII letters only, so that no lookalike (the Kelvin sign U+212A, which
    ``str.lower`` makes ``k``) spells a scheme (:func:`~moe_oracle.core.names.ascii_lower`)."""
    return ascii_lower(name).replace("-", "_")


def _by_spelling() -> Mapping[str, str]:
    """Every scheme name and alias by :func:`_spelling` -> its scheme name. Raises at import when
    two spell alike but name different schemes (then case would decide, and it must not)."""
    out: dict[str, str] = {}
    for given, scheme in [*((n, n) for n in SCHEMES), *SCHEME_ALIASES.items()]:
        key = _spelling(given)
        if out.setdefault(key, scheme) != scheme:
            raise AssertionError(f"quant scheme names {given!r} ({scheme}) and one of {out[key]} spell alike ({key!r}) but name different schemes")
    return MappingProxyType(out)


_BY_SPELLING = _by_spelling()


class SchemeIssue(InputIssue):
    """An unknown quant scheme name; its did-you-mean is a scheme name (an alias spelled close to
    the value is answered with the scheme it names), never an alias's own spelling."""

    def suggestion(self) -> str | None:
        if not isinstance(self.value, str):
            return None
        close = did_you_mean(_spelling(self.value), list(_BY_SPELLING))
        return _BY_SPELLING[close] if close is not None else None


def unknown_scheme_issue(path: str, value: object) -> InputIssue:
    """The issue for a quant scheme name neither :data:`SCHEMES` nor :data:`SCHEME_ALIASES` holds
    in any case or ``-``/``_`` spelling, with every name allowed; a name holding a character
    outside ASCII is told so, with the character's code point."""
    return SchemeIssue(path, non_ascii_message("quant scheme", value) or "unknown quant scheme (names are read ignoring case, and '-' as '_')", value, [*SCHEMES, *SCHEME_ALIASES])


class UnknownSchemeError(ConfigError, KeyError):
    """A quant scheme name that is neither a scheme nor an alias: a :class:`ConfigError` naming
    the allowed names (with a did-you-mean), and a ``KeyError`` for callers that look names up."""

    def __str__(self) -> str:  # KeyError's would print the repr of the message
        return ConfigError.__str__(self)


def scheme_name(name: object) -> str | None:
    """The scheme name (a :data:`SCHEMES` key) that ``name`` spells: a scheme name or a reference
    alias, case and ``-``/``_`` ignored; ``None`` when it spells none (or is not a string). The
    one place that says which spellings a quant scheme name may take: ``--quant``
    (:func:`scheme_by_name`) and a MoEConfig file's ``model.quant`` (normalized with it before the
    schema's enum of canonical names checks it) both read it.

    >>> scheme_name("FP8-Blk"), scheme_name("FP8_BLOCK"), scheme_name("Nvfp4"), scheme_name("fp8_blok"), scheme_name(7)
    ('fp8_block', 'fp8_block', 'nvfp4', None, None)
    """
    if not isinstance(name, str):
        return None
    if name in SCHEMES:
        return name
    if name in SCHEME_ALIASES:
        return SCHEME_ALIASES[name]
    return _BY_SPELLING.get(_spelling(name))


def scheme_by_name(name: str) -> QuantScheme:
    """Look up a named scheme; reference aliases (``FP8-Blk``) are accepted too, and case and
    ``-``/``_`` are ignored, as no two names differ only in them (``FP8_BLOCK``, ``bf16``, ``fp8-blk``).

    >>> scheme_by_name("FP8-Blk").name, scheme_by_name("Fp8_Block").name, scheme_by_name("bf16").name
    ('fp8_block', 'fp8_block', 'unquantized')

    Raises:
        UnknownSchemeError: ``name`` is neither a scheme name nor an alias (a ``ConfigError``
            and a ``KeyError``).
    """
    found = scheme_name(name)
    if found is not None:
        return SCHEMES[found]
    raise UnknownSchemeError([unknown_scheme_issue("$.quant", name)])


# (quantization method, bits) -> the weight key its MoE method builds when the group size is not 32
# and when it is; compressed-tensors keeps the checkpoint's own key (group 32 and zero points included).
_METHOD_KEYS: Mapping[tuple[str, int], tuple[str, str]] = MappingProxyType({
    ("gptq", 4): ("int4_static", "int4_static"),  # AutoGPTQMoEMethod: QuantKey(uint4b8, kInt4StaticGroupScale)
    ("gptq", 8): ("int8_static", "int8_static"),
    ("awq", 4): ("int4_static", "int4_static"),  # AutoAWQMoEMethod: kInt4Static, zero points passed apart
    ("moe_wna16", 4): ("int4_static", "int4_static_g32"),  # MoeWNA16Method: kInt4Static32GroupScale for group 32
    ("moe_wna16", 8): ("int8_static", "int8_static"),
})


def method_weight_key(method: str | None, weight: str | None, group_size: int | None) -> str | None:
    """The weight key a WNA16 quantization method passes to vLLM's oracle for a checkpoint key.

    GPTQ, AWQ and MoeWNA16 build their key from the bit width alone (MoeWNA16 also from a group
    size of 32) and pass zero points separately, so an asymmetric or group-32 checkpoint key
    becomes the method's own; compressed-tensors and every other method pass the checkpoint's key.
    Source: vLLM 0.29.0-0.33.0 Q/auto_gptq.py AutoGPTQMoEMethod, Q/auto_awq.py AutoAWQMoEMethod,
    Q/moe_wna16.py MoeWNA16Method.

    Args:
        method: the quantization method serving the layer (``moe_quant_method``).
        weight: the checkpoint's weight key name (WNA16 keys: ``uint4*`` / ``uint8*`` storage).
        group_size: the checkpoint's group size; ``None``: read group 32 off the key.

    >>> method_weight_key("gptq", "int4_static_g32", 32)
    'int4_static'
    >>> method_weight_key("moe_wna16", "int4_static_asym", 32)
    'int4_static_g32'
    """
    if weight is None or method is None:
        return weight
    key = QUANT_KEYS[weight]
    bits = 4 if key.dtype.startswith("uint4") else 8 if key.dtype.startswith("uint8") else None
    pair = _METHOD_KEYS.get((method, bits)) if bits is not None else None
    if pair is None:
        return weight
    g32 = group_size == 32 if group_size is not None else key.granularity is Granularity.GROUP_32
    return pair[1] if g32 else pair[0]
