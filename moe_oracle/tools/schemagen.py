"""Generate ``schemas/vocabulary.schema.json`` from the Python vocabulary, and the
self-contained copies in ``schemas/bundled/``.

Run ``python -m moe_oracle.tools.schemagen`` after adding an enum member or editing a schema; a
unit test fails when a committed file differs from what this module generates.

The schemas in ``schemas/`` refer to each other by ``$id`` (``urn:moe-oracle:schema:...``),
which needs a ``referencing.Registry``. Each ``schemas/bundled/<name>.schema.json`` is a
2020-12 compound document: the schemas it refers to are embedded under ``$defs`` with their
own ``$id``, so ``jsonschema.validate(instance, bundled)`` works with nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..core.environment import HOST_TOOLS
from ..core.fields import FIELDS, MORI_DISPATCH, NONE
from ..core.quant import QUANT_KEYS, SCHEME_ALIASES, SCHEMES, QuantFamily
from ..core.vocab import Activation, ActivationFormat, All2AllBackend, DType, Interface, Platform, Policy, ReasonCode, RoutingMethod, Source, enum_values

__all__ = ["VOCABULARY_ID", "bundle", "bundled_schemas", "main", "vocabulary_schema"]

VOCABULARY_ID = "urn:moe-oracle:schema:vocabulary"


def _enum(values: Any, description: str) -> dict[str, Any]:
    return {"description": description, "enum": list(values)}


def vocabulary_schema() -> dict[str, Any]:
    """The vocabulary as JSON Schema ``$defs``: one enum per closed set."""
    defs: dict[str, Any] = {
        "platform": _enum(enum_values(Platform), "execution platform"),
        "dtype": _enum(enum_values(DType), "floating dtype"),
        "activation": _enum(enum_values(Activation), "expert activation (vLLM MoEActivation)"),
        "routing_method": _enum(enum_values(RoutingMethod), "router algorithm (vLLM/FlashInfer RoutingMethodType)"),
        "all2all_backend": _enum(enum_values(All2AllBackend), "all2all backend (vLLM All2AllBackend)"),
        "all2all_kind": _enum((NONE, *enum_values(All2AllBackend), *MORI_DISPATCH), "effective all2all / dispatch kind ('none' = no all2all; mori_epv1 / mori_epv2: the MoRI EP generation vLLM resolves for mori)"),
        "activation_format": _enum(enum_values(ActivationFormat), "experts activation format"),
        "interface": _enum(enum_values(Interface), "experts interface"),
        "reason_code": _enum(enum_values(ReasonCode), "closed reason code of a failure"),
        "source": _enum(enum_values(Source), "provenance tag of a value"),
        "policy": _enum(enum_values(Policy), "faithful: the engine's own answer; safe: known bugs and unchecked paths rejected"),
        "quant_scheme": _enum(tuple(SCHEMES), "named (weight key, activation key) pair"),
        "quant_scheme_input": _enum((*SCHEMES, *SCHEME_ALIASES), "a quant_scheme name or its reference alias (FP8-Blk ...), as --quant accepts: what a config file may name, each in one spelling; moe-oracle reads a file's name ignoring case and '-'/'_' first, as --quant does (FP8_Block)"),
        "quant_key": _enum(tuple(QUANT_KEYS), "quantization key of one tensor"),
        "quant_family": _enum(enum_values(QuantFamily), "quant family (vLLM oracle)"),
        "field": {
            "description": "normalized field a predicate reads",
            "anyOf": [
                {"enum": list(FIELDS)},
                {"type": "string", "pattern": "^packages\\.[a-z0-9][a-z0-9._-]*$"},
                {"type": "string", "pattern": "^env\\.[A-Z][A-Z0-9_]*$"},
                {"enum": [f"tools.{name}" for name in HOST_TOOLS]},
            ],
        },
        "scalar": {"type": ["string", "integer", "number", "boolean"]},
        "value_spec": {
            "description": "what a field may be: a list (one of) or keywords",
            "oneOf": [
                {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/scalar"}},
                {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": False,
                    "properties": {
                        "in": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/scalar"}},
                        "not_in": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/scalar"}},
                        "min": {"type": "number"},
                        "max": {"type": "number"},
                        "multiple_of": {"type": "integer", "minimum": 1},
                        "not_multiple_of": {"type": "integer", "minimum": 1},
                        "present": {"type": "boolean", "description": "packages.<name> only: installed (true) or not (false)"},
                    },
                },
            ],
        },
        "engine_range": {
            "description": "engine releases a fact holds for: {<engine package>: <PEP 440 specifier set>} (absent: every release)",
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "propertyNames": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]*$"},
            "additionalProperties": {"type": "string", "minLength": 1},
        },
        "condition": {
            "description": "every listed field must match its value spec",
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"$ref": "#/$defs/field"},
            "additionalProperties": {"$ref": "#/$defs/value_spec"},
        },
        "rule_id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]*$", "maxLength": 120},
        "backend_id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "maxLength": 64},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": VOCABULARY_ID,
        "title": "moe_oracle vocabulary (generated by python -m moe_oracle.tools.schemagen; do not edit)",
        "$defs": defs,
    }


def render() -> str:
    return json.dumps(vocabulary_schema(), indent=2) + "\n"


def _external_refs(node: Any) -> set[str]:
    refs: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            refs.add(ref.split("#", 1)[0])
        for value in node.values():
            refs |= _external_refs(value)
    elif isinstance(node, list):
        for value in node:
            refs |= _external_refs(value)
    return refs


def bundle(name: str, documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Schema ``name`` with every schema it refers to (transitively) embedded under ``$defs``.

    Raises:
        KeyError: a ``$ref`` names an ``$id`` no document declares.
    """
    by_id = {doc["$id"]: key for key, doc in documents.items()}
    root = json.loads(json.dumps(documents[name]))
    wanted = sorted(_external_refs(root))
    embedded: dict[str, Any] = {}
    while wanted:
        uri = wanted.pop()
        key = by_id[uri]
        if key in embedded or key == name:
            continue
        embedded[key] = documents[key]
        wanted += sorted(_external_refs(documents[key]) - {documents[k]["$id"] for k in embedded})
    if embedded:
        defs = dict(root.get("$defs", {}))
        for key in sorted(embedded):
            doc = {k: v for k, v in embedded[key].items() if k != "$schema"}
            defs[f"bundled:{key}"] = doc
        root["$defs"] = defs
    return root


