"""A speculative config that needs a draft model and names none is refused at start (breakit23
finding 5): ``{"num_speculative_tokens": 2}`` was planned with a note that vLLM detects the method
from the draft model ``None``; vLLM takes it as ``draft_model`` and raises "num_speculative_tokens
was provided but without speculative model." (0.29.0-0.33.0 SpeculativeConfig.__post_init__,
0.34.0 DraftModelSpeculatorConfig.default_model; pinned per release in
tests/differential/test_release_sources.py)."""

from __future__ import annotations

import pytest

from tests.cli_capture import cli

SERVE = "vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --speculative-config '{spec}'"


@pytest.mark.parametrize(("spec", "release", "named"), [
    ('{"num_speculative_tokens": 2}', "0.34.0", "names no method (vLLM takes it as draft_model) and no draft model"),
    ('{"method": "eagle3", "num_speculative_tokens": 2}', "0.31.0", "names method 'eagle3' but no draft model"),
    ('{"method": "draft_model", "num_speculative_tokens": 1}', "0.29.0", "names method 'draft_model' but no draft model"),
])
def test_refused_naming_the_missing_model(spec, release, named):
    code, out, err = cli("plan", "--serve", SERVE.format(spec=spec), "--gpu", "H200", "--package", f"vllm=={release}")
    assert code == 2 and not out
    assert f"--serve --speculative-config model: vLLM {release} refuses it at start: the config {named}" in err
    assert '"num_speculative_tokens was provided but without speculative model."' in err


@pytest.mark.parametrize("spec", ['{"method": "mtp", "num_speculative_tokens": 2}', '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}',
                                  '{"model": "some/draft", "num_speculative_tokens": 2}', '{"method": "eagle3", "model": "some/eagle", "num_speculative_tokens": 2}'])
def test_configs_with_a_draft_or_one_vllm_defaults_are_still_planned(spec):
    code, _, err = cli("plan", "--serve", SERVE.format(spec=spec), "--gpu", "H200")
    assert code == 0, err
