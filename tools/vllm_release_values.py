"""Regenerate ``moe_oracle/engine_facts/vllm-release-values.yaml`` from vLLM source trees.

Per release, the values a ``vllm serve`` line may give that the release checks at start, and
the environment variable names it declares, read statically (``ast``, no import) from:

* ``quantization``: vllm/model_executor/layers/quantization/__init__.py ``QuantizationMethods``
  (a ``Literal``); ``ModelConfig._verify_quantization`` (vllm/config/model.py) refuses any other
  ``--quantization`` ("Unknown quantization method") after lower-casing it
  (``validate_quantization_before``);
* ``deprecated_quantization``: the same file's ``DEPRECATED_QUANTIZATION_METHODS``, refused by
  ``_verify_quantization`` unless ``--allow-deprecated-quantization`` is given;
* ``kv_cache_dtype``: vllm/config/cache.py ``CacheDType`` (a ``Literal``): 0.29.0-0.32.0 type
  ``--kv-cache-dtype`` as ``CacheDType`` (argparse ``choices``, vllm/engine/arg_utils.py), 0.33.0
  as ``CacheDType | str`` checked by ``CacheConfig._validate_cache_dtype`` against
  ``KV_CACHE_DTYPES`` (the literal plus dtypes a platform registers; none in-tree);
* ``env_vars``: vllm/envs.py ``environment_variables`` (its keys);
* ``removed_env_vars`` (0.34.0+; empty before): vllm/envs.py ``removed_environment_variables``,
  name -> the migration hint. ``Platform.validate_environ`` (vllm/platforms/interface.py, called
  from ``EngineArgs`` at start) raises ``"{name} has been removed. {hint}"`` for each one set,
  whatever its value; before 0.34.0 such a variable was only "unknown" (a warning unless
  ``--fail-on-environ-validation``);
* ``env_value_rules`` (0.34.0+): the variables ``validate_environ`` checks by value before that
  (``if env == NAME: if value != ACCEPTED: raise ValueError(...)``, then a warning), name ->
  ``{accepted, refusal}`` with the refusal as a ``str.format`` template over ``value``. Any other
  statement shape in that loop stops the tool;
* ``platforms``: per in-tree platform class that vllm/platforms/__init__.py names
  (``"vllm.platforms.<module>.<Class>"``, keyed by ``<module>``; ``interface.UnspecifiedPlatform``
  left out), the ``supported_quantization`` list its class resolves to (its own or the nearest
  base's, read in the platform modules; an empty list lets every method through), its
  ``device_name``, and ``verify_quantization_override``: the class below ``Platform`` that
  overrides ``verify_quantization``, if any. ``ModelConfig._verify_quantization``
  (vllm/config/model.py) calls ``current_platform.verify_quantization(self.quantization)``
  after the "Unknown quantization method" check and before the deprecation check;
  ``Platform.verify_quantization`` (vllm/platforms/interface.py) raises when the list is
  non-empty and lacks the method. An override is accepted only when it calls the base method
  and raises nothing itself (0.29.0-0.33.0: ``RocmPlatform``, which then only sets
  ``VLLM_USE_TRITON_AWQ=1``, read by the AWQ linear ops in vllm/_custom_ops.py, not by MoE);
  anything else stops the tool. A name bound to one of two classes (``CudaPlatform =
  NvmlCudaPlatform if nvml_available else NonNvmlCudaPlatform``) must give the same facts for
  both. A platform whose class comes from outside vLLM (``tpu``: ``tpu_inference``) is recorded
  with ``out_of_tree`` (the package) and no list: not known from vLLM's source;
* ``platform_refusal``: ``Platform.verify_quantization``'s message, its f-string written as a
  ``str.format`` template over ``quant`` and ``device_name``. The tool checks the condition
  (``cls.supported_quantization and quant not in cls.supported_quantization``) and the call's
  place in ``_verify_quantization`` and stops if either differs;
* ``sequence_parallel_moe_all2all``: the all2all backends of vllm/config/parallel.py
  ``ParallelConfig.use_sequence_parallel_moe`` (true with one of them, expert parallelism, TP > 1
  and DP > 1; a rule with any other term stops the tool). Models that refuse sequence-parallel
  MoE at construction read it (:mod:`moe_oracle.inputs.model_start_refusals`).

Usage::

    python tools/vllm_release_values.py /work/venvs/vllm-env/src moe_oracle/engine_facts/vllm-release-values.yaml

(the first argument holds one ``<version>/vllm`` tree per release).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml


def _assigned(tree: ast.Module, name: str) -> ast.expr:
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name and node.value is not None:
            return node.value
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    raise LookupError(f"{name} is not assigned")


def _strings(node: ast.expr) -> list[str]:
    """The string constants of ``Literal[...]`` or a list literal."""
    if isinstance(node, ast.Subscript):
        node = node.slice
    elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    out = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(out) != len(elts):
        raise ValueError("expected string constants only")
    return out


def _function(tree: ast.AST, name: str) -> ast.FunctionDef:
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(found) != 1:
        raise LookupError(f"expected one function {name}, found {len(found)}")
    return found[0]


_CONDITION = "cls.supported_quantization and quant not in cls.supported_quantization"


def _refusal_template(interface: ast.Module) -> str:
    """``Platform.verify_quantization``'s message as a template; stops when the rule differs."""
    platform = next(n for n in interface.body if isinstance(n, ast.ClassDef) and n.name == "Platform")
    body = [n for n in _function(platform, "verify_quantization").body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.If) or ast.unparse(body[0].test) != _CONDITION or body[0].orelse:
        raise ValueError("Platform.verify_quantization is not the modelled rule: " + "; ".join(ast.unparse(n) for n in body))
    (raised,) = body[0].body
    if not (isinstance(raised, ast.Raise) and isinstance(raised.exc, ast.Call) and ast.unparse(raised.exc.func) == "ValueError" and isinstance(raised.exc.args[0], ast.JoinedStr)):
        raise ValueError(f"Platform.verify_quantization raises {ast.unparse(raised)}")
    names = {"quant": "{quant}", "cls.device_name": "{device_name}"}
    parts = []
    for value in raised.exc.args[0].values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value).replace("{", "{{").replace("}", "}}"))
        else:
            assert isinstance(value, ast.FormattedValue) and value.conversion == -1 and value.format_spec is None
            parts.append(names[ast.unparse(value.value)])
    return "".join(parts)