def bundled_schemas(directory: Path) -> dict[str, str]:
    """File name -> text of every bundled schema for the schemas in ``directory``."""
    documents = {p.name[: -len(".schema.json")]: json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.schema.json"))}
    return {f"{name}.schema.json": json.dumps(bundle(name, documents), indent=2) + "\n" for name in documents}


def main(argv: list[str] | None = None) -> int:
    """Write the vocabulary schema (default: the package's ``schemas/vocabulary.schema.json``)
    and, beside it, ``bundled/`` with every table schema made self-contained."""
    import argparse

    from ..core._resources import schema_dir
    from ..inputs.paths import user_path  # the path the operator wrote: a leading ~ expanded

    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.tools.schemagen", description=main.__doc__)
    parser.add_argument("target", nargs="?", type=user_path, default=None, help="where to write the vocabulary schema (default: the package's schemas/vocabulary.schema.json); bundled/ goes beside it")
    args = parser.parse_args(argv)
    target: Path = args.target if args.target is not None else schema_dir() / "vocabulary.schema.json"
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
    out = target.parent / "bundled"
    out.mkdir(exist_ok=True)
    for file_name, text in bundled_schemas(target.parent).items():
        (out / file_name).write_text(text, encoding="utf-8")
    print(f"wrote {out}/ (self-contained schemas)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
