"""A ``vllm serve`` command line as a release's own argparse reads it: the launcher stripped, the
words rewritten as vLLM's ``FlexibleArgumentParser.parse_args`` rewrites them (``--model`` moved,
``--config`` files spliced in, dotted JSON flags merged, underscores to dashes), the release's
parser built from its facts (abbreviations, ``-h``), and every occurrence of every value-taking
flag converted and checked as argparse would. What it means for MoE selection is
:mod:`moe_oracle.inputs.serve`'s job.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from . import argtypes
from ..core.errors import ConfigError, InputIssue
from .paths import read_user_file, shown_path, user_path
from .release_facts import engine_facts
from .serve_launchers import launcher_issue
from .serve_words import FOREIGN_FLAGS, command_words, other_engine

_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


_DASHES = re.compile(r"(?<=--)[^.=]*")

__all__ = ["API_SERVER", "ConfigSplice", "EVERY_OCCURRENCE", "FOREIGN_FLAGS", "LAST_READ", "NONE_WORDS", "Refused", "VLLM_SERVE", "command_words", "config_file_args", "merge_dotted", "release_parser", "strip_launcher", "value_issues", "value_rules", "vllm_rewrite"]


class Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print and exit
        raise Refused(message)


class _Flag(argparse.Action):
    """A boolean vLLM flag: True, or False for its ``--no-``/``--disable-`` spellings."""

    def __init__(self, option_strings: Sequence[str], dest: str, negative: Sequence[str] = (), **kwargs: Any) -> None:
        self.negative = frozenset(negative)
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, option_string not in self.negative)


# Read flags whose every occurrence is checked below with their own messages, as argparse
# converts and checks each one (type, then choices) and vLLM's ``type`` functions parse JSON per
# occurrence; the last one wins. Every other value-taking flag is checked by value_issues.
EVERY_OCCURRENCE = frozenset({"dtype", "all2all_backend", "moe_backend", "kv_cache_dtype", "kernel_config", "speculative_config", "spec_method", "spec_tokens"})


# Read flags whose last occurrence parse_serve checks as strictly as argparse or more (with its
# own message: -tp/-dp/-pcp "expected an integer" and >= 1; the token count; --hf-overrides a JSON
# object; --eplb-config a JSON object); value_issues checks their earlier occurrences.
LAST_READ = frozenset({"tensor_parallel_size", "data_parallel_size", "prefill_context_parallel_size", "max_num_batched_tokens", "hf_overrides", "eplb_config"})


# vLLM's optional_type (vllm/engine/arg_utils.py): these words parse to None, i.e. not given.
NONE_WORDS = argtypes.NONE_WORDS


_NONE_HINT = ", or '' / None (optional_type: not given)"


class _Help(argparse.Action):
    """``-h``/``--help`` (argparse's ``add_help`` on the ``vllm serve`` parser): vLLM prints the
    help and exits at this flag, so no server starts and there is nothing to answer for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        raise Refused(f"{option_string} prints vllm serve's help and exits: no server starts")


@lru_cache(maxsize=8)
def release_parser(version: str) -> tuple[_Parser, frozenset[str]]:
    """vLLM ``version``'s ``vllm serve`` parser rebuilt from its facts file, and its option strings.

    Like the release's own (``subparsers.add_parser`` in ``ServeSubcommand.subparser_init``,
    vllm/entrypoints/cli/serve.py, and the API server's ``FlexibleArgumentParser``, vLLM
    0.29.0-0.33.0), it takes argparse's default ``allow_abbrev=True``: an unambiguous prefix
    of a flag is that flag (``--moe-back triton`` sets ``moe_backend``), and an ambiguous one
    is refused ("ambiguous option: --enable-e could match ..."). The option strings are
    registered in the release's order (``option_strings`` in the facts), so argparse lists the
    candidates as vLLM's does; ``-h/--help`` stop the line (:class:`_Help`).

    Raises:
        ValueError: the facts' ``option_strings`` and its flags disagree (a damaged facts file).
    """
    facts = engine_facts(version)
    parser = _Parser(prog="vllm serve", add_help=False, allow_abbrev=True)
    parser.add_argument("model_tag", nargs="?", default=argparse.SUPPRESS)
    order = {string: i for i, string in enumerate(facts["option_strings"])}
    flags = {}
    for flag in facts["serve_flags"]:
        strings = sorted(dict.fromkeys([*flag["options"], *flag.get("negative", ())]), key=lambda o: order.get(o, len(order)))
        flags[strings[0]] = (flag, strings)
    added = set()
    for string in facts["option_strings"]:
        if string in added:
            continue
        if string not in flags:  # argparse's -h/--help: every string of that action, in order
            strings = [o for o in facts["option_strings"] if o in ("-h", "--help")]
            parser.add_argument(*strings, action=_Help)
            added.update(strings)
            continue
        flag, strings = flags[string]
        added.update(strings)
        kind = flag["value"]
        if kind == "none":
            parser.add_argument(*strings, dest=flag["dest"], action=_Flag, negative=flag.get("negative", ()), default=argparse.SUPPRESS)
        else:
            # Every occurrence is kept (argparse converts and checks each one; the last wins).
            nargs = {"one": None, "optional": "?", "list": "+"}[kind]
            parser.add_argument(*strings, dest=flag["dest"], nargs=nargs, action="append", default=argparse.SUPPRESS)
    if list(parser._option_string_actions) != list(facts["option_strings"]):
        raise ValueError(f"engine_facts/vllm-{version}.yaml: its option_strings and its serve_flags disagree (regenerate it with tools/vllm_cli_facts.py)")
    return parser, frozenset(parser._option_string_actions)


@dataclass(frozen=True)
class _ValueRule:
    """How argparse converts and checks one flag's values (from the facts file): ``kind`` of
    :data:`moe_oracle.inputs.argtypes.KINDS`, ``optional`` (vLLM's ``optional_type``), ``choices``
    (converted values; empty: any), ``none_refused`` (``""``/``"None"`` read as None, which the
    choices do not hold)."""

    flag: str
    kind: str
    optional: bool
    choices: tuple[Any, ...]
    none_refused: bool


@lru_cache(maxsize=8)
def value_rules(version: str) -> Mapping[str, _ValueRule]:
    """dest -> :class:`_ValueRule` for the value-taking flags whose every occurrence the generic
    check converts (not :data:`EVERY_OCCURRENCE`: those are read below with their own messages)."""
    rules = {}
    for flag in engine_facts(version)["serve_flags"]:
        if flag["value"] == "none" or flag["dest"] in EVERY_OCCURRENCE:
            continue
        kind = flag.get("type", "other")
        choices = tuple(flag.get("choices") or ()) if kind not in argtypes.UNCHECKED else ()
        rules[flag["dest"]] = _ValueRule(flag["options"][0], kind, bool(flag.get("optional")), choices, bool(flag.get("none_not_a_choice")))
    return MappingProxyType(rules)


def value_issues(given: Mapping[str, Any], version: str) -> list[InputIssue]:
    """Every occurrence of every value-taking flag that vLLM ``version``'s argparse refuses for
    its ``type`` or ``choices`` (empty: none), in command-line order per flag.

    ``given`` holds each flag's occurrences (lists; a ``nargs="+"`` occurrence is itself a list,
    each of its words converted on its own). The last occurrence of a flag in :data:`LAST_READ`
    is left to its reader (same refusal or stricter, with the existing message).
    """
    rules = value_rules(version)
    issues = []
    for dest, occurrences in given.items():
        rule = rules.get(dest)
        if rule is None or not isinstance(occurrences, list):
            continue
        checked = occurrences[:-1] if dest in LAST_READ else occurrences
        words = [w for occ in checked for w in (occ if isinstance(occ, list) else [occ]) if isinstance(w, str)]
        for word in words:
            try:
                value = argtypes.convert(rule.kind, word, optional=rule.optional)
            except ValueError:
                issues.append(InputIssue(f"--serve {rule.flag}", f"vLLM {version} refuses the command line (argparse type {rule.kind}: expected {argtypes.allowed_text(rule.kind)}{_NONE_HINT if rule.optional else ''}; every occurrence of a repeated flag is converted, not only the last)", word, None, keyword="type"))
                continue
            if value is None:
                if rule.none_refused:
                    issues.append(InputIssue(f"--serve {rule.flag}", f"vLLM {version} refuses this value (argparse: invalid choice: None; its optional_type reads '' and 'None' as None, which the choices of this release do not hold)", word, list(rule.choices), keyword="choices"))
            elif rule.choices and value not in rule.choices:
                read = f" (read as {value!r})" if value != word else ""
                issues.append(InputIssue(f"--serve {rule.flag}", f"vLLM {version} refuses this value{read} (argparse: invalid choice; every occurrence of a repeated flag is checked, not only the last)", word, list(rule.choices), keyword="choices"))
    return issues


VLLM_SERVE = "vllm serve"


API_SERVER = "python -m vllm.entrypoints.openai.api_server"


# The ``vllm`` parser's own option strings (vllm/entrypoints/cli/main.py: argparse's -h/--help and
# -v/--version): ``load_config_file`` looks a false boolean's ``--no-KEY`` up among these under
# ``vllm serve``.
_VLLM_PARSER_OPTIONS = frozenset({"-h", "--help", "-v", "--version"})


def strip_launcher(words: list[str], command: str) -> tuple[list[str], list[tuple[str, str]], str]:
    """Drop ``ENV=... vllm serve`` (or ``python -m vllm.entrypoints.openai.api_server``); return
    args, env and the entry point (:data:`VLLM_SERVE` or :data:`API_SERVER`; words without a
    launcher are read as ``vllm serve``'s)."""
    env = []
    i = 0
    while i < len(words) and _ENV_WORD.match(words[i]):
        name, value = words[i].split("=", 1)
        env.append((name, value))
        i += 1
    if i < len(words) and words[i] == "env":
        i += 1
        while i < len(words) and _ENV_WORD.match(words[i]):
            name, value = words[i].split("=", 1)
            env.append((name, value))
            i += 1
    rest = words[i:]
    engine = other_engine(rest)
    if engine is not None:
        raise ConfigError([InputIssue("--serve", f"this is {'an' if engine == 'SGLang' else 'a'} {engine} command line; moe-oracle answers for vLLM (give the `vllm serve MODEL ...` line of the same deployment)", command, ["vllm serve MODEL [flags]"])], headline="bad --serve")
    wrapped = launcher_issue(rest, command, [f"{name}={value}" for name, value in env])
    if wrapped is not None:
        raise ConfigError([wrapped], headline="bad --serve")
    if rest and Path(rest[0]).name == "vllm":
        if len(rest) < 2 or rest[1] != "serve":
            raise ConfigError([InputIssue("--serve", "expected a `vllm serve ...` command line", command, ["vllm serve MODEL [flags]"])], headline="bad --serve")
        return rest[2:], env, VLLM_SERVE
    if rest and re.fullmatch(r"python[0-9.]*", Path(rest[0]).name) and len(rest) >= 3 and rest[1] == "-m":
        if rest[2] in ("vllm.entrypoints.openai.api_server",):
            return rest[3:], env, API_SERVER
        if rest[2] == "vllm.entrypoints.cli.main" and len(rest) >= 4 and rest[3] == "serve":
            return rest[4:], env, VLLM_SERVE
        raise ConfigError([InputIssue("--serve", "expected `vllm serve` or `python -m vllm.entrypoints.openai.api_server`", command, None)], headline="bad --serve")
    return rest, env, VLLM_SERVE


@dataclass(frozen=True)
class ConfigSplice:
    """A ``--config`` file as :func:`vllm_rewrite` spliced it in: the file as messages show it,
    the words made of it and the command line's other words (both with underscores in flag
    names turned to dashes, as argparse then reads them)."""

    file: str
    file_words: tuple[str, ...]
    cli_words: tuple[str, ...]


def vllm_rewrite(args: list[str], base: Path | None, entry: str, options: frozenset[str]) -> tuple[list[str], list[str], ConfigSplice | None]:
    """The argument rewriting of vLLM 0.29.0-0.33.0 ``FlexibleArgumentParser.parse_args`` (see
    module doc) as ``entry`` runs it: the words argparse then parses, notes on what vLLM
    keeps of repeated input (a ``--config`` file's repeated keys, :func:`config_file_args`; the
    dotted keys given more than once, :func:`merge_dotted`), and the ``--config`` file's words
    apart from the line's (``None``: no file). ``options``: the serve parser's option strings.

    Raises:
        ConfigError: ``--model`` or ``--config`` without a value; more than one ``--config``
            (vLLM asserts ``args.count("--config") <= 1``); under ``vllm serve``, a ``--config``
            with the model neither first nor in the file (vLLM: "No model specified!"); a
            config file vLLM cannot load (:func:`config_file_args`); a dotted flag vLLM stops on.
    """
    if entry == VLLM_SERVE:  # only when args[0] == "serve"
        for i, arg in enumerate(args):
            if re.match(r"^--model(=.+|$)", arg):
                if arg == "--model":
                    if i + 1 >= len(args):
                        raise ConfigError([InputIssue("--serve --model", "expects a model (vLLM stops with an IndexError)", None, None)], headline="bad --serve")
                    tag, rest = args[i + 1], i + 2
                else:
                    tag, rest = arg.removeprefix("--model="), i + 1
                args = [tag, *args[:i], *args[rest:]]
                break
    notes: list[str] = []
    splice = None
    if "--config" in args:
        # FlexibleArgumentParser._pull_args_from_config: only the word --config itself
        # (--config=FILE is argparse's --config, which loads nothing).
        if args.count("--config") > 1:
            raise ConfigError([InputIssue("--serve --config", f"{entry} refuses more than one --config (AssertionError: More than one config file specified!, FlexibleArgumentParser._pull_args_from_config)", args.count("--config"), 1)], headline="bad --serve")
        idx = args.index("--config")
        if idx + 1 >= len(args):
            raise ConfigError([InputIssue("--serve --config", "expects a YAML file (vLLM: No config file specified!)", None, None)], headline="bad --serve")
        config_args, repeated = config_file_args(args[idx + 1], base, _VLLM_PARSER_OPTIONS if entry == VLLM_SERVE else options)
        if repeated:
            notes.append(f"--config {args[idx + 1]}: keys given more than once, the later value kept (vLLM reads the file with yaml.safe_load): {', '.join(repeated)}")
        model_in_cli = bool(args) and not args[0].startswith("-")
        if entry == VLLM_SERVE and not model_in_cli and "--model" not in config_args:
            raise ConfigError([InputIssue("--serve --config", "vllm serve refuses a --config line whose model is neither the first word after serve nor in the file (ValueError: No model specified!, FlexibleArgumentParser._pull_args_from_config)", " ".join(args), ["vllm serve MODEL --config FILE", "model: MODEL in FILE"])], headline="bad --serve")
        splice = ConfigSplice(shown_path(args[idx + 1], user_path(args[idx + 1], base)), tuple(_dashed(w) for w in config_args), tuple(_dashed(w) for w in args[:idx] + args[idx + 2 :]))
        args = (args[:1] + config_args + args[1:idx] + args[idx + 2 :]) if model_in_cli else (config_args + args[:idx] + args[idx + 2 :])
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--help="):  # vLLM's help search (--help=KEYWORD): the help, as --help
            out.append("--help")
        elif arg.startswith("--"):
            out.append(_dashed(arg))
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    out, duplicates = merge_dotted(out)
    if duplicates:
        notes.append(f"dotted keys given more than once, the later value kept (vLLM warns \"Found duplicate keys\"): {', '.join(duplicates)}")
    return out, notes, splice


def _dashed(word: str) -> str:
    """A ``--flag_name[=value]`` word with the flag name's underscores as dashes (up to a dot:
    ``--x_y.a_b`` -> ``--x-y.a_b``); other words as they are."""
    if not word.startswith("--"):
        return word
    key, eq, value = word.partition("=")
    return _DASHES.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + eq + value


def merge_dotted(args: list[str]) -> tuple[list[str], list[str]]:
    """``--x.a 1 --x.b.c 2`` -> ``--x '{"a": 1, "b": {"c": 2}}'``, appended after the other words,
    and the dotted keys given more than once (vLLM's warning "Found duplicate keys").

    vLLM 0.29.0-0.33.0 ``FlexibleArgumentParser.parse_args`` (vllm/utils/argparse_utils.py, the
    same in every modelled release): a word starting with ``-`` with a ``.`` in its name (before
    any ``=``) is a dotted key, its value the text after ``=`` or the next word; ``key+`` makes
    the value the list of its comma-separated parts; the value is read by :func:`_dotted_value`;
    the values of one head (as spelled: ``--hf-over.a`` and ``--hf-overrides.b`` are two heads,
    which argparse then resolves to one flag, the last winning) are merged by
    :func:`_recursive_dict_update`; each head is appended as one JSON word at the end, so a dotted
    value wins over the same flag given whole, wherever the two stand.

    >>> merge_dotted(["m", "--x.a", "1", "--x.a.b=2", "--x.l+", "p,q", "-tp", "2"])
    (['m', '-tp', '2', '--x', '{"a": {"b": 2}, "l": ["p", "q"]}'], ['--x.a'])

    Raises:
        ConfigError: a dotted key without a value (vLLM stops with an IndexError), or a value
            vLLM stops on (:func:`_dotted_value`).
    """
    merged: dict[str, dict[str, Any]] = {}
    duplicates: list[str] = []
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg.startswith("-") and "." in arg.split("=", 1)[0]:
            if "=" in arg:
                key, value_str = arg.split("=", 1)
            elif i + 1 < len(args):
                key, value_str, skip = arg, args[i + 1], True
            else:
                raise ConfigError([InputIssue(f"--serve {arg}", "a dotted flag needs a value (vLLM stops with an IndexError: FlexibleArgumentParser.parse_args reads the next word)", None, None)], headline="bad --serve")
            if key.endswith("+"):
                key, value_str = key[:-1], json.dumps(value_str.split(","))
            head, *keys = key.split(".")
            nested: Any = _dotted_value(key, value_str)
            for k in reversed(keys):
                nested = {k: nested}
            duplicates += [f"{head}.{d}" for d in sorted(_recursive_dict_update(merged.setdefault(head, {}), nested)) if f"{head}.{d}" not in duplicates]
            continue
        out.append(arg)
    for head, value in merged.items():
        out += [head, json.dumps(value)]
    return out, duplicates


def _recursive_dict_update(original: dict[str, Any], update: Mapping[str, Any]) -> set[str]:
    """vLLM's ``recursive_dict_update`` (vLLM 0.29.0-0.33.0 vllm/utils/argparse_utils.py, inside
    ``FlexibleArgumentParser.parse_args``): ``update`` merged into ``original`` in place, two dicts
    merged key by key, two lists concatenated, anything else overwritten; returns the keys that
    were overwritten (dotted below the top level).

    >>> d = {"a": 1, "t": {"x": 1}, "l": [1]}
    >>> sorted(_recursive_dict_update(d, {"a": {"b": 2}, "t": {"y": 2}, "l": [2]})), d
    (['a'], {'a': {'b': 2}, 't': {'x': 1, 'y': 2}, 'l': [1, 2]})
    """
    duplicates = set()
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            duplicates |= {f"{k}.{d}" for d in _recursive_dict_update(original[k], v)}
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            if k in original:
                duplicates.add(k)
            original[k] = v
    return duplicates


def _dotted_value(key: str, text: str) -> Any:
    """A dotted flag's value as vLLM 0.29.0-0.33.0 reads it (``FlexibleArgumentParser.parse_args``,
    vllm/utils/argparse_utils.py, the same in every modelled release): ``json.loads``; where that
    raises ``JSONDecodeError``, vLLM's ``human_readable_int`` (:func:`moe_oracle.inputs.argtypes.human_readable_int`:
    ``1K`` = 1024, ``1k`` = 1000, ``08`` = 8, ``1_000`` = 1000); where that raises ``ValueError`` or
    ``ArgumentTypeError`` (``2.5K``), the text as given.

    >>> [_dotted_value("--x.a", v) for v in ("96", '{"b": 1}', "1K", "1k", "08", "2.5K", "abc")]
    [96, {'b': 1}, 1024, 1000, 8, '2.5K', 'abc']

    Raises:
        ConfigError: what escapes both tries and stops vLLM with a traceback: ``RecursionError``
            from ``json.loads`` (nesting too deep), ``OverflowError`` from ``human_readable_int``
            (a ``k/m/g/t`` number too large for a float).
    """
    try:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
        try:
            return argtypes.human_readable_int(text)
        except ValueError:
            return text
    except (RecursionError, OverflowError) as exc:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ConfigError([InputIssue(f"--serve {key}", f"vLLM stops with a traceback on this value ({type(exc).__name__} escapes FlexibleArgumentParser.parse_args, which tries json.loads, then human_readable_int, then keeps the text)", shown, None)], headline="bad --serve") from None


MAX_SERVE_CONFIG_BYTES = 1 << 16
MAX_SERVE_CONFIG_DEPTH = 32
MAX_SERVE_CONFIG_NODES = 100_000
"""A serve line's ``--config`` file: at most this many bytes, and this many YAML nodes once its
aliases are expanded (vLLM turns every list item into a word of the command line, so an alias bomb
of a few hundred bytes is millions of words; real serve configs have a few dozen keys), and at most
this deep in flow brackets (PyYAML's pure-Python scanner is quadratic in open flow collections:
5,000 nested ``[`` take seconds before its recursion limit)."""


def _check_expanded_size(root: Any, path: str) -> None:
    """Refuse a composed YAML graph whose alias expansion exceeds :data:`MAX_SERVE_CONFIG_NODES`
    nodes, or that refers to itself (a recursive anchor), before it is constructed or walked.

    Each node's expanded size is computed once (aliases share the node object), so the check is
    linear in the file, whatever the expansion.

    Raises:
        ConfigError: too large once expanded, or recursive.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ConfigError([InputIssue("--serve --config", "a YAML anchor refers to itself (a recursive alias): vLLM's yaml.safe_load builds a cyclic value no flag can take", path, None)], headline="bad --serve")
        open_nodes.add(key)
        total = 1
        children = node.value if isinstance(node.value, list) else []
        for child in children:
            parts = child if isinstance(child, tuple) else (child,)
            for part in parts:
                total += size(part)
                if total > MAX_SERVE_CONFIG_NODES:
                    raise ConfigError([InputIssue("--serve --config", f"expands to more than {MAX_SERVE_CONFIG_NODES} YAML values through its aliases (an alias bomb; vLLM would make a command-line word of each list item)", path, {"maxNodes": MAX_SERVE_CONFIG_NODES})], headline="bad --serve")
        open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root)


def config_file_args(path_text: str, base: Path | None, loader_options: frozenset[str]) -> tuple[list[str], list[str]]:
    """The words vLLM 0.29.0-0.33.0 ``FlexibleArgumentParser.load_config_file``
    (vllm/utils/argparse_utils.py) makes of a ``--config`` YAML file, and the keys the file gives
    more than once. The file is vLLM's input, read as vLLM reads it: ``yaml.safe_load``, which
    keeps a repeated key's last value (moe-oracle's own files refuse a repeated key; here it is
    noted). Then per key ``--KEY VALUE``; a list is its items (none:
    dropped); a dict is its JSON; ``true`` is ``--KEY``; ``false`` is ``--no-KEY`` when the parser
    that loads the file has that exact string (``loader_options``), else dropped. ``vllm serve``
    loads it on the ``vllm`` parser (:data:`_VLLM_PARSER_OPTIONS`), so every false boolean is
    dropped there; the API server on the serve parser, where ``enable-eplb: false`` is
    ``--no-enable-eplb`` and ``disable-log-stats: false`` is dropped.

    Raises:
        ConfigError: not a ``.yaml``/``.yml`` name, not a regular file, unreadable, not YAML, or
            not a mapping.
    """
    path = user_path(path_text, base)
    shown = shown_path(path_text, path)  # a leading ~ as written
    if path_text.split(".")[-1] not in ("yaml", "yml"):  # vLLM's own test of the name
        raise ConfigError([InputIssue("--serve --config", "vLLM reads only .yaml/.yml config files", shown, None)], headline="bad --serve")
    import yaml

    from ..core._yaml_loaders import flow_depth

    raw = read_user_file(path, "--serve --config", MAX_SERVE_CONFIG_BYTES, shown=shown, headline="bad --serve").data  # a regular file only
    try:
        if len(raw) > MAX_SERVE_CONFIG_BYTES:
            raise ConfigError([InputIssue("--serve --config", f"the file is larger than {MAX_SERVE_CONFIG_BYTES} bytes (a serve config names a few dozen flags)", shown, {"maxBytes": MAX_SERVE_CONFIG_BYTES})], headline="bad --serve")
        text = raw.decode("utf-8")
        if flow_depth(text) > MAX_SERVE_CONFIG_DEPTH:
            raise RecursionError
        loader = yaml.SafeLoader(text)
        try:  # yaml.safe_load, keeping the node to find the repeated keys in one parse
            node = loader.get_single_node()
            if node is not None:
                _check_expanded_size(node, shown)  # before anything walks the aliases' expansion
            doc = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:  # where in the file, without PyYAML's "<unicode string>" excerpt
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = "; ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise ConfigError([InputIssue("--serve --config", f"is not YAML vLLM can load{where}: {what}", None, None, file=shown)], headline="bad --serve") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError([InputIssue("--serve --config", f"cannot read: {getattr(exc, 'strerror', None) or exc}", shown, None)], headline="bad --serve") from None
    except RecursionError:
        raise ConfigError([InputIssue("--serve --config", f"YAML nesting is too deep (more than {MAX_SERVE_CONFIG_DEPTH} levels; a serve config is a flat mapping of flags)", shown, {"maxDepth": MAX_SERVE_CONFIG_DEPTH})], headline="bad --serve") from None
    if not isinstance(doc, dict):
        raise ConfigError([InputIssue("--serve --config", "must be a YAML mapping of flag names to values", shown, None)], headline="bad --serve")
    keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)] if isinstance(node, yaml.MappingNode) else []
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    out: list[str] = []
    for key, value in doc.items():
        if isinstance(value, bool):
            if value:
                out.append(f"--{key}")
            elif (no_key := f"--no-{key}") in loader_options:
                out.append(no_key)
        elif isinstance(value, list):
            if value:
                out += [f"--{key}", *(str(v) for v in value)]
        elif isinstance(value, dict):
            out += [f"--{key}", json.dumps(value)]
        else:
            out += [f"--{key}", str(value)]
    return out, repeated
