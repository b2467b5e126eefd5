"""The deep fuzz tier's hostile inputs and its one check (marker ``fuzz_deep``; ``.ci/run`` runs it).

In-process, seeded (``random.Random``), no hypothesis: the point is volume. Each generator yields
``(label, thunk)``: calling the thunk feeds one hostile input to one door and returns what came
back. :func:`drive` runs a stream, and for each input asserts

* no exception but the project's typed ``ConfigError`` (a traceback is a bug);
* the input finished within its time bound (:data:`LAYER_BOUND_S` for a layer function,
  :data:`CLI_BOUND_S` for a whole CLI call, the issue's "no input over 2 s"), measured as the
  thread's CPU time: the CI machine is shared (load 12 on 2 cores was seen), so wall time would
  measure the neighbours; the rate printed is wall time;
* for the CLI: exit code 0, 1 or 2, and on 2 a message that names what was wrong (a flag, a JSON
  path or argparse's ``argument --x``).

It returns the count, the wall time and the slowest input, which the test prints.

The doors: Hugging Face config documents (:func:`~moe_oracle.inputs.hf.from_hf_config`), serve
lines (:func:`~moe_oracle.inputs.serve.parse_serve`, every modelled release), a serve line's
``--config`` YAML (:func:`~moe_oracle.inputs.serve_argv.config_file_args`), environment files
(:func:`~moe_oracle.inputs.envfile.parse_environment_text`), flag values (hardware names, quant
schemes, all2all names), and the CLI itself (``select``/``explain``/``why-not``/``plan`` argv built
from those pools).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from moe_oracle.core._resources import examples_dir
from moe_oracle.core.errors import ConfigError

LAYER_BOUND_S = 1.0
CLI_BOUND_S = 2.0
NAMES_FIELD = re.compile(r"--[a-z][a-z0-9-]*|\$[.\[]|\$\b|argument -|cfg\b")

EXAMPLES = sorted(p for p in examples_dir().glob("*.json") if not p.name.endswith(".hf_quant_config.json"))
CONFIGS = [json.loads(p.read_text()) for p in EXAMPLES]
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")

INTS = (0, -1, 1, 2, 3, 7, 8, 100, 255, 256, 1023, 1025, 10**6, 10**9, 2**31, 2**63, -(2**63), 10**30)
JUNK = (None, True, False, 1.5, -0.0, float("inf"), float("nan"), "", " ", "8", "none", "∞", "日本", "a" * 300, "$(rm -rf x)", "%s%n", "../../etc/passwd", [], [1, 2], {}, {"a": 1}, "re:[unclosed", "re:(a+)+$")
COUNT_KEYS = ("num_hidden_layers", "num_nextn_predict_layers", "mtp_num_hidden_layers", "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts",
              "num_experts_per_tok", "n_group", "topk_group", "hidden_size", "intermediate_size", "moe_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
              "decoder_sparse_step", "n_shared_experts", "shared_expert_intermediate_size", "routed_scaling_factor", "scoring_func", "model_type", "architectures",
              "hybrid_override_pattern", "layer_types", "mlp_only_layers", "torch_dtype", "hidden_act", "norm_topk_prob", "topk_method")
QUANT_DOCS = (
    {"quant_method": "fp8", "weight_block_size": [128, 128]},
    {"quant_method": "fp8", "weight_block_size": [0, 0]},
    {"quant_method": "fp8", "weight_block_size": "x"},
    {"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["re:[unclosed"], "weights": {"num_bits": 8, "type": "float"}}}},
    {"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": "Linear", "weights": None}}},
    {"quant_method": "compressed-tensors", "config_groups": []},
    {"quant_method": "modelopt", "quant_algo": "NVFP4"},
    {"quant_method": "modelopt", "quant_algo": 7},
    {"quant_method": "gptq", "bits": 3, "group_size": -7},
    {"quant_method": "awq", "bits": 4, "group_size": 10**9},
    {"quant_method": "mxfp4"},
    {"quant_method": "bitsandbytes"},
    {"quant_method": ["fp8"]},
    {"quant_method": "no-such"},
    {},
    "fp8",
)


@dataclass
class Tally:
    """What :func:`drive` saw: inputs, seconds, the slowest input and its time."""

    count: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    slowest_label: str = ""

    def add(self, other: "Tally") -> None:
        self.count += other.count
        self.seconds += other.seconds
        if other.slowest > self.slowest:
            self.slowest, self.slowest_label = other.slowest, other.slowest_label

    def line(self, name: str) -> str:
        rate = self.count / self.seconds if self.seconds else 0.0
        return f"{name}: {self.count} inputs in {self.seconds:.1f} s wall ({rate:.0f}/s); slowest {self.slowest * 1000:.0f} ms CPU: {self.slowest_label[:160]}"


def drive(stream: Iterator[tuple[str, Callable[[], Any]]], bound_s: float, cli: bool = False) -> Tally:
    """Run every input of ``stream``; assert the tier's invariants (module doc) for each."""
    tally = Tally()
    start_all = time.perf_counter()
    for label, thunk in stream:
        start = time.thread_time()
        try:
            result = thunk()
        except ConfigError as exc:
            result = exc
        except Exception as exc:  # noqa: BLE001 - the invariant under test: nothing else escapes
            raise AssertionError(f"{type(exc).__name__}: {exc!s:.300} escaped for input {label}") from exc
        took = time.thread_time() - start
        assert took <= bound_s, f"{label}: {took:.2f} s of CPU (bound {bound_s} s)"
        if isinstance(result, ConfigError):
            assert result.issues and all(NAMES_FIELD.search(i.path) or i.file for i in result.issues), f"{label}: an issue names no field: {result}"
        if cli:
            code, err = result
            assert code in (0, 1, 2), f"{label}: exit {code}"
            assert "Traceback" not in err, f"{label}: {err[-500:]}"
            if code == 2:
                assert NAMES_FIELD.search(err), f"{label}: exit 2 without naming a field: {err[-300:]}"
        tally.count += 1
        if took > tally.slowest:
            tally.slowest, tally.slowest_label = took, label
    tally.seconds = time.perf_counter() - start_all
    return tally


