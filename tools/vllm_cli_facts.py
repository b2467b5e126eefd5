"""Regenerate ``moe_oracle/engine_facts/vllm-<version>.yaml`` from a vLLM source tree.

The file lists every ``vllm serve`` flag (option strings, destination, whether it takes a
value, the option strings that turn a boolean off, choices, the argparse ``type`` as a kind of
:data:`TYPE_KINDS`, whether vLLM's ``optional_type`` reads ``""`` and ``"None"`` as "not given",
whether argparse then refuses that ``None`` as not among the choices, and the keys
``--kernel-config`` accepts) and every environment variable name that vLLM's
``vllm/envs.py`` declares. ``moe_oracle.inputs.serve`` reads it so that a ``vllm serve`` command line
is parsed with that release's real flags. One file per modelled release (0.29.0-0.33.0).

Usage (needs the import closure of vLLM's config modules: the differential environment
``$MOE_ORACLE_VLLM_ENV`` built by ``python -m moe_oracle.verify.setup_env``, with the
release's source tree on ``PYTHONPATH``)::

    PYTHONPATH=$MOE_ORACLE_VLLM_ENV/src/0.29.0 $MOE_ORACLE_VLLM_ENV/venv/bin/python \
        tools/vllm_cli_facts.py moe_oracle/engine_facts/vllm-0.29.0.yaml

``tools/vllm_cli_facts.py --parse LINES.json OUT.json`` instead parses command lines with the
release's own parsers, as ``vllm serve`` and the API server entry point parse them, and reports
each refusal or the values moe_oracle reads (:func:`parse_lines`; tests/differential/test_serve_refusals.py).

Facts: the ``vllm serve`` parser ``make_arg_parser``, in vllm/entrypoints/launchers/cli_args.py
(vLLM 0.29.0-0.32.0) or vllm/entrypoints/common/cli_args.py (0.33.0), which
vllm/entrypoints/cli/serve.py imports; the boolean actions (Python's ``argparse.BooleanOptionalAction``
in 0.29.0-0.32.0, vllm/utils/argparse_utils.py ``EnableDisableAction`` in 0.33.0), called per option string;
vllm/engine/arg_utils.py ``optional_type``, ``parse_type``, ``union_dict_and_str`` and
``_compute_kwargs`` (``parse_dataclass``); vllm/utils/argparse_utils.py ``human_readable_int`` and
``human_readable_int_or_auto``; vllm/envs.py ``environment_variables``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys

import yaml

# Where ``make_arg_parser`` lives, newest first (vllm/entrypoints/cli/serve.py imports it from there).
PARSER_MODULES = ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args")


def _parser_module():
    for name in PARSER_MODULES:
        try:
            return name, importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
    raise ModuleNotFoundError(f"none of {PARSER_MODULES} defines make_arg_parser")


# JSON flags whose dataclass keys are listed (``keys``): vLLM parses each occurrence with pydantic
# (vllm/engine/arg_utils.py ``parse_dataclass``), and a key the dataclass lacks is refused
# (``extra="forbid"``: unexpected_keyword_argument). moe_oracle.inputs.serve reads --kernel-config.
KEYED_JSON_FLAGS = ("kernel_config",)


def _dataclass_keys(cls, prefix: str = "") -> list[str]:
    """The field names pydantic accepts for ``cls`` (a vLLM ``@config`` dataclass), dotted into
    nested dataclasses that also forbid extra keys (``ir_op_priority.rms_norm``)."""
    import dataclasses

    keys = []
    for field in dataclasses.fields(cls):
        keys.append(prefix + field.name)
        nested = field.type
        if isinstance(nested, type) and dataclasses.is_dataclass(nested) and getattr(nested, "__pydantic_config__", {}).get("extra") == "forbid":
            keys += _dataclass_keys(nested, f"{prefix}{field.name}.")
    return keys


# The argparse ``type`` of a value-taking flag, as a small vocabulary (``type`` in each serve_flags
# entry). moe_oracle.inputs.serve converts every occurrence with the same rule and refuses what argparse
# refuses; the kinds marked "not checked" are recorded but moe_oracle does not convert them.
TYPE_KINDS = {
    "str": "no type, or str: every value is accepted",
    "int": "int(): Python's own int()",
    "float": "float(): Python's own float()",
    "json": "json.loads (directly or through parse_type/optional_type)",
    "json_if_braced": "union_dict_and_str (vllm/engine/arg_utils.py): json.loads when the value is a {...} object, else the string",
    "human_readable_int": "human_readable_int (vllm/utils/argparse_utils.py): 8192, 8k (8000), 8K (8192)",
    "human_readable_int_or_auto": "human_readable_int_or_auto (vllm/utils/argparse_utils.py): human_readable_int, or -1/auto",
    "lower_underscore": "lambda s: s.lower().replace('-', '_') (vllm/engine/arg_utils.py add_cli_args): never fails; choices are checked on the result",
    "dataclass_json": "parse_dataclass (vllm/engine/arg_utils.py _compute_kwargs): pydantic TypeAdapter(cls).validate_json; not checked by moe_oracle.inputs.serve (but the flags it reads)",
    "other": "a callable not classified (type_callable names it); not checked by moe_oracle.inputs.serve, nor are its choices",
}


FIELD_NOTES = {
    "type": "the argparse type of a value-taking flag, one of type_kinds",
    "type_callable": "the callable behind a type of kind other",
    "action": "a value-taking flag's own argparse Action class (not store or append, e.g. LoRAParserAction, which parses "
              "name=path or JSON itself); what it refuses beyond the type and choices is not checked by moe_oracle.inputs.serve",
    "optional": "vLLM's optional_type: '' and 'None' read as None (not given)",
    "none_not_a_choice": "optional, but the choices do not hold None: '' and 'None' are refused",
    "option_strings": "every option string the vllm serve parser registers (-h/--help and hidden negative strings included), "
                      "in registration order: argparse's allow_abbrev matches a prefix against these and lists the candidates "
                      "of an ambiguous one in this order",
}


def _same_code(fn, reference) -> bool:
    """Whether ``fn`` is compiled from the same source expression as ``reference`` (same bytecode,
    constants, names and arguments, in this interpreter)."""
    a, b = getattr(fn, "__code__", None), reference.__code__
    return a is not None and (a.co_code, a.co_consts, a.co_names, a.co_varnames) == (b.co_code, b.co_consts, b.co_names, b.co_varnames)


def _type_kind(fn) -> tuple[str, bool, str | None]:
    """(kind of :data:`TYPE_KINDS`, whether ``optional_type`` wraps it, the callable's name for
    ``other``). Wrappers are unwrapped through their closure (``return_type``):
    ``optional_type(T)`` reads ``""``/``"None"`` as None and converts the rest with
    ``parse_type(T)``, which turns T's ValueError into ArgumentTypeError (refused alike)."""
    from vllm.engine import arg_utils
    from vllm.utils import argparse_utils

    if fn is None or fn is str:
        return "str", False, None
    if fn is int or fn is float:
        return fn.__name__, False, None
    if fn is json.loads:
        return "json", False, None
    for name in ("human_readable_int", "human_readable_int_or_auto"):
        if fn is getattr(argparse_utils, name):
            return name, False, None
    if fn is arg_utils.union_dict_and_str:
        return "json_if_braced", False, None
    code = getattr(fn, "__code__", None)
    if code is not None and code is arg_utils.optional_type(str).__code__:
        kind, _, name = _type_kind(inspect.getclosurevars(fn).nonlocals["return_type"])
        return kind, True, name
    if code is not None and code is arg_utils.parse_type(str).__code__:
        return _type_kind(inspect.getclosurevars(fn).nonlocals["return_type"])
    if getattr(fn, "__module__", None) == arg_utils.__name__ and getattr(fn, "__qualname__", "") == "_compute_kwargs.<locals>.parse_dataclass":
        return "dataclass_json", False, None
    if getattr(fn, "__name__", None) == "<lambda>" and _same_code(fn, lambda s: s.lower().replace("-", "_")):
        return "lower_underscore", False, None
    return "other", False, f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _negative_options(parser, action) -> list[str]:
    """The option strings that set a boolean flag to False, found by calling the action.

    Each option string the parser registered for ``action`` (hidden ones included: vLLM 0.33.0
    ``EnableDisableAction`` keeps ``--no-enable-x`` registered but out of ``option_strings``) is
    passed to ``action(...)`` on an empty namespace, so the class's own rule decides:
    ``argparse.BooleanOptionalAction`` (vLLM 0.29.0-0.32.0: ``--no-`` spellings, Python's
    argparse ``__call__``), vLLM's ``EnableDisableAction`` (0.33.0 vllm/utils/argparse_utils.py:
    ``negative_option_strings``, ``--disable-x`` and ``--no-enable-x``), ``store_false``.

    Raises:
        ValueError: a string the action sets to something other than True or False.
    """
    import argparse

    negative = []
    for string, owner in parser._option_string_actions.items():
        if owner is not action:
            continue
        namespace = argparse.Namespace()
        action(parser, namespace, None, string)
        value = getattr(namespace, action.dest)
        if value is False:
            negative.append(string)
        elif value is not True:
            raise ValueError(f"{string} sets {action.dest} to {value!r}, not a boolean")
    return sorted(negative)


