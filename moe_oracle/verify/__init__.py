"""Differential verification: ask a real vLLM release and our tables the same question.

A :class:`~moe_oracle.verify.cases.Deployment` is one neutral, JSON-serializable
description of a MoE layer on a machine. :mod:`moe_oracle.verify.ours` answers it
from our tables; :mod:`moe_oracle.verify.vllm_side` answers it by running that vLLM
release's own selection code (its quantization front ends, oracles and experts
classes) inside an interpreter where the release is importable, simulating only
what a CPU box lacks (platform and device capability, optional packages, compiled
capability queries). :mod:`moe_oracle.verify.run` drives one worker process per
release and compares the two answers; every disagreement is written as a small
reproducible JSON case, and :mod:`moe_oracle.verify.divergences` holds the reviewed
list of differences we keep on purpose.

Only ``vllm_side`` imports vLLM and torch; it runs in the worker, never in the core.
"""
