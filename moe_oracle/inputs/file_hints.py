"""What a ``--config`` file's schema problems mean for the person who wrote the file.

jsonschema says what failed ("True is not of type 'string'", "16385 is greater than the maximum of
16384"); the operator needs why and what to write instead. :func:`explain_schema_issues` rewrites
the messages of the problems a hand-written file meets most, keeping path, value and file:

* a count of ``model:`` past its bound (:data:`~moe_oracle.inputs.bounds.CONFIG_FILE_BOUNDS`):
  the allowed range and what released models use, as a config.json's count is refused;
* ``device.capability`` out of range: it is written major*10+minor;
* a scalar where a string belongs (``environment.env``, ``environment.packages``): YAML 1.1, which
  ``yaml.safe_load`` reads, takes an unquoted ``yes``/``no``/``on``/``off``/``true`` as a boolean and
  ``0.33`` or ``1`` as a number; quoting keeps it a string;
* ``environment.packages`` written as a list (``[vllm==0.33.0]``): it is a mapping name -> version;
* ``model.quant`` neither a name nor a mapping (left empty, a list, a number): what it is and the
  two forms it takes; ``model.hf_config`` / ``hf_quant_config`` null: YAML reads an empty value or a
  bare ``~`` as null (a leading ``~`` is expanded only in a path such as ``~/m/config.json``);
  a ``model.quant`` name holding a character outside ASCII: which, with its code point; an empty
  ``model.quant`` (``{}``, ``""``): it names nothing, with the forms it takes.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Iterable

from ..core.errors import InputIssue
from ..core.names import non_ascii_message
from ..core.quant import QUANT_FORMS, SCHEME_ALIASES, SCHEMES
from .bounds import CONFIG_FILE_BOUNDS

__all__ = ["explain_schema_issues"]

_STRING_MAPS = ("env", "packages")
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)\s*$")


def _quoting(name: str, value: Any) -> str:
    """How YAML read ``value``, and the quoted line to write instead."""
    if isinstance(value, bool):
        meant = ("1" if value else "0") if name.startswith("VLLM_") else "..."
        return f'the boolean {str(value).lower()} (unquoted yes/no, on/off and true/false are booleans in YAML); quote it, e.g. {name}: "{meant}"'
    return f'the number {value!r}; quote it, e.g. {name}: "{value!r}"'


def _packages_form(value: Any) -> str:
    """``packages`` as it should be written, from the list the user gave when its items are
    ``name==version`` requirements; else a generic example."""
    pairs = [_REQUIREMENT.match(item) for item in value if isinstance(item, str)] if isinstance(value, list) else []
    if pairs and all(pairs) and len(pairs) == len(value):
        body = ", ".join(f'{m.group(1)}: "{m.group(2)}"' for m in pairs[:8])
        return f"write packages: {{{body}}}"
    return 'write packages: {vllm: "0.33.0", torch: "2.9.0"}'


_NULL = "null: YAML reads an empty value or a bare ~ as null"


def _kind(value: Any) -> str:
    """What YAML made of a value that is neither a string nor a mapping."""
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__} value"


def _model_field(doc: Any, key: str) -> tuple[bool, Any]:
    """(given, value) of ``model.<key>`` in the document."""
    model = doc.get("model") if isinstance(doc, dict) else None
    return (key in model, model[key]) if isinstance(model, dict) else (False, None)


def _explain(issue: InputIssue, raw: Any, doc: Any = None) -> InputIssue:
    path, keyword, value = issue.path, issue.keyword, issue.value
    if path == "$.model.quant":
        given, quant = _model_field(doc, "quant")
        if given and not isinstance(quant, (str, dict)):
            return replace(issue, message=f"must be a quant scheme name (or reference alias such as FP8-Blk) or a {{weight, activation}} mapping, not {_kind(quant)}", value=quant, allowed=[*SCHEMES, *SCHEME_ALIASES])
        if given and (quant == {} or (isinstance(quant, str) and not quant.strip())):
            empty = "an empty mapping" if quant == {} else "empty"
            return replace(issue, message=f"must not be {empty}: it names no quant scheme (it is not read as unquantized; write unquantized, or {{weight: null}})", value=quant, allowed=list(QUANT_FORMS))
        if given and isinstance(quant, str) and (odd := non_ascii_message("quant scheme", quant)) is not None:
            return replace(issue, message=odd)  # a lookalike (the Kelvin sign U+212A) is no scheme's spelling
    if path in ("$.model.hf_config", "$.model.hf_quant_config"):
        given, ref = _model_field(doc, path[len("$.model."):])
        if given and ref is None:
            return replace(issue, message=f"must be a path or a shipped example's name, not {_NULL}; quote it, '~', for the home directory", value=None, allowed={"type": "string"})
    field = path[len("$.model."):] if path.startswith("$.model.") else None
    if field in CONFIG_FILE_BOUNDS and keyword in ("maximum", "minimum") and isinstance(value, int):
        bound = CONFIG_FILE_BOUNDS[field]
        low = 0 if field in ("num_expert_group", "topk_group") else 1
        return replace(issue, message=f"must be from {low} to {bound.maximum} ({bound.real}; a config.json's count is held to the same bound)", allowed={"minimum": low, "maximum": bound.maximum})
    if path == "$.device.capability" and keyword in ("maximum", "minimum"):
        return replace(issue, message=f"must be from 10 to 200 (got {value!r}): a compute capability is written major*10+minor, e.g. 90 for SM 9.0, 100 for SM 10.0", allowed={"minimum": 10, "maximum": 200})
    parts = path.split(".")
    if keyword == "type" and len(parts) == 4 and parts[:2] == ["$", "environment"] and parts[2] in _STRING_MAPS and isinstance(value, (bool, int, float)):
        return replace(issue, message=f"must be a string: YAML read the unquoted value as {_quoting(parts[3], value)}", allowed={"type": "string"})
    if path == "$.environment.packages" and keyword == "type" and isinstance(raw, list):
        return replace(issue, message=f"must be a mapping of package name to installed version, not a list: {_packages_form(raw)}", value=raw, allowed={"type": "object"})
    return issue


def explain_schema_issues(issues: Iterable[InputIssue], doc: Any) -> list[InputIssue]:
    """``issues`` (from validating ``doc`` against ``moe_config``'s schema) with messages that say
    what to write; problems not listed in the module doc are kept as they are."""
    packages = doc.get("environment", {}).get("packages") if isinstance(doc, dict) and isinstance(doc.get("environment"), dict) else None
    return [_explain(issue, packages if issue.path == "$.environment.packages" else None, doc) for issue in issues]
