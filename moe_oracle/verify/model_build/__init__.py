"""The model-construction differential tier (issue 20, part 1).

Each modelled vLLM release builds the model itself, on this CPU machine, from a checkpoint's
``config.json`` (+ ``hf_quant_config.json``) and a deployment, on the meta device (no weights,
no download); :mod:`.reader` reads every fused-MoE layer it made; :mod:`.ours` asks
``moe-oracle plan --json`` the same question; :mod:`.compare` compares them layer by layer.

Worker-side modules (:mod:`.standins`, :mod:`.reader`, :mod:`.worker`) import vLLM and run only
inside the differential environment (``$MOE_ORACLE_VLLM_ENV``); :mod:`.corpus`, :mod:`.ours`,
:mod:`.compare` and :mod:`.driver` import neither vLLM nor torch.
"""
