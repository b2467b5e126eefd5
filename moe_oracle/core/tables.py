"""Reading capability tables: YAML through ``yaml.safe_load``, validated against ``schemas/``.

Every YAML document this package reads (tables, ``--config`` files, a serve line's ``--config``,
engine facts, the divergence list) goes through :func:`safe_load`: ``yaml.safe_load`` with
:class:`UniqueKeyLoader`, which refuses a mapping that repeats a key instead of keeping the last.

Every problem in every file is collected (file, entry id, JSON path, keyword,
value) and raised once as a :class:`~moe_oracle.core.errors.TableError`; a table set
with any problem is rejected whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ._resources import schema_dir
from .errors import InputIssue

if TYPE_CHECKING:
    import jsonschema

# jsonschema (and referencing) are imported where a document is validated: a table set answered
# from the validated-table cache never validates, and the import is a third of a CLI call. yaml
# is imported where a document is parsed (the loaders live in ._yaml_loaders): a warm `select`
# reads its tables from the caches and parses no YAML.

__all__ = ["KIND_DIRS", "TableFile", "UniqueKeyLoader", "cache_dir", "cache_disabled", "load_schemas", "read_generated", "read_tables", "read_tables_cached", "safe_load", "safe_load_generated", "table_set_key", "validate_document", "yaml_error_issue"]


def __getattr__(name: str) -> Any:
    # UniqueKeyLoader (a yaml.SafeLoader) is defined in ._yaml_loaders, imported on first use.
    if name == "UniqueKeyLoader":
        from ._yaml_loaders import UniqueKeyLoader

        return UniqueKeyLoader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TABLE_KINDS = ("experts", "prepare_finalize", "priority", "known_bad", "constraints", "aliases", "environment", "overrides", "shortcuts", "engine", "frontends")
KIND_DIRS: Mapping[str, tuple[str, ...]] = {
    "kernels": ("experts",),
    "prepare_finalize": ("prepare_finalize",),
    "rules": ("priority", "known_bad", "constraints", "aliases", "environment", "overrides", "shortcuts", "engine", "frontends"),
}
MAX_TABLE_BYTES = 4 * 1024 * 1024
MAX_YAML_BYTES = 256 * 1024
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 64
"""A document read by :func:`parse_yaml_bytes` (tables, ``--config`` files): at most
:data:`MAX_TABLE_BYTES` bytes as JSON, :data:`MAX_YAML_BYTES` as other YAML (the pure-Python
parser reads about 0.4 MB/s here; the largest shipped table is 80 kB), :data:`MAX_YAML_NODES`
values once aliases are expanded (the largest shipped table has 5,500) and :data:`MAX_YAML_DEPTH`
levels of flow brackets."""


@dataclass(frozen=True)
class TableFile:
    """One parsed, schema-valid table document.

    Attributes:
        path: display path (``kernels/triton.yaml``).
        kind: the document's ``kind``.
        data: the parsed document (plain dicts and lists).
        sha256: hash of the raw bytes.
    """

    path: str
    kind: str
    data: Any
    sha256: str


@dataclass(frozen=True)
class Schemas:
    """Compiled validators for every table kind plus MoEConfig and Decision."""

    validators: Mapping[str, jsonschema.protocols.Validator]

    def for_kind(self, kind: str) -> jsonschema.protocols.Validator:
        return self.validators[kind]


def load_schemas(directory: Path | None = None) -> Schemas:
    """Load every ``*.schema.json`` and build one validator per document kind.

    Raises:
        FileNotFoundError: the schema directory is missing (broken installation).
    """
    import jsonschema
    from referencing import Registry, Resource

    directory = directory or schema_dir()
    resources = []
    documents: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.schema.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        documents[path.name[: -len(".schema.json")]] = doc
        resources.append((doc["$id"], Resource.from_contents(doc)))
    registry = Registry().with_resources(resources)
    validators = {}
    for name, doc in documents.items():
        cls = jsonschema.validators.validator_for(doc)
        validators[name] = cls(doc, registry=registry, format_checker=cls.FORMAT_CHECKER)
    return Schemas(validators)


def safe_load(text: str | bytes) -> Any:
    """``yaml.safe_load`` refusing duplicate mapping keys (:class:`UniqueKeyLoader`).

    Raises:
        yaml.YAMLError: not valid YAML, or a mapping that repeats a key (a ``ConstructorError``
            whose ``problem_mark`` is the repeated key's line and column).
    """
    import yaml

    from ._yaml_loaders import UniqueKeyLoader

    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def safe_load_generated(text: str | bytes) -> Any:
    """:func:`safe_load` for the files this package generates (``engine_facts/``): the same safe
    constructor and duplicate-key check, parsed by libyaml when PyYAML has it.

    Raises:
        yaml.YAMLError: as :func:`safe_load`.
    """
    import yaml

    from ._yaml_loaders import _FastUniqueKeyLoader

    return yaml.load(text, Loader=_FastUniqueKeyLoader)  # noqa: S506 - a CSafeLoader/SafeLoader subclass


def yaml_error_issue(path: str, exc: BaseException) -> InputIssue:
    """An :class:`InputIssue` for a YAML/encoding failure, with line and column when known."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "document"
    problem = getattr(exc, "problem", None) or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return InputIssue(path=f"$ ({where})", message=f"not valid YAML: {problem}", file=path, keyword="yaml")


def _large_json(display: str, text: str) -> tuple[Any, list[InputIssue]]:
    """A document past :data:`MAX_YAML_BYTES`, read as JSON by the C parser (a Hugging Face
    config.json given as ``--config``): YAML of this size would take the pure-Python one seconds."""
    size = {"maxBytes": MAX_YAML_BYTES}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            repeated = next(k for i, (k, _) in enumerate(items) if k in dict(items[:i]))
            raise ValueError(f"found duplicate key {repeated!r}")
        return out

    if not text.lstrip().startswith(("{", "[")):
        return None, [InputIssue("$", f"a YAML document larger than {MAX_YAML_BYTES} bytes is not read (JSON is, up to {MAX_TABLE_BYTES} bytes; tables and config files are a few kB)", None, size, display, keyword="size")]
    try:
        return json.loads(text, object_pairs_hook=pairs), []
    except RecursionError:
        return None, [InputIssue("$", "JSON nesting is too deep", None, None, display, keyword="json")]
    except ValueError as exc:  # JSONDecodeError is a ValueError; so is a repeated key
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        return None, [InputIssue(f"${where}", f"not valid JSON: {exc.msg if isinstance(exc, json.JSONDecodeError) else exc} (a document larger than {MAX_YAML_BYTES} bytes is read only as JSON)", None, size, display, keyword="json")]


def parse_yaml_bytes(display: str, raw: bytes) -> tuple[Any, list[InputIssue]]:
    """:func:`safe_load` of ``raw`` (duplicate keys refused) with every failure turned into an issue (never raises)."""
    if len(raw) > MAX_TABLE_BYTES:
        return None, [InputIssue("$", f"file is larger than {MAX_TABLE_BYTES} bytes", len(raw), None, display, keyword="size")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [InputIssue("$", f"not UTF-8: byte {exc.start} ({raw[exc.start:exc.start + 1]!r}) is invalid", None, None, display, keyword="encoding")]
    import yaml

    from ._yaml_loaders import YamlTooLarge, bounded_load

    if len(raw) > MAX_YAML_BYTES:
        return _large_json(display, text)
    try:
        return bounded_load(text, max_nodes=MAX_YAML_NODES, max_depth=MAX_YAML_DEPTH), []
    except YamlTooLarge as exc:
        return None, [InputIssue("$", str(exc), None, {"maxNodes": MAX_YAML_NODES, "maxDepth": MAX_YAML_DEPTH}, display, keyword="size")]
    except yaml.YAMLError as exc:
        return None, [yaml_error_issue(display, exc)]
    except RecursionError:
        return None, [InputIssue("$", "YAML nesting is too deep", None, None, display, keyword="yaml")]
    except (ValueError, AttributeError) as exc:
        # PyYAML's scalar constructors raise these, not YAMLError, for a scalar that looks like an
        # int, float or timestamp but cannot be built: over 4300 digits, month 13, `!!int abc`,
        # `!!timestamp abc` (AttributeError from its regex match).
        detail = f": {exc}" if isinstance(exc, ValueError) else ""
        return None, [InputIssue("$", f"not valid YAML: a number or date cannot be constructed{detail}", None, None, display, keyword="yaml")]


def _entry_id(doc: Any, error_path: Sequence[Any]) -> str | None:
    if len(error_path) >= 2 and error_path[0] in ("entries", "orders", "adjustments", "opt_in_only", "overrides", "constraints", "variables", "shortcuts", "releases"):
        try:
            item = doc[error_path[0]][error_path[1]]
        except (KeyError, IndexError, TypeError):
            return None
        if isinstance(item, dict):
            value = item.get("id", item.get("name", item.get("version")))
            return value if isinstance(value, str) else None
    if len(error_path) >= 1 and error_path[0] in ("backends", "all2all") and len(error_path) >= 2:
        return str(error_path[1])
    return None


def _json_path(error_path: Iterable[Any]) -> str:
    out = "$"
    for part in error_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validate_document(validator: jsonschema.protocols.Validator, doc: Any, display: str | None) -> list[InputIssue]:
    """All schema errors of ``doc`` as issues, deepest first (``iter_errors``, never ``validate``)."""
    import jsonschema

    issues = []
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    # A subschema that fails evaluates none of its keys, so unevaluatedProperties then blames every
    # valid key of that object: dropped when another error lies at or under the same object.
    others = [tuple(e.absolute_path) for e in errors if e.validator != "unevaluatedProperties"]
    errors = [e for e in errors if e.validator != "unevaluatedProperties" or not any(p[: len(e.absolute_path)] == tuple(e.absolute_path) for p in others)]
    for err in errors:
        # For oneOf/anyOf, the most relevant sub-error names the actual problem.
        best = jsonschema.exceptions.best_match([err]) if err.context else err
        allowed = best.validator_value if best.validator in ("enum", "const", "required", "type") else None
        message = best.message if len(best.message) < 300 else best.message[:297] + "..."
        value = best.instance if isinstance(best.instance, (str, int, float, bool)) else None
        path = _json_path(best.absolute_path)
        keyword = None
        names = _choice_names(err)
        if names is not None:
            # A name that is none of the names a schema allows (anyOf of enums and patterns: the
            # field namespace): the name, every allowed spelling (for the did-you-mean), and the
            # key's own path when it is a key (propertyNames).
            key = "propertyNames" in err.schema_path
            path, value, allowed = _json_path(err.absolute_path) + (f".{err.instance}" if key else ""), err.instance, names
            message = _unknown_name(names, key)
        elif best.validator == "enum" and "propertyNames" in best.schema_path and isinstance(best.instance, str):
            path, value, allowed, message = f"{path}.{best.instance}", best.instance, list(best.validator_value), "unknown key"
        elif err.validator == "anyOf" and isinstance(err.instance, dict) and err.context and all(c.validator == "required" for c in err.context):
            # anyOf [required a, required b]: say which keys would do, not the whole mapping.
            keys = [k for c in err.context for k in c.validator_value if k not in err.instance]
            path, value, allowed, keyword = _json_path(err.absolute_path), None, keys, "required"
            message = "needs one of these keys"
        elif best.validator == "enum":
            allowed = list(best.validator_value)
            message = "not one of the allowed values"  # the list itself is `allowed`
        elif best.validator == "required" and isinstance(best.instance, dict) and (typo := _misspelt(best)) is not None:
            # A required key missing beside a key spelt like it: the misspelt key is the problem.
            missing = best.message.split("'")[1]
            path, value, allowed, message = f"{path}.{typo}", typo, [missing], f"unknown key ({missing!r} is required)"
        elif best.validator == "additionalProperties" and isinstance(best.instance, dict):
            known = sorted((best.schema.get("properties") or {}))
            unexpected = [k for k in best.instance if k not in known]
            if len(unexpected) == 1 and known:
                # Name the key itself, so that the did-you-mean can offer the right spelling.
                path, value, allowed, message = f"{path}.{unexpected[0]}", unexpected[0], known, "unknown key"
        issues.append(
            InputIssue(
                path=path,
                message=message,
                value=value,
                allowed=allowed,
                file=display,
                entry=_entry_id(doc, list(best.absolute_path)),
                keyword=keyword or str(best.validator),
            )
        )
    # A misspelt key both additionalProperties and required name: said once, as the unknown key.
    unknown = {i.path for i in issues if i.keyword == "additionalProperties"}
    # Two branches of one schema (a type check and an if/else $ref) can give the same error twice.
    seen: set[tuple[str, str, str | None, str]] = set()
    kept = []
    for i in issues:
        key = (i.path, i.message, i.keyword, repr(i.value))
        if not (i.keyword == "required" and i.path in unknown) and key not in seen:
            seen.add(key)
            kept.append(i)
    return kept


def _misspelt(err: Any) -> str | None:
    """For a ``required`` error: the key of the mapping that looks like the missing one
    (``reson`` for ``reason``), or ``None``."""
    import difflib

    missing = err.message.split("'")[1] if err.message.count("'") >= 2 else None
    if missing is None:
        return None
    others = [k for k in err.instance if isinstance(k, str) and k not in err.validator_value]
    match = difflib.get_close_matches(missing, others, n=1, cutoff=0.75)
    return match[0] if match else None


def _choice_names(err: Any) -> list[str] | None:
    """The names an ``anyOf``/``oneOf`` of ``enum``/``pattern`` branches allows a string, patterns
    written as their literal prefix and ``*`` (``packages.*``); ``None`` for any other error."""
    import re

    if err.validator not in ("anyOf", "oneOf") or not isinstance(err.instance, str) or not err.context:
        return None
    if not all(c.validator in ("enum", "const", "pattern") for c in err.context):
        return None
    names: list[str] = []
    for c in err.context:
        if c.validator == "enum":
            names += [str(v) for v in c.validator_value]
        elif c.validator == "const":
            names.append(str(c.validator_value))
        else:
            prefix = re.match(r"\^((?:\\.|[A-Za-z0-9_-])*)", str(c.validator_value))
            literal = re.sub(r"\\(.)", r"\1", prefix.group(1)) if prefix else ""
            names.append(f"{literal}*" if literal else f"/{c.validator_value}/")
    return list(dict.fromkeys(names))


def _unknown_name(names: Sequence[str], key: bool) -> str:
    """``unknown field`` where the names are the field namespace (core/fields.py), else ``unknown key``
    / ``not one of the allowed names``."""
    from .fields import FIELDS  # only on this error path

    if set(FIELDS) <= set(names):
        return "unknown field"
    return "unknown key" if key else "not one of the allowed names"


def read_tables(directories: Sequence[Path], schemas: Schemas, root: Path | None = None) -> tuple[list[TableFile], list[InputIssue]]:
    """Read and schema-validate every ``*.yaml`` under the table directories.

    Files are read in sorted path order, so the result is independent of the
    order the file system lists them in.

    Returns:
        (valid files, issues). A file with any issue is not returned.
    """
    files: list[TableFile] = []
    issues: list[InputIssue] = []
    paths: list[tuple[Path, str]] = []
    for directory in directories:
        try:
            is_dir = directory.is_dir()
        except OSError as exc:  # a name the system refuses (too long): no directory either
            issues.append(InputIssue("$", f"cannot read the table directory: {exc.strerror or exc}", str(directory), None, str(directory), keyword="io"))
            continue
        if not is_dir:
            issues.append(InputIssue("$", "table directory does not exist", str(directory), None, str(directory), keyword="io"))
            continue
        for path in directory.rglob("*"):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                paths.append((path, directory.name))
    for path, dir_name in sorted(paths, key=lambda p: str(p[0])):
        display = str(path.relative_to(root)) if root and path.is_relative_to(root) else f"{dir_name}/{path.name}"
        try:
            raw = path.read_bytes()
        except OSError as exc:
            issues.append(InputIssue("$", f"cannot read: {exc}", None, None, display, keyword="io"))
            continue
        doc, problems = parse_yaml_bytes(display, raw)
        if problems:
            issues += problems
            continue
        file_issues = check_document(doc, display, dir_name, schemas)
        if file_issues:
            issues += file_issues
            continue
        files.append(TableFile(display, doc["kind"], doc, hashlib.sha256(raw).hexdigest()))
    return files, issues


def check_document(doc: Any, display: str, dir_name: str | None, schemas: Schemas) -> list[InputIssue]:
    """Kind and schema checks of one parsed document."""
    if not isinstance(doc, dict):
        return [InputIssue("$", "a table must be a mapping with a `kind`", type(doc).__name__ if doc is not None else "empty file", None, display, keyword="type")]
    kind = doc.get("kind")
    allowed_kinds = KIND_DIRS.get(dir_name, TABLE_KINDS) if dir_name else TABLE_KINDS
    if kind not in allowed_kinds:
        return [InputIssue("$.kind", f"unknown or misplaced table kind for directory {dir_name!r}", kind, list(allowed_kinds), display, keyword="kind")]
    return validate_document(schemas.for_kind(kind), doc, display)


# ---------------------------------------------------------------------------------------------
# Validated-table cache. Parsing YAML in pure Python and validating every document costs about
# 0.3 s, most of a CLI call. A table set whose bytes (and schemas) were validated once is stored
# as JSON keyed by the sha256 of those bytes; a later load with identical bytes reads the JSON
# (stdlib json) and skips YAML parsing and schema validation. Any change to a table or schema
# changes the key. The cache is an optimization only: when it cannot be read or written the
# full path runs, and MOE_ORACLE_NO_CACHE=1 (or true, yes, on: cache_disabled) disables it.

_CACHE_FORMAT = 3  # 3: duplicate mapping keys are refused (a set validated before is validated again)


def cache_disabled() -> bool:
    """Whether ``$MOE_ORACLE_NO_CACHE`` turns the caches off.

    ``1``, ``true``, ``yes``, ``on`` (any case, surrounding spaces ignored) do; unset, empty,
    ``0``, ``false``, ``no`` and ``off`` do not. Any other value also turns them off: the caches
    only save time, so a value that is not understood errs on the side of reading the tables.
    """
    value = os.environ.get("MOE_ORACLE_NO_CACHE")
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def cache_dir() -> Path | None:
    """``$MOE_ORACLE_CACHE_DIR``, else ``$XDG_CACHE_HOME/moe-oracle``, else ``~/.cache/moe-oracle``;
    ``None`` if disabled (:func:`cache_disabled`)."""
    if cache_disabled():
        return None
    explicit = os.environ.get("MOE_ORACLE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "moe-oracle"


def _table_paths(directories: Sequence[Path]) -> list[tuple[Path, str]]:
    paths = []
    for directory in directories:
        if directory.is_dir():
            paths += [(p, directory.name) for p in directory.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()]
    return sorted(paths, key=lambda p: str(p[0]))


def table_set_key(directories: Sequence[Path], schema_directory: Path, root: Path | None) -> str | None:
    """sha256 of every table and schema byte of a table set (with the paths it is read under), or
    ``None`` when a file cannot be read: the validated-table cache key."""
    digest = hashlib.sha256(f"moe-oracle-tables-cache-{_CACHE_FORMAT}".encode())
    try:
        for path in sorted(schema_directory.glob("*.schema.json")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
        for path, dir_name in _table_paths(directories):
            display = str(path.relative_to(root)) if root and path.is_relative_to(root) else f"{dir_name}/{path.name}"
            digest.update(display.encode())
            digest.update(path.read_bytes())
    except OSError:
        return None
    for directory in directories:
        digest.update(b"dir:" + directory.name.encode() + (b"+" if directory.is_dir() else b"-"))
    return digest.hexdigest()


def read_tables_cached(directories: Sequence[Path], schemas: Schemas | None, root: Path | None = None, schema_directory: Path | None = None) -> tuple[list[TableFile], list[InputIssue]]:
    """:func:`read_tables`, answered from the validated-table cache when the bytes are unchanged.

    ``schemas``: the validators (``None``: :func:`load_schemas`, only when the cache cannot answer).
    """
    location = cache_dir()
    key = table_set_key(directories, schema_directory or schema_dir(), root) if location is not None else None
    if location is not None and key is not None:
        try:
            # First line: sha256 of the JSON body, so a damaged entry is never trusted.
            payload = _load_json(location / f"tables-{key}.json")
            return [TableFile(f["path"], f["kind"], f["data"], f["sha256"]) for f in payload["files"]], []
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no usable cache entry: validate from the YAML below
    files, issues = read_tables(directories, schemas if schemas is not None else load_schemas(schema_directory), root)
    # Stored only if no byte changed while the files were read: an edit landing between the key
    # and the read would otherwise be kept under the old bytes' key, answering for them forever.
    if location is not None and key is not None and not issues and table_set_key(directories, schema_directory or schema_dir(), root) == key:
        payload = json.dumps({"format": _CACHE_FORMAT, "files": [{"path": f.path, "kind": f.kind, "sha256": f.sha256, "data": f.data} for f in files]})
        _store_json(location, f"tables-{key}.json", payload)
    return files, issues


def _store_json(location: Path, name: str, payload: str) -> None:
    """Write ``payload`` under ``name`` with its sha256 as the first line, atomically; a read-only
    or full cache directory only costs speed."""
    import tempfile  # writing only (a miss); a warm call does not import it (shutil, random)

    try:
        location.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=location, prefix=f".{name.split('-', 1)[0]}-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(hashlib.sha256(payload.encode("utf-8")).hexdigest() + "\n" + payload)
        os.replace(tmp, location / name)
    except OSError:
        pass


def _load_json(entry: Path) -> Any:
    """The JSON body of a cache entry; ``ValueError`` (or ``OSError``) when it is missing, damaged
    (its first line is not the body's sha256) or not JSON."""
    digest, _, body = entry.read_text(encoding="utf-8").partition("\n")
    if digest != hashlib.sha256(body.encode("utf-8")).hexdigest():
        raise ValueError("cache entry does not match its digest")
    return json.loads(body)


# ---------------------------------------------------------------------------------------------
# Generated-file cache. The generated engine facts (engine_facts/*.yaml, ~50 KB each) are read on
# the CLI's hot path (a checkpoint's quantization is checked against its release's methods on
# every select); parsing one costs ~13 ms and importing yaml ~12 ms more. A file's document is
# stored as JSON under the sha256 of the text parsed.

_GENERATED_FORMAT = 1


def read_generated(path: Path) -> Any:
    """:func:`safe_load_generated` of the text of ``path`` (a generated ``engine_facts/`` file),
    answered from the generated-file cache when the same text was parsed before.

    The key is the sha256 of the text that is parsed on a miss, so an entry always holds the
    document of the text it is found by (an edit while the file is read is cached under the
    edited text's key, never under the old one); its first line is the sha256 of its body, so a
    damaged entry is never trusted. A document JSON does not carry unchanged (a date, a set, a
    key that is not a string) is not cached. :func:`cache_disabled` turns the cache off, and a
    cache that cannot be read or written only costs speed.

    Raises:
        OSError: ``path`` cannot be read (``FileNotFoundError``: it does not exist).
        UnicodeDecodeError: not UTF-8.
        yaml.YAMLError: as :func:`safe_load_generated`.
    """
    text = path.read_text(encoding="utf-8")
    location = cache_dir()
    if location is None:
        return safe_load_generated(text)
    key = hashlib.sha256(f"moe-oracle-generated-{_GENERATED_FORMAT}\n".encode() + text.encode("utf-8")).hexdigest()
    try:
        return _load_json(location / f"generated-{key}.json")
    except (OSError, ValueError):
        pass  # no usable entry: parse the YAML below
    doc = safe_load_generated(text)
    try:
        payload = json.dumps(doc)
        faithful = json.loads(payload) == doc
    except (TypeError, ValueError):  # a set or a date; NaN
        faithful = False
    if faithful:
        _store_json(location, f"generated-{key}.json", payload)
    return doc