def _parsers():
    """(module name, the ``vllm`` parser, its ``serve`` subparser, the API server's parser), with
    the platform stubbed to CPU.

    Built as the release builds them: vllm/entrypoints/cli/main.py makes a ``FlexibleArgumentParser``
    with ``-v/--version`` and ``add_subparsers``, and ``ServeSubcommand.subparser_init``
    (vllm/entrypoints/cli/serve.py) adds ``serve`` with ``subparsers.add_parser`` (so a
    ``FlexibleArgumentParser`` with argparse's defaults: ``-h/--help``, ``allow_abbrev=True``) and
    fills it with ``make_arg_parser``; vllm/entrypoints/launchers/api_server/entry.py ``main``
    (``python -m vllm.entrypoints.openai.api_server``) fills a plain ``FlexibleArgumentParser``.
    ``ServeSubcommand`` itself is not imported: its module imports the API server (uvicorn).
    """
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    # Without a GPU vLLM cannot infer a device, and DeviceConfig's default factory raises.
    platforms._current_platform = CpuPlatform()
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    module_name, module = _parser_module()
    cli = FlexibleArgumentParser(description="vLLM CLI")
    cli.add_argument("-v", "--version", action="version", version=_version())
    subparsers = cli.add_subparsers(required=False, dest="subparser")
    serve = module.make_arg_parser(subparsers.add_parser("serve", usage="vllm serve [model_tag] [options]"))
    api_server = module.make_arg_parser(FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server."))
    if list(api_server._option_string_actions) != list(serve._option_string_actions):
        raise ValueError("the API server's parser and vllm serve's differ in their option strings")
    return module_name, cli, serve, api_server


def _version() -> str:
    from vllm import __version__

    return __version__


# What parse_lines reports of a parsed command line: what moe_oracle.inputs.serve reads for selection,
# as the release's namespace holds it (the model as vllm serve's ServeSubcommand.cmd takes it:
# the positional model_tag, else --model; the API server reads --model alone).
READ_VALUES = ("hf_overrides", "tensor_parallel_size", "data_parallel_size", "enable_expert_parallel", "enable_eplb", "enable_lora",
               "all2all_backend", "moe_backend", "max_num_batched_tokens", "dtype", "quantization")


def _read_values(namespace, api_server: bool) -> dict:
    values = {dest: getattr(namespace, dest, None) for dest in READ_VALUES}
    values["model"] = namespace.model if api_server or getattr(namespace, "model_tag", None) is None else namespace.model_tag
    values["num_redundant_experts"] = getattr(getattr(namespace, "eplb_config", None), "num_redundant_experts", None)
    return json.loads(json.dumps(values, default=repr))


def parse_lines(lines_path: str, out: str) -> None:
    """Parse each command line of the JSON file ``lines_path`` with the release's own parsers;
    write one result per line to ``out`` (JSON): ``{"refused": null, "values": {...}}`` where it
    parses (``values``: :data:`READ_VALUES`, the model and ``eplb_config.num_redundant_experts``),
    else ``{"refused": "..."}`` (argparse's message, or the exception that escaped argparse).

    A line is the list of words after ``vllm serve`` (parsed as ``vllm serve`` parses them: the
    ``vllm`` parser's ``parse_args(["serve", *words])``, whose rewriting, ``--config`` file
    included, runs on the ``vllm`` parser), or ``{"api_server": words}`` (the words after
    ``python -m vllm.entrypoints.openai.api_server``, parsed by its parser). Relative ``--config``
    files are read from the working directory. The differential tier compares moe_oracle.inputs.serve's
    refusals and values with these."""
    import contextlib
    import io

    _, cli, _, api_server = _parsers()
    with open(lines_path, encoding="utf-8") as handle:
        lines = json.load(handle)
    results = []
    for line in lines:
        on_api_server = isinstance(line, dict)
        parser, argv = (api_server, list(line["api_server"])) if on_api_server else (cli, ["serve", *line])
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                namespace = parser.parse_args(argv)
            results.append({"refused": None, "values": _read_values(namespace, on_api_server)})
        except SystemExit as exc:
            text = err.getvalue().strip()
            results.append({"refused": text.splitlines()[-1] if text else f"exit {exc.code} (help or version printed)"})
        except Exception as exc:  # noqa: BLE001 - any escape refuses the command line
            results.append({"refused": f"{type(exc).__name__}: {exc}"})
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(results, handle)


def main(out: str) -> None:
    import argparse

    from vllm import __version__, envs

    module_name, _, parser, _ = _parsers()
    flags = []
    for group in parser._action_groups:
        for action in group._group_actions:
            if not action.option_strings or action.dest == "help":
                continue
            takes_value = action.nargs != 0
            negative = [] if takes_value else _negative_options(parser, action)
            entry = {
                "dest": action.dest,
                "group": group.title,
                "options": list(action.option_strings),
                "value": {None: "one", "?": "optional", "+": "list", "*": "list"}.get(action.nargs, "one") if takes_value else "none",
            }
            if negative:
                entry["negative"] = negative
            if action.dest in KEYED_JSON_FLAGS:
                (cls,) = action.type.__defaults__  # parse_dataclass(val, cls=dataclass_cls)
                if getattr(cls, "__pydantic_config__", {}).get("extra") != "forbid":
                    raise ValueError(f"{action.dest}: {cls.__name__} does not forbid unknown keys")
                entry["keys"] = sorted(_dataclass_keys(cls))
            if action.choices:
                entry["choices"] = [c for c in action.choices if c is not None]
            optional = False
            if takes_value:
                kind, optional, callable_name = _type_kind(action.type)
                entry["type"] = kind
                if callable_name:
                    entry["type_callable"] = callable_name
                if type(action) not in (argparse._StoreAction, argparse._AppendAction):
                    entry["action"] = type(action).__name__
            # vllm/engine/arg_utils.py optional_type: "" and "None" parse to None (not given).
            if optional:
                entry["optional"] = True
                # argparse checks the converted value against the choices: where they hold the
                # string "None" but not None (vLLM 0.29.0-0.30.0 --spec-method), "" and "None"
                # are refused ("invalid choice: None") instead of read as not given.
                if action.choices and None not in action.choices:
                    entry["none_not_a_choice"] = True
            flags.append(entry)
    path = module_name.replace(".", "/") + ".py"
    doc = {
        "engine": "vllm",
        "version": __version__,
        "source": f"generated by tools/vllm_cli_facts.py: {path} make_arg_parser and vllm/envs.py environment_variables",
        "type_kinds": TYPE_KINDS,
        "field_notes": FIELD_NOTES,
        "env_vars": sorted(envs.environment_variables),
        # Every option string the serve parser registers, in registration order (argparse matches
        # an abbreviation against these, and names the candidates in this order).
        "option_strings": list(parser._option_string_actions),
        "serve_flags": sorted(flags, key=lambda f: f["dest"]),
    }
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(f"# Generated by tools/vllm_cli_facts.py from vLLM {__version__}; do not edit by hand.\n")
        yaml.safe_dump(doc, handle, sort_keys=False, width=120)


if __name__ == "__main__":
    if sys.argv[1] == "--parse":
        parse_lines(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1])