# ----------------------------------------------------------------------------- model configs


def _mutate(rng: random.Random, cfg: dict) -> tuple[dict, str]:
    cfg = json.loads(json.dumps(cfg))
    target = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) and rng.random() < 0.5 else cfg
    what = []
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        key = rng.choice(COUNT_KEYS + tuple(target) if target else COUNT_KEYS)
        if roll < 0.45:
            target[key] = rng.choice(INTS)
        elif roll < 0.7:
            target[key] = rng.choice(JUNK)
        elif roll < 0.8:
            target.pop(key, None)
        elif roll < 0.92:
            cfg["quantization_config"] = rng.choice(QUANT_DOCS)
            key = "quantization_config"
        else:
            n = rng.choice((0, 1, 7, 8, 64))
            target["n_group"], target["topk_group"] = n, rng.choice((0, 1, n, n + 1, 100))
            key = "n_group/topk_group"
        what.append(f"{key}={json.dumps(target.get(key, cfg.get(key)), default=str)[:60]}")
    return cfg, ", ".join(what)


def model_configs(seed: int, n: int) -> Iterator[tuple[str, Callable[[], Any]]]:
    from moe_oracle.inputs.hf import from_hf_config

    rng = random.Random(seed)
    for _ in range(n):
        i = rng.randrange(len(CONFIGS))
        cfg, what = _mutate(rng, CONFIGS[i])
        release = rng.choice(RELEASES)
        yield f"from_hf_config({EXAMPLES[i].stem} with {what}, release={release})", lambda cfg=cfg, release=release: from_hf_config(cfg, file="fuzz.json", release=release)


# ----------------------------------------------------------------------------- serve lines

_LAUNCHERS = ("vllm serve", "", "python -m vllm.entrypoints.openai.api_server", "VLLM_USE_DEEP_GEMM=1 vllm serve", "env A=1 vllm serve", "python -m sglang.launch_server", "trtllm-serve", "vllm", "vllm bench")
_MODELS = ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-FP8", "deepseek-ai/DeepSeek-R1", "openai/gpt-oss-120b", "nobody/none", "", "--model x", "'a b'", "\"unclosed")
_VALUES = ("1", "0", "-1", "8", "2**31", "1e3", "0x10", "auto", "fp8", "deepep_low_latency", "'{\"moe_backend\": \"x\"}'", "{}", "'{'", "true", "None", "", "$(id)", "`id`", "${HOME}", "a" * 200, "٣", "1k", "1Ki", "[1]", "'{\"num_redundant_experts\": Infinity}'", "'{\"num_redundant_experts\": 1.5}'", "'" + "[" * 3000 + "]" * 3000 + "'", "'" + "{\"a\": " * 2000 + "1" + "}" * 2000 + "'")


def serve_lines(seed: int, n: int) -> Iterator[tuple[str, Callable[[], Any]]]:
    from moe_oracle.inputs.release_facts import engine_facts
    from moe_oracle.inputs.serve import parse_serve

    rng = random.Random(seed)
    options = {r: [o for f in engine_facts(r)["serve_flags"] for o in f["options"]] for r in RELEASES}
    junk = ("--tp_size", "--model-path", "-rf", "--", "-", "--no-such-flag", "--moe-backend=", "--config", "--config x.yaml", "|", ";", "&&", ">", "\\\n", "# c", "; rm -rf x", "--eplb-config '{\"num_redundant_experts\": Infinity}'")
    for _ in range(n):
        release = rng.choice(RELEASES)
        words = [rng.choice(_LAUNCHERS), rng.choice(_MODELS)]
        for _ in range(rng.randint(0, 6)):
            if rng.random() < 0.8:
                flag = rng.choice(options[release])
                words.append(flag if rng.random() < 0.2 else (f"{flag}={rng.choice(_VALUES)}" if rng.random() < 0.2 else f"{flag} {rng.choice(_VALUES)}"))
            else:
                words.append(rng.choice(junk))
        line = " ".join(w for w in words if w)
        yield f"parse_serve({line!r}, version={release})", lambda line=line, release=release: parse_serve(line, version=release)


