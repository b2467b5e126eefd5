"""The model-construction tier: each modelled vLLM release builds the model itself, layer by layer.

For every release 0.29.0-0.34.0, ``moe_oracle.verify.model_build`` lets that release build each
corpus model on the meta device from its ``config.json`` (+ ``hf_quant_config.json``) under each
deployment (stand-ins: ``moe_oracle/verify/model_build/standins.py``), reads every fused-MoE layer
it made (experts, top-k, sizes, routing, activation, quant keys, selected experts class, backend,
prepare/finalize) and compares with ``moe-oracle plan --json`` for the same inputs.

Fails on: the stand-ins' self-check; a case the release cannot build that the reviewed list
(``moe_oracle/verify/model_build/divergences.yaml``, ``not_built``) does not name, unless it is a
refusal the driver compared and our plan shares (``ReleaseResult.refusals``); a case the
release refused at selection ("No ... MoE backend supports") where our plan selects a kernel for
every layer of that role; a layer field on
which the two sides differ that no reviewed divergence explains; and when too few layers were
compared (the self-check that the tier ran at all).

Marker ``differential`` (deselected by default). Size: the CI subset (:data:`QUICK_MODELS` x the
three quick deployments, about 1 min per release on a 2-core machine); ``MOE_ORACLE_MODEL_BUILD=full``
runs every model of ``examples/models`` and ``../shared/models`` under every deployment of
``corpus.DEPLOYMENTS`` (several minutes per release).
"""

from __future__ import annotations

import fnmatch
import os

import pytest
import yaml

from moe_oracle.verify.model_build.compare import DIVERGENCES, load_divergences
from moe_oracle.verify.model_build.corpus import DEPLOYMENTS, PCP_DEPLOYMENTS, QUICK_DEPLOYMENTS, cases
from moe_oracle.verify.model_build.driver import corpus_dirs, render, run_release
from moe_oracle.verify.run import RELEASES

pytestmark = pytest.mark.differential

QUICK_MODELS = (
    "deepseek-r1",
    "qwen3-30b-a3b-fp8",
    "gpt-oss-20b",
    "mixtral-8x7b-instruct-v0.1",
    "nvidia-nemotron-3-nano-30b-a3b-nvfp4",
    "afmoeforcausallm-fp8block-synthetic",
    "glm4moeliteforcausallm-nvfp4-synthetic",
    "mixtral-awq-synthetic",
    "mixtral-gptq-synthetic",
    "qwen3-30b-a3b-w4a16-synthetic",
    "qwen3moeforcausallm-gelu-synthetic",
    "deepseekv3forcausallm-gelu-synthetic",
    "qwen3moeforcausallm-4experts-synthetic",
    "deepseekv2forcausallm-greedy-synthetic",
)
"""Models of the CI subset: FP8 block with grouped sigmoid+bias routing and an MTP draft
(DeepSeek-R1), FP8 block refined under TP (Qwen3-30B-FP8), MXFP4 with biases and SwiGLU-OAI
(gpt-oss), unquantized softmax (Mixtral), ModelOpt NVFP4 with relu2 (Nemotron-3-Nano), and two
registry families' quantized overlays (examples/models/registry/SOURCES.md): compressed-tensors FP8
block with AFMoE's sigmoid routing (Trinity-Mini), compressed-tensors NVFP4 with an NVFP4 MTP draft
(GLM-4.7-Flash; built on B200 only, its 20 heads refuse TP 8), and Mixtral's AWQ (zero points: the
method's own key; MoeWNA16Method on ROCm) and per-channel GPTQ (refused on ROCm by MoeWNA16Method's
create_weights) overlays, and Qwen3-30B-A3B's compressed-tensors W4A16 overlay (RedHatAI; group 128:
Marlin on B200, refused at TP 8 by CompressedTensorsWNA16MoEMethod's create_weights, a refusal our
plan shares; about 8 s more per run here), DeepSeek-V2-Lite's shape with ``topk_method: greedy``
and 8 expert groups (DeepseekV2MoE passes the groups whatever ``topk_method`` says; about 20 s a
release, also in :data:`OLDER_RELEASE_MODELS`), and three edits of shipped configs that vLLM's model
classes judge: Qwen3-30B-A3B with ``hidden_act`` gelu (the experts run FusedMoE's silu), DeepSeek-R1
with gelu (DeepseekV2MoE refuses it) and Qwen3-30B-A3B with 4 experts (refused at TP 8:
"Tensor parallel size 8 is greater than the number of experts 4")."""

OLDER_RELEASE_MODELS = ("deepseek-r1", "qwen3-30b-a3b-fp8", "gpt-oss-20b", "afmoeforcausallm-fp8block-synthetic", "deepseekv2forcausallm-greedy-synthetic")
"""The CI subset for releases before the newest (to keep the tier near ten minutes on 2 cores)."""

MIN_LAYERS_PER_RELEASE = 150