def _check_call_site(model: ast.Module) -> None:
    """``_verify_quantization`` calls the platform check after the unknown-method check and before
    the deprecation check, on ``self.quantization``; stops otherwise."""
    text = ast.unparse(_function(model, "_verify_quantization"))
    call = "current_platform.verify_quantization(self.quantization)"
    if text.count(call) != 1 or not text.index("Unknown quantization method") < text.index(call) < text.index("DEPRECATED_QUANTIZATION_METHODS"):
        raise ValueError("ModelConfig._verify_quantization does not call current_platform.verify_quantization(self.quantization) between the unknown-method and deprecation checks")


class _Platforms:
    """Static class lookup across vllm/platforms/*.py."""

    def __init__(self, tree_root: Path) -> None:
        self.directory = tree_root / "vllm" / "platforms"
        self.modules: dict[str, ast.Module] = {}

    def module(self, name: str) -> ast.Module:
        if name not in self.modules:
            self.modules[name] = ast.parse((self.directory / f"{name}.py").read_text(encoding="utf-8"))
        return self.modules[name]

    def resolve(self, module: str, name: str) -> list[tuple[str, ast.ClassDef]] | str:
        """The classes ``module.name`` may be (two for a conditional binding), or the package a
        name imported from outside vLLM comes from."""
        tree = self.module(module)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return [(module, node)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                value = node.value
                options = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                out: list[tuple[str, ast.ClassDef]] = []
                for option in options:
                    assert isinstance(option, ast.Name), ast.unparse(node)
                    found = self.resolve(module, option.id)
                    if isinstance(found, str):
                        return found
                    out += found
                return out
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                original = next(a.name for a in node.names if (a.asname or a.name) == name)
                source = node.module or ""
                if node.level == 1:
                    return self.resolve(source, original)
                if source.startswith("vllm.platforms."):
                    return self.resolve(source.rsplit(".", 1)[1], original)
                return source
        raise LookupError(f"vllm/platforms/{module}.py has no {name}")

    def facts(self, module: str, cls: ast.ClassDef) -> dict[str, object]:
        """supported_quantization, device_name and the verify_quantization override along the
        class's bases, nearest first, down to interface.Platform."""
        found: dict[str, object] = {}
        chain: list[tuple[str, ast.ClassDef]] = [(module, cls)]
        while True:
            mod, node = chain[-1]
            for item in node.body:
                target = item.target if isinstance(item, ast.AnnAssign) else (item.targets[0] if isinstance(item, ast.Assign) and len(item.targets) == 1 else None)
                if isinstance(target, ast.Name) and target.id in ("supported_quantization", "device_name") and target.id not in found:
                    value = getattr(item, "value", None)
                    assert value is not None, f"{node.name}.{target.id} has no value"
                    found[target.id] = _strings(value) if target.id == "supported_quantization" else ast.literal_eval(value)
                if isinstance(item, ast.FunctionDef) and item.name == "verify_quantization" and not (mod == "interface" and node.name == "Platform"):
                    if "verify_quantization_override" in found:
                        raise ValueError(f"two verify_quantization overrides below Platform: {found['verify_quantization_override']} and {node.name}")
                    text = ast.unparse(item)
                    if "super().verify_quantization(quant)" not in text or any(isinstance(n, ast.Raise) for n in ast.walk(item)):
                        raise ValueError(f"{node.name}.verify_quantization (vllm/platforms/{mod}.py) is not a static rule the tool models: {text}")
                    found["verify_quantization_override"] = node.name
            if mod == "interface" and node.name == "Platform":
                return found
            if len(node.bases) != 1 or not isinstance(node.bases[0], ast.Name):
                raise ValueError(f"{node.name}: expected one named base, found {[ast.unparse(b) for b in node.bases]}")
            base = self.resolve(mod, node.bases[0].id)
            assert not isinstance(base, str) and len(base) == 1, f"{node.name}'s base {node.bases[0].id}"
            chain.append(base[0])


def platform_facts(tree_root: Path) -> dict[str, dict[str, object]]:
    """Per in-tree platform module, the facts of the class vllm/platforms/__init__.py names."""
    platforms = _Platforms(tree_root)
    names = sorted({n.value for n in ast.walk(platforms.module("__init__")) if isinstance(n, ast.Constant) and isinstance(n.value, str) and re.fullmatch(r"vllm\.platforms\.\w+\.\w+", n.value)})
    out: dict[str, dict[str, object]] = {}
    for qualname in names:
        module, name = qualname.split(".")[2:]
        if module == "interface":
            continue  # UnspecifiedPlatform: no device
        classes = platforms.resolve(module, name)
        if isinstance(classes, str):
            out[module] = {"class": qualname, "out_of_tree": classes}
            continue
        facts = [platforms.facts(m, c) for m, c in classes]
        if any(f != facts[0] for f in facts):
            raise ValueError(f"{qualname} may be {[c.name for _, c in classes]}, whose facts differ: {facts}")
        entry: dict[str, object] = {"class": qualname, "device_name": facts[0]["device_name"], "supported_quantization": facts[0].get("supported_quantization", [])}
        if "verify_quantization_override" in facts[0]:
            entry["verify_quantization_override"] = facts[0]["verify_quantization_override"]
        out[module] = entry
    return out


def _joined(node: ast.expr) -> str:
    """A string constant, or implicitly concatenated / parenthesized constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise ValueError(f"expected a string constant, got {ast.unparse(node)}")


def removed_env_vars(envs: ast.Module) -> dict[str, str]:
    """vllm/envs.py ``removed_environment_variables`` (name -> hint); ``{}`` when the release has none."""
    try:
        node = _assigned(envs, "removed_environment_variables")
    except LookupError:
        return {}
    if not isinstance(node, ast.Dict):
        raise ValueError(f"removed_environment_variables is not a dict literal: {ast.unparse(node)}")
    return {_joined(k): _joined(v) for k, v in zip(node.keys, node.values)}


def _template(node: ast.expr, names: dict[str, str]) -> str:
    if isinstance(node, ast.Constant):
        return str(node.value).replace("{", "{{").replace("}", "}}")
    if not isinstance(node, ast.JoinedStr):
        raise ValueError(f"expected an f-string, got {ast.unparse(node)}")
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value).replace("{", "{{").replace("}", "}}"))
        else:
            assert isinstance(value, ast.FormattedValue) and value.conversion == -1 and value.format_spec is None
            parts.append(names[ast.unparse(value.value)])
    return "".join(parts)


def env_value_rules(interface: ast.Module, removed: dict[str, str]) -> dict[str, dict[str, str]]:
    """The per-variable value checks at the top of ``Platform.validate_environ``'s loop.

    Recognized statements in the loop body: ``if env == NAME: [if value != C: raise
    ValueError(f"...")] ...; continue`` (a value rule), ``if hint := envs.removed_environment_variables.get(env):
    raise ...`` (needs ``removed``), and the unknown-variable check. Anything else raises.
    """
    platform = next(n for n in interface.body if isinstance(n, ast.ClassDef) and n.name == "Platform")
    try:
        fn = _function(platform, "validate_environ")
    except LookupError:
        if removed:
            raise
        return {}  # a release without the check on the Platform class has no value rules
    loops = [n for n in ast.walk(fn) if isinstance(n, ast.For)]
    if len(loops) != 1:
        raise ValueError("Platform.validate_environ: expected one loop over os.environ")
    rules: dict[str, dict[str, str]] = {}
    for stmt in loops[0].body:
        text = ast.unparse(stmt)
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare) and ast.unparse(stmt.test.left) == "env" and isinstance(stmt.test.ops[0], ast.Eq):
            name = _joined(stmt.test.comparators[0])
            inner = [n for n in stmt.body if isinstance(n, ast.If)]
            if len(inner) != 1 or not isinstance(stmt.body[-1], ast.Continue):
                raise ValueError(f"validate_environ: unrecognized rule for {name}: {text}")
            test = inner[0].test
            if not (isinstance(test, ast.Compare) and ast.unparse(test.left) == "value" and isinstance(test.ops[0], ast.NotEq)):
                raise ValueError(f"validate_environ: unrecognized value test for {name}: {ast.unparse(test)}")
            (raised,) = inner[0].body
            assert isinstance(raised, ast.Raise) and isinstance(raised.exc, ast.Call) and ast.unparse(raised.exc.func) == "ValueError", text
            rules[name] = {"accepted": _joined(test.comparators[0]), "refusal": _template(raised.exc.args[0], {"value": "{value}", "env": "{name}"})}
        elif "removed_environment_variables" in text:
            if "raise ValueError(f'{env} has been removed. {hint}')" not in text:
                raise ValueError(f"validate_environ: unrecognized removed-variable rule: {text}")
        elif "Unknown vLLM environment variable detected" in text:
            continue
        else:
            raise ValueError(f"validate_environ: unrecognized statement: {text}")
    return rules


_SP_MOE_REST = {"self.enable_expert_parallel", "self.tensor_parallel_size > 1", "self.data_parallel_size > 1"}


def sequence_parallel_moe_all2all(parallel: ast.Module) -> list[str]:
    """The all2all backends under which ``ParallelConfig.use_sequence_parallel_moe`` holds
    (with expert parallelism, TP > 1 and DP > 1); stops when the rule has other terms."""
    fn = _function(parallel, "use_sequence_parallel_moe")
    ret = fn.body[-1]
    if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.BoolOp) and isinstance(ret.value.op, ast.And)):
        raise ValueError("use_sequence_parallel_moe: expected `return A and B and ...`")
    backends: list[str] | None = None
    rest = set()
    for term in ret.value.values:
        if isinstance(term, ast.Compare) and isinstance(term.ops[0], ast.In) and ast.unparse(term.left) == "self.all2all_backend":
            backends = _strings(term.comparators[0])
        else:
            rest.add(ast.unparse(term))
    if backends is None or rest != _SP_MOE_REST:
        raise ValueError(f"use_sequence_parallel_moe: unrecognized rule (other terms {sorted(rest)})")
    return backends


def release_values(tree_root: Path) -> dict[str, object]:
    """The values of one release tree (``<root>/vllm``)."""
    def parse(rel: str) -> ast.Module:
        return ast.parse((tree_root / "vllm" / rel).read_text(encoding="utf-8"))

    quant = parse("model_executor/layers/quantization/__init__.py")
    envs_module = parse("envs.py")
    envs = _assigned(envs_module, "environment_variables")
    assert isinstance(envs, ast.Dict)
    removed = removed_env_vars(envs_module)
    _check_call_site(parse("config/model.py"))
    return {
        "quantization": _strings(_assigned(quant, "QuantizationMethods")),
        "deprecated_quantization": _strings(_assigned(quant, "DEPRECATED_QUANTIZATION_METHODS")),
        "kv_cache_dtype": _strings(_assigned(parse("config/cache.py"), "CacheDType")),
        "env_vars": sorted(k.value for k in envs.keys if isinstance(k, ast.Constant)),
        "removed_env_vars": removed,
        "env_value_rules": env_value_rules(parse("platforms/interface.py"), removed),
        "platform_refusal": _refusal_template(parse("platforms/interface.py")),
        "platforms": platform_facts(tree_root),
        "sequence_parallel_moe_all2all": sequence_parallel_moe_all2all(parse("config/parallel.py")),
    }


def main(src: str, out: str) -> None:
    root = Path(src)
    releases = sorted((p.name for p in root.iterdir() if (p / "vllm" / "envs.py").is_file()), key=lambda v: tuple(int(x) for x in v.split(".")))
    doc = {
        "engine": "vllm",
        "source": "generated by tools/vllm_release_values.py: vllm/model_executor/layers/quantization/__init__.py QuantizationMethods and DEPRECATED_QUANTIZATION_METHODS, vllm/config/cache.py CacheDType, vllm/envs.py environment_variables and removed_environment_variables, Platform.validate_environ, vllm/platforms/*.py supported_quantization / device_name / verify_quantization of the classes vllm/platforms/__init__.py names, vllm/config/parallel.py ParallelConfig.use_sequence_parallel_moe",
        "releases": {v: release_values(root / v) for v in releases},
    }
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("# Generated by tools/vllm_release_values.py from the vLLM source trees; do not edit by hand.\n")
        yaml.safe_dump(doc, handle, sort_keys=False, width=1000)


if __name__ == "__main__":
    main(*sys.argv[1:3])
