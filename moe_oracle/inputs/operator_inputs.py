"""What an operator gave, as given: one frozen record of every input the command line (or a
caller of the Python API) can name, before anything is read or checked.

:func:`moe_oracle.inputs.deployment.build_deployment` turns it into oracle inputs; the CLI fills it
from its parsed flags (:func:`moe_oracle.cli.common.operator_inputs`) and no layer below the CLI
sees an ``argparse`` namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["OperatorInputs"]


@dataclass(frozen=True)
class OperatorInputs:
    """The operator's inputs, each as typed (``None``: not given).

    Layer: ``config`` (a MoEConfig file; ``-``: standard input, whose bytes are ``config_data``), ``model`` (a config.json, checkpoint directory or shipped
    example name), ``serve`` (a ``vllm serve`` line, one string), ``hf_quant_config``, ``quant``.
    Device: ``gpu`` (hardware catalog or ``nvidia-smi`` name) or ``platform`` with ``sm``
    (major*10+minor) / ``arch``. Deployment: ``tp``, ``dp``, ``pcp``, ``ep``, ``all2all``, ``eplb``,
    ``redundant_experts``, ``moe_backend``, ``lora``, ``batch_invariant``, ``max_tokens``.
    Environment: ``environment`` (a file), ``package`` (``NAME==VERSION``), ``without``, ``env``
    (``VAR=VALUE``), ``tool`` (``NAME[=yes|no]``: host tools found, FlashInfer's JIT toolchain), ``probe``. Whole model (``plan``, ``diff``): ``draft_moe_backend``,
    ``no_draft``, ``expert_placement`` (``None``: the serve line's, else ``linear``), ``quantization`` (vLLM ``--quantization``).

    How the inputs arrived, for messages: ``from_serve`` (the fields a serve line filled),
    ``gpu_given_as`` (``gpu:B200`` where a diff side named the device; the diff heads that side's notes with its flag),
    ``package_given_by`` (the flag each ``package`` entry was given by: ``--from``/``--to`` where a
    diff side declared it; empty: every entry was given by ``--package``), ``probe_implied``
    (``run`` probes unasked, so a file's environment is set aside with a note, not refused).
    """

    config: str | None = None
    config_data: bytes | None = None
    model: str | None = None
    serve: str | None = None
    hf_quant_config: str | None = None
    quant: str | None = None
    gpu: str | None = None
    platform: str | None = None
    sm: int | None = None
    arch: str | None = None
    tp: int | None = None
    dp: int | None = None
    pcp: int | None = None
    ep: bool | None = None
    all2all: str | None = None
    eplb: bool | None = None
    redundant_experts: int | None = None
    moe_backend: str | None = None
    lora: bool | None = None
    batch_invariant: bool | None = None
    max_tokens: int | None = None
    environment: str | None = None
    package: tuple[str, ...] = ()
    without: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    probe: bool = False
    policy: str = "faithful"
    draft_moe_backend: str | None = None
    no_draft: bool = False
    expert_placement: str | None = None
    quantization: str | None = None
    from_serve: frozenset[str] = frozenset()
    gpu_given_as: str | None = None
    package_given_by: tuple[str, ...] = ()
    probe_implied: bool = False

    def __post_init__(self) -> None:
        for name in ("package", "without", "env", "tool", "package_given_by"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if self.package_given_by and len(self.package_given_by) != len(self.package):
            raise ValueError(f"package_given_by names {len(self.package_given_by)} flags for {len(self.package)} package(s): {self.package_given_by!r}")

    def packages_given(self) -> tuple[tuple[str, str], ...]:
        """(``package`` entry, the flag that gave it) for every declared package, in order.

        >>> OperatorInputs(package=("torch==2.10.0", "vllm==0.33.0"), package_given_by=("--package", "--to")).packages_given()
        (('torch==2.10.0', '--package'), ('vllm==0.33.0', '--to'))
        """
        return tuple(zip(self.package, self.package_given_by or ("--package",) * len(self.package)))

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Every field, in declaration order (the CLI copies the flags of these names)."""
        return tuple(f.name for f in fields(cls))

    def declares_environment(self) -> bool:
        """Whether packages, absent packages, variables, host tools or an environment file are declared."""
        return bool(self.package or self.without or self.env or self.tool or self.environment)

    def device_flag(self) -> str:
        """How the device was given on the command line (``--gpu H200``, a diff side's ``gpu:B200``, ``--platform cuda``)."""
        if self.gpu_given_as:
            return self.gpu_given_as
        return f"--gpu {self.gpu}" if self.gpu else f"--platform {self.platform}"