# ----------------------------------------------------------------------------- --config YAML


def _yaml_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.2:  # an alias bomb of random width and depth
        width, depth = rng.randint(2, 12), rng.randint(2, 9)
        lines = [f"l0: &l0 [{', '.join(['x'] * width)}]"]
        lines += [f"l{d}: &l{d} [{', '.join([f'*l{d - 1}'] * width)}]" for d in range(1, depth)]
        return "\n".join(lines) + "\n"
    if roll < 0.3:
        d = rng.choice((10, 33, 200, 3000))
        return "a: " + "[" * d + "]" * d + "\n"
    if roll < 0.4:
        return rng.choice(("a: &a [*a]\n", "!!python/object:os.system x\n", "a: !!binary x\n", "\x00\xff", "- 1\n- 2\n", "", "a: 1\na: 2\n", "{" * 40, "a: b: c\n", "\t- x\n"))
    keys = ("tensor-parallel-size", "enable-expert-parallel", "all2all-backend", "moe-backend", "quantization", "model", "port", "kernel-config", "no-such", "config", "hf-overrides")
    doc = {rng.choice(keys): rng.choice(("1", 8, True, False, None, [1, 2], {"a": 1}, "deepep_ll", "fp8", 10**30, "x" * 100)) for _ in range(rng.randint(1, 5))}
    return json.dumps(doc) if rng.random() < 0.3 else "\n".join(f"{k}: {json.dumps(v)}" for k, v in doc.items()) + "\n"


def serve_config_files(seed: int, n: int, workdir: Path) -> Iterator[tuple[str, Callable[[], Any]]]:
    from moe_oracle.inputs.serve_argv import config_file_args

    rng = random.Random(seed)
    path = workdir / "serve.yaml"
    for _ in range(n):
        text = _yaml_text(rng)

        def feed(text: str = text) -> Any:
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
            return config_file_args(str(path), None, frozenset())

        yield f"config_file_args({text[:100]!r}...)", feed


# ----------------------------------------------------------------------------- environment files

_ENV_LINES = ("vllm==0.33.0", "vllm==0.33.0+cu130", "torch==2.9.0", "flashinfer-python==0.7.4", "deep_gemm @ git+https://github.com/deepseek-ai/DeepGEMM@abc",
              "vllm==", "==1", "vllm===1", "vllm==99999999999999999999999999.0", "vllm==1.0.0.0.0.0.0.0.0.0.0.0.0", "-e .", "# comment", "", "\x00", "日本==1",
              "PyTorch version: 2.9.0", "GPU 0: NVIDIA H200", "GPU models and configuration: GPU 0: NVIDIA GeForce RTX 4090", "VLLM_USE_DEEP_GEMM=1", "[", "{\"name\": 1}",
              "Package    Version", "---------- -------", "vllm       0.33.0", "a" * 5000, "vllm==" + "9" * 5000)


def environment_texts(seed: int, n: int) -> Iterator[tuple[str, Callable[[], Any]]]:
    from moe_oracle.inputs.envfile import parse_environment_text

    rng = random.Random(seed)
    for _ in range(n):
        roll = rng.random()
        if roll < 0.15:
            text = json.dumps([{"name": rng.choice(("vllm", "", 1, None)), "version": rng.choice(("0.33.0", "", 7, None, "x" * 300))} for _ in range(rng.randint(0, 4))])
        elif roll < 0.2:
            text = rng.choice(("[", "{}", "null", "[" * 5000, "[1]" * 3))
        else:
            text = "\n".join(rng.choice(_ENV_LINES) for _ in range(rng.randint(0, 12)))
        yield f"parse_environment_text({text[:100]!r})", lambda text=text: parse_environment_text(text, "fuzz.txt")


# ----------------------------------------------------------------------------- flag values

_GPU_NAMES = ("H200", "h200", "NVIDIA H200", "NVIDIA GeForce RTX 4090", "RTX 5090", "A100-SXM4-80GB", "MI300X", "mi300", "", " ", "\x00", "H" * 500, "sm90", "cuda", "B200 ", "GB200", "Tesla V100", "T4")
_QUANTS = ("fp8_block", "FP8-Blk", "nvfp4", "unquantized", "fp8", "", "x", "mxfp4_mxfp8", "w4a16", "FP8", "int4", "a" * 300)
_A2A = ("deepep_ll", "deepep_low_latency", "DeepEP-HT", "pplx", "naive", "", "flashinfer", "x" * 300, "mori")