STANDINS_FIT = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")
"""The releases whose construction the stand-ins (moe_oracle/verify/model_build/standins.py) have
been reviewed for. 0.34.0 needed four more (MoriEPv2PrepareAndFinalize in the reload list, the
current accelerator index, the SM 9.0 router-GEMM warm-up, ``flashinfer.comm``) and the registry's
swallowed exception kept (standins 3, 8, 9, 13, 14)."""

BUILT_RELEASES = tuple(r for r in RELEASES if r in STANDINS_FIT)
"""The modelled releases this tier builds: every one (:func:`test_every_release_is_built`). The
newest runs the CI subset :data:`QUICK_MODELS`, the others :data:`OLDER_RELEASE_MODELS`."""


def test_every_release_is_built():
    assert set(RELEASES) <= set(BUILT_RELEASES), f"a new release ({sorted(set(RELEASES) - set(BUILT_RELEASES))}): extend the stand-ins (their self-check names what moved), then add it to STANDINS_FIT"


def _full() -> bool:
    return os.environ.get("MOE_ORACLE_MODEL_BUILD", "") == "full"



def _reviewed_not_built(release: str, case_id: str, error: str) -> str | None:
    doc = yaml.safe_load(DIVERGENCES.read_text()) or {}
    for e in doc.get("not_built") or []:
        if fnmatch.fnmatch(case_id, e["case"]) and fnmatch.fnmatch(release, e.get("release", "*")) and fnmatch.fnmatch(error, e.get("error", "*")):
            return e["id"]
    return None


def test_divergence_file_is_well_formed():
    entries = load_divergences()
    doc = yaml.safe_load(DIVERGENCES.read_text()) or {}
    ids = [e["id"] for e in entries] + [e["id"] for e in doc.get("not_built") or []]
    assert len(ids) == len(set(ids)), "divergence ids must be unique"
    for e in doc.get("not_built") or []:
        assert e.get("case") and e.get("reason"), f"not_built entry {e.get('id')} needs case and reason"


@pytest.mark.parametrize("release", BUILT_RELEASES)
def test_release_builds_the_model_our_plan_describes(vllm_env, release):
    corpus = cases(corpus_dirs(), DEPLOYMENTS if _full() else QUICK_DEPLOYMENTS)
    if not _full():
        models = QUICK_MODELS if release == BUILT_RELEASES[-1] else OLDER_RELEASE_MODELS
        corpus = [c for c in corpus if c.model in models]
    assert corpus, "empty corpus: examples/models not found"
    res = run_release(vllm_env, release, corpus)
    print(render(res))
    assert not res.self_check, f"vLLM {release}: the stand-ins no longer fit: {res.self_check}"
    # A refusal the driver compared and our plan shares is a checked answer, not an unbuilt case.
    unreviewed = {cid: err for cid, err in res.not_built.items() if res.refusals.get(cid) != "agree" and _reviewed_not_built(release, cid, err) is None}
    assert not unreviewed, f"vLLM {release}: cases the release could not build and no reviewed entry names:\n" + "\n".join(f"  {k}: {v[:200]}" for k, v in unreviewed.items())
    assert not res.ours_failed, f"vLLM {release}: our plan failed: {res.ours_failed}"
    assert not res.refusals_differ, f"vLLM {release}: the release refused layers our plan gives a kernel: {res.refusals_differ}"
    assert res.layers >= MIN_LAYERS_PER_RELEASE, f"vLLM {release}: only {res.layers} layers compared"
    shown = "\n".join(f"  {d.case} [{d.role} {d.index}] {d.field}: vLLM {d.vllm!r} | ours {d.ours!r}" for d in res.unexplained[:30])
    assert not res.unexplained, f"vLLM {release}: {len(res.unexplained)} layer-field differences no reviewed divergence explains:\n{shown}"


PCP_MODELS = ("deepseek-r1", "deepseekv2forcausallm-greedy-synthetic")
"""MLA models (the attention backends PCP needs); DeepSeek-R1 with EP and grouped sigmoid routing."""


def test_pcp_deployments_build_the_model_our_plan_describes(vllm_env):
    # The newest release only: see PCP_DEPLOYMENTS for why older ones cannot build PCP here.
    release = BUILT_RELEASES[-1]
    corpus = [c for c in cases(corpus_dirs(), PCP_DEPLOYMENTS) if c.model in PCP_MODELS]
    assert len(corpus) == len(PCP_MODELS) * len(PCP_DEPLOYMENTS), "a PCP model is missing from the corpus"
    res = run_release(vllm_env, release, corpus)
    print(render(res))
    assert not res.self_check, f"vLLM {release}: the stand-ins no longer fit: {res.self_check}"
    assert not res.not_built and not res.ours_failed and not res.refusals_differ, (res.not_built, res.ours_failed, res.refusals_differ)
    assert res.layers >= 100, f"vLLM {release}: only {res.layers} layers compared under PCP"
    shown = "\n".join(f"  {d.case} [{d.role} {d.index}] {d.field}: vLLM {d.vllm!r} | ours {d.ours!r}" for d in res.unexplained[:30])
    assert not res.unexplained, f"vLLM {release}: {len(res.unexplained)} layer-field differences under PCP:\n{shown}"
