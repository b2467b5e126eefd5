"""Malformed and hostile inputs: edits of parsed documents, edits of their bytes, and the checks
that a loader's error is the project's own, well-formed, typed error.

Tree edits (on a parsed YAML/JSON document): a wrong type, a missing key, an unknown key, an
unknown enum value, a huge or non-finite number, a duplicated list item, deep nesting, a wrapped
value. Byte edits (on the serialized text): truncation, inserted or flipped bytes, binary
garbage, an empty file, a BOM, NUL bytes, non-UTF-8 and UTF-16 text, YAML tags that would
construct objects, malformed scalars (huge integers, impossible dates), alias bombs, recursive
anchors, deep nesting, tabs, duplicate keys, a file over the size limit.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import yaml
from hypothesis import strategies as st

from moe_oracle.core.errors import InputIssue, _IssuesError
from moe_oracle.core.tables import MAX_TABLE_BYTES

__all__ = ["SNIPPETS", "Bad", "assert_typed_error", "byte_edits", "node_paths", "serialize", "tree_edits", "wrong_values"]


@dataclass(frozen=True)
class Bad:
    """One hostile input: what was done, and the bytes to write."""

    description: str
    raw: bytes

    def __repr__(self) -> str:
        # Failure reports print this: the description says what was done, the bytes are too long.
        head = self.raw[:120]
        return f"Bad({self.description!r}, {len(self.raw)} bytes: {head!r}{'...' if len(self.raw) > 120 else ''})"


# ------------------------------------------------------------------------------ tree edits


def node_paths(doc: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    """Every path (keys and indices) into a parsed document, the root included."""
    out = [prefix]
    if depth > 12:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += node_paths(v, prefix + (k,), depth + 1)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += node_paths(v, prefix + (i,), depth + 1)
    return out


def _get(doc: Any, path: Sequence[Any]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


_JUNK_TEXT = st.one_of(
    st.sampled_from(("", " ", "slu", "monolitic", "CUDA", "sm90", "fp8-block", "None", "null", "yes", "∞", "日本", "a" * 300, "../../etc/passwd", "$(reboot)", "%s%n")),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=16),
)


def wrong_values(json_only: bool = False) -> st.SearchStrategy[Any]:
    """Values of the wrong type or out of every range (``json_only``: no YAML-only types)."""
    numbers = st.one_of(
        st.sampled_from((0, -1, 1, 2**31, 2**63, -(2**63), 10**30, 10**300, 2**40 + 1, 1.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan"))),
        st.integers(),
        st.floats(),
    )
    options = [
        st.none(),
        st.booleans(),
        numbers,
        _JUNK_TEXT,
        st.lists(st.one_of(st.integers(), _JUNK_TEXT, st.none()), max_size=3),
        st.dictionaries(_JUNK_TEXT, st.one_of(st.integers(), _JUNK_TEXT), max_size=3),
        st.integers(30, 120).map(_deep),
    ]
    if not json_only:
        options.append(st.sampled_from((datetime.date(2027, 6, 30), datetime.datetime(2001, 12, 14, 21, 59), b"\x00\xff")))
    return st.one_of(*options)


@st.composite
def tree_edits(draw: st.DrawFn, doc: Any, *, json_only: bool = False, focus: Iterable[str] = ()) -> tuple[str, Any]:
    """One structural edit of a deep copy of ``doc``; ``focus`` names keys worth setting to wrong values."""
    doc = json.loads(json.dumps(doc)) if json_only else yaml.safe_load(yaml.safe_dump(doc))
    paths = node_paths(doc)
    containers = [p for p in paths if isinstance(_get(doc, p), (dict, list))]
    op = draw(st.sampled_from(("wrong_type", "delete", "unknown_key", "unknown_enum", "huge", "duplicate", "wrap", "focus" if focus else "wrong_type")))
    if op == "focus":
        key = draw(st.sampled_from(sorted(focus)))
        target = draw(st.sampled_from([p for p in containers if isinstance(_get(doc, p), dict)]))
        value = draw(wrong_values(json_only))
        _get(doc, target)[key] = value
        return f"{'.'.join(map(str, target + (key,)))} = {value!r:.80}", doc
    path = draw(st.sampled_from(paths))
    where = ".".join(map(str, path)) or "$"
    if op == "wrong_type":
        value = draw(wrong_values(json_only))
        if not path:
            return f"document = {value!r:.80}", value
        _get(doc, path[:-1])[path[-1]] = value
        return f"{where} = {value!r:.80}", doc
    if op == "delete" and path:
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
        return f"delete {where}", doc
    if op == "unknown_key":
        target = draw(st.sampled_from([p for p in containers if isinstance(_get(doc, p), dict)] or [()]))
        node = _get(doc, target)
        if isinstance(node, dict):
            key = draw(_JUNK_TEXT)
            node[key] = draw(wrong_values(json_only))
            return f"{'.'.join(map(str, target)) or '$'} += unknown key {key!r}", doc
    if op == "unknown_enum":
        strings = [p for p in paths if p and isinstance(_get(doc, p), str)]
        if strings:
            target = draw(st.sampled_from(strings))
            old = _get(doc, target)
            new = draw(st.sampled_from((old + "x", old.upper(), old[:-1], old.replace("_", "-"), "zz_" + old, " " + old)))
            _get(doc, target[:-1])[target[-1]] = new
            return f"{'.'.join(map(str, target))}: {old!r} -> {new!r}", doc
    if op == "huge":
        numbers = [p for p in paths if p and isinstance(_get(doc, p), (int, float)) and not isinstance(_get(doc, p), bool)]
        if numbers:
            target = draw(st.sampled_from(numbers))
            # (integers past Python's 4300-digit str limit are byte edits: they cannot be serialized)
            new = draw(st.sampled_from((10**30, -(10**30), 2**64, 10**4000 // 10**3700, 0, -1, float("inf"), float("nan"))))
            _get(doc, target[:-1])[target[-1]] = new
            return f"{'.'.join(map(str, target))} = {new!r:.60}", doc
    if op == "duplicate":
        lists = [p for p in containers if isinstance(_get(doc, p), list) and _get(doc, p)]
        if lists:
            target = draw(st.sampled_from(lists))
            node = _get(doc, target)
            node.append(json.loads(json.dumps(node[0], default=str)))
            return f"{'.'.join(map(str, target)) or '$'}: first item duplicated", doc
    if path:
        parent = _get(doc, path[:-1])
        parent[path[-1]] = draw(st.sampled_from(([parent[path[-1]]], {"value": parent[path[-1]]})))
        return f"wrap {where}", doc
    return "document wrapped in a list", [doc]


def serialize(doc: Any, *, as_json: bool) -> bytes:
    """Bytes of an edited document (JSON keeps NaN/Infinity as Python writes them)."""
    if as_json:
        return json.dumps(doc, default=str).encode("utf-8")
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode("utf-8")


# ------------------------------------------------------------------------------ byte edits

_BOMB = b"".join(b"l%d: &l%d [%s]\n" % (i, i, b",".join([b"*l%d" % (i - 1)] * 9) if i else b"x,x,x,x,x,x,x,x,x") for i in range(8))
# The same bomb under a MoE layer's own keys, where the schema walks into the values (the top-level
# one above is refused as unknown keys before anything reads them).
_LAYER_BOMB = (
    b"model:\n  num_experts: 8\n  top_k: 2\n  hidden_size: 4096\n  intermediate_size: 14336\n"
    + b"".join(b"  %s: &l%d [%s]\n" % (key, i, b",".join([b"*l%d" % (i - 1)] * 9) if i else b"1,1,1,1,1,1,1,1,1")
               for i, key in enumerate((b"act_order", b"activation", b"architecture", b"has_bias", b"in_dtype", b"model_type", b"quant", b"quant_method", b"routing_method")))
    + b"device: {gpu: H200}\n"
)
SNIPPETS = (
    b"!!python/object/apply:os.system ['echo pwned']",
    b"!!python/name:os.system",
    b"!!python/object/new:builtins.list [[1]]",
    b"!!binary aGVsbG8=",
    b"!!set {a, b}",
    b"!!omap [a: 1]",
    b"!!timestamp not-a-date",
    b"!!int not-a-number",
    b"!!float nope",
    b"!custom tag",
    b"2001-13-45",
    b"2001-12-14t21:59:43.10-99:99",
    b"9" * 5000,
    b"1" + b"0" * 4400 + b":00",
    b".nan",
    b"-.inf",
    b"&a [*a]",
    b"*undefined_alias",
    b"{? [a, b]: c}",
    b"[" * 2000 + b"]" * 2000,
    b"{a: 1, a: 2}",
    b"<<: 5",
    b"\t- tab",
    b"\"\\x\"",
    b"'unterminated",
    b"%YAML 9.9\n---\n",
    b"---\n---\n",
)


@st.composite
def byte_edits(draw: st.DrawFn, raw: bytes, *, json_text: bool = False) -> Bad:
    """One byte-level edit of ``raw`` (a serialized document)."""
    op = draw(st.sampled_from(("truncate", "insert", "flip", "garbage", "empty", "bom", "nul", "latin1", "utf16", "snippet", "replace_value", "bomb", "layer_bomb", "deep", "huge", "whitespace")))
    n = len(raw)
    if op == "truncate":
        at = draw(st.integers(0, max(n - 1, 0)))
        return Bad(f"truncated at byte {at}", raw[:at])
    if op == "insert":
        at = draw(st.integers(0, n))
        blob = draw(st.binary(min_size=1, max_size=16))
        return Bad(f"{blob!r} inserted at byte {at}", raw[:at] + blob + raw[at:])
    if op == "flip" and n:
        at = draw(st.integers(0, n - 1))
        return Bad(f"byte {at} flipped", raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1 :])
    if op == "garbage":
        blob = draw(st.binary(min_size=1, max_size=512))
        return Bad(f"binary garbage ({len(blob)} bytes)", blob)
    if op == "bom":
        return Bad("UTF-8 BOM prepended", b"\xef\xbb\xbf" + raw)
    if op == "nul":
        at = draw(st.integers(0, n))
        return Bad(f"NUL at byte {at}", raw[:at] + b"\x00" + raw[at:])
    if op == "latin1":
        at = draw(st.integers(0, n))
        return Bad(f"non-UTF-8 byte at {at}", raw[:at] + b"\xe9\xff" + raw[at:])
    if op == "utf16":
        return Bad("UTF-16 encoded", raw.decode("utf-8", "replace").encode("utf-16"))
    if op == "snippet" or op == "replace_value":
        snippet = draw(st.sampled_from(SNIPPETS))
        if op == "snippet":
            at = draw(st.integers(0, n))
            return Bad(f"{snippet[:40]!r} inserted at byte {at}", raw[:at] + snippet + raw[at:])
        # Replace the value after one "key:" (YAML) or '"key":' (JSON) with the snippet.
        colons = [i for i in range(n) if raw[i : i + 2] in (b": ", b":\n")]
        if colons:
            at = draw(st.sampled_from(colons)) + 2
            end = raw.find(b"\n", at)
            end = n if end < 0 else end
            if json_text:
                end = min([e for e in (raw.find(b",", at), raw.find(b"}", at), end) if e >= 0] or [n])
            return Bad(f"value at byte {at} replaced by {snippet[:40]!r}", raw[:at] + snippet + raw[end:])
        return Bad(f"{snippet[:40]!r} as the whole document", snippet)
    if op == "bomb":
        return Bad("alias bomb (9**8 nodes) prepended", _BOMB + raw)
    if op == "layer_bomb":
        return Bad("alias bomb (9**9 values) under a layer's keys", _LAYER_BOMB)
    if op == "deep":
        depth = draw(st.sampled_from((200, 990, 5000, 100_000)))
        opener, closer = (b"[", b"]") if draw(st.booleans()) else (b"{a: ", b"}") if not json_text else (b'{"a": ', b"}")
        return Bad(f"nesting depth {depth}", opener * depth + b"1" + closer * depth)
    if op == "huge":
        return Bad("over the size limit", raw + b"\n#" + b"x" * (MAX_TABLE_BYTES + 1))
    if op == "whitespace":
        return Bad("tabs for indentation", raw.replace(b"  ", b"\t"))
    return Bad("empty file", b"")


# ------------------------------------------------------------------------------ the verdict


def assert_typed_error(exc: BaseException, kind: type[_IssuesError], *, files: Iterable[str] | None = None) -> None:
    """``exc`` is ``kind`` and each issue names where (file, JSON path) and what, and renders.

    ``files``: the file names an issue may name; an issue without a file must concern the
    whole input (path ``$``) or a command-line flag (``--...``).
    """
    assert isinstance(exc, kind), f"expected {kind.__name__}, got {type(exc).__name__}: {exc}"
    assert exc.issues, "an error without issues"
    allowed_files = set(files) if files is not None else None
    for issue in exc.issues:
        assert isinstance(issue, InputIssue)
        assert isinstance(issue.path, str) and issue.path.startswith(("$", "--")), issue
        assert isinstance(issue.message, str) and issue.message, issue
        if issue.file is None:
            assert issue.path == "$" or issue.path.startswith("--"), f"issue names no file: {issue.format()}"
        elif allowed_files is not None:
            assert issue.file in allowed_files, f"issue names {issue.file!r}, expected one of {sorted(allowed_files)}"
        issue.format()
        json.dumps(issue.to_dict(), default=str)
    str(exc)
    json.dumps(exc.to_dict(), default=str)