def flag_values(seed: int, n: int) -> Iterator[tuple[str, Callable[[], Any]]]:
    from moe_oracle.cli.common import load_tables
    from moe_oracle.inputs.files import parse_quant, resolve_all2all
    from moe_oracle.inputs.hardware import lookup_hardware

    catalog = load_tables(None)
    rng = random.Random(seed)
    for _ in range(n):
        kind = rng.randrange(3)
        value = rng.choice((_GPU_NAMES, _QUANTS, _A2A)[kind])
        if rng.random() < 0.3:
            value = "".join(rng.sample(value, len(value))) if value else value
        if kind == 0:
            yield f"lookup_hardware({value!r})", lambda value=value: lookup_hardware(value)
        elif kind == 1:
            yield f"parse_quant({value!r})", lambda value=value: parse_quant(value)
        else:
            yield f"resolve_all2all({value!r})", lambda value=value: resolve_all2all(catalog, value)


# ----------------------------------------------------------------------------- the CLI


def cli_argv(seed: int, n: int, workdir: Path) -> Iterator[tuple[str, Callable[[], Any]]]:
    """argv for select / explain / why-not / plan, from the pools above (models as mutated
    config files, serve lines, environment files), each run through ``moe_oracle.cli.main``."""
    from moe_oracle.cli import main

    rng = random.Random(seed)
    serve = serve_lines(seed + 1, 10**9)
    env_texts = environment_texts(seed + 2, 10**9)
    model_file = workdir / "model.json"
    env_file = workdir / "env.txt"
    for _ in range(n):
        command = rng.choice(("select", "select", "explain", "why-not", "plan"))
        argv = [command]
        writes: list[tuple[Path, str]] = []
        roll = rng.random()
        if roll < 0.35:
            argv += ["--model", rng.choice(("qwen3-30b-a3b", "deepseek-r1", "gpt-oss-120b", "Qwen/Qwen3-30B-A3B-FP8", "nobody/x", "", "kimi-k2"))]
        elif roll < 0.7:
            cfg, _ = _mutate(rng, rng.choice(CONFIGS))
            writes.append((model_file, json.dumps(cfg, default=str)))
            argv += ["--model", str(model_file)]
        else:
            label, _ = next(serve)
            argv += ["--serve", label[len("parse_serve("):].rsplit(", version=", 1)[0][1:-1].encode().decode("unicode_escape", "ignore")]
        if rng.random() < 0.85:
            argv += ["--gpu", rng.choice(_GPU_NAMES)]
        else:
            argv += ["--platform", rng.choice(("cuda", "rocm", "cpu")), *(["--sm", rng.choice(("90", "100", "0", "-1", "89"))] if rng.random() < 0.5 else [])]
        for _ in range(rng.randint(0, 3)):
            flag = rng.choice(("--tp", "--dp", "--ep", "--all2all", "--quant", "--moe-backend", "--package", "--env", "--environment", "--max-tokens", "--eplb", "--redundant-experts"))
            if flag in ("--ep", "--eplb"):
                argv.append(flag)
            elif flag == "--environment":
                label, _ = next(env_texts)
                writes.append((env_file, "\n".join(rng.choice(_ENV_LINES) for _ in range(4))))
                argv += [flag, str(env_file)]
            else:
                pool = {"--all2all": _A2A, "--quant": _QUANTS, "--moe-backend": ("auto", "triton", "flashinfer", "deep_gemm", "x"), "--package": ("vllm==0.31.0", "vllm==9.9", "vllm", "flashinfer-python==0.7.4", "=="),
                        "--env": ("VLLM_USE_DEEP_GEMM=1", "VLLM_ALL2ALL_BACKEND=pplx", "X", "=1", "VLLM_MOE_DP_CHUNK_SIZE=-1")}.get(flag, tuple(str(i) for i in INTS))
                argv += [flag, rng.choice(pool)]
        if command == "why-not":
            argv += ["--backend", rng.choice(("deep_gemm", "flashinfer", "triton", "cutlass", "x", "auto"))]
        if rng.random() < 0.2:
            argv.append("--json")

        def run(argv: list[str] = argv, writes: list[tuple[Path, str]] = writes) -> tuple[int, str]:
            for path, text in writes:
                path.write_text(text, encoding="utf-8", errors="surrogateescape")
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 2
            return code, err.getvalue() + (out.getvalue() if "--json" in argv else "")

        yield f"moe-oracle {' '.join(repr(a) if ' ' in a or not a else a for a in argv)}", run


def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="moe-oracle-fuzz-deep-"))
