"""Errors and Decisions cross a process boundary: pickle, deepcopy, ProcessPoolExecutor."""

from __future__ import annotations

import copy
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from moe_oracle import ConfigError, Device, MoEConfig, NoEligibleKernelError, Oracle, TableError
from moe_oracle.core.errors import InputIssue
from moe_oracle.core.quant import UnknownSchemeError, scheme_by_name
from moe_oracle.runtime.errors import CompositionError, RankDecision, RankDisagreementError, UnsupportedConfigError

H200 = Device("cuda", capability=90)


def _cfg(**kw):
    return MoEConfig(**{"num_experts": 8, "top_k": 2, "hidden_size": 4096, "intermediate_size": 14336, "device": H200, **kw})


def _config_error() -> ConfigError:
    with pytest.raises(ConfigError) as info:
        Device("cuda", capability=999)
    return info.value


def _raise_config_error(capability: int) -> None:  # runs in a worker process
    Device("cuda", capability=capability)


def test_config_error_round_trips():
    error = _config_error()
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is ConfigError
    assert back.issues == error.issues and str(back) == str(error) and back.to_dict() == error.to_dict()
    flags = error.naming_flags()  # a re-headed copy keeps its headline
    assert str(pickle.loads(pickle.dumps(flags))) == str(flags) != str(error)


def test_every_public_error_class_round_trips():
    with pytest.raises(UnknownSchemeError) as info:
        scheme_by_name("fp9")
    errors = [
        TableError([InputIssue("$.id", "duplicate", "x", file="k.yaml", entry="x")], headline="two tables"),
        info.value,
        CompositionError("A", "B", "interface", "modular", "monolithic"),
        UnsupportedConfigError("Ref", "activation", "gelu", ["silu"]),
        RankDisagreementError((RankDecision(0, "aa", "triton", "pf"), RankDecision(1, "bb", "marlin", "pf"))),
    ]
    for error in errors:
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error) and back.__dict__ == error.__dict__


def test_decision_pickles_and_deep_copies():
    decision = Oracle.default().select(_cfg())
    for back in (pickle.loads(pickle.dumps(decision)), copy.deepcopy(decision)):
        assert back is not decision
        assert back.to_dict() == decision.to_dict()
        assert back.render_text(show_all=True) == decision.render_text(show_all=True)


def test_no_eligible_kernel_error_pickles():
    with pytest.raises(NoEligibleKernelError) as info:
        Oracle.default().select(_cfg(moe_backend="flashinfer_trtllm"))
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is NoEligibleKernelError
    assert str(back) == str(info.value) and back.decision.to_dict() == info.value.decision.to_dict()


def test_config_error_raised_in_a_worker_reaches_the_parent():
    with ProcessPoolExecutor(max_workers=1) as pool:
        future = pool.submit(_raise_config_error, 999)
        with pytest.raises(ConfigError) as info:
            future.result()
    assert info.value.title() == "bad Device.capability"
    assert info.value.issues[0].value == 999


def _decision_json(blob: bytes) -> dict:  # runs in a fresh (spawned) process
    return pickle.loads(blob).to_dict()


@pytest.mark.parametrize("view", ["engine", "runtime"])
@pytest.mark.parametrize("release", [None, "0.31.0"], ids=["newest", "0.31.0"])
def test_a_decision_on_the_shipped_tables_pickles_small_and_names_its_view(view, release):
    """A pickled Decision carried the whole catalog view (and the compiled tables of every
    release behind it): ~2.5 MB. A view of the shipped tables is named instead."""
    from moe_oracle import Environment

    env = Environment.declared([f"vllm=={release}"]) if release else None
    decision = Oracle.default(view=view).select(_cfg(), env)
    blob = pickle.dumps(decision)
    assert len(blob) < 100_000
    back = pickle.loads(blob)
    assert back.ranking.view is decision.ranking.view  # this process's view itself
    assert back.to_dict() == decision.to_dict() and back.rows == decision.rows
    assert back.render_text(show_all=True) == decision.render_text(show_all=True)
    assert pickle.loads(pickle.dumps(back)).to_dict() == decision.to_dict()


def test_a_small_decision_pickle_reads_back_in_a_fresh_process():
    import multiprocessing

    decision = Oracle.default().select(_cfg(moe_backend="triton"))
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_decision_json, pickle.dumps(decision)).result() == decision.to_dict()


def test_a_decision_on_other_tables_carries_its_view(tmp_path):
    from moe_oracle.core.environment import Environment
    from tests.tables_fixture import load

    decision = Oracle(load(tmp_path)).select(_cfg(device=Device("cuda", capability=100)), Environment((("vllm", "0.33.0"), ("fastpkg", "1.2")), frozenset(), True, ()))
    back = pickle.loads(pickle.dumps(decision))
    assert back.ranking.view is not decision.ranking.view and back.to_dict() == decision.to_dict()


def test_a_named_view_of_other_shipped_tables_is_refused_naming_both():
    from moe_oracle.core.decision import _decision_on_shipped_view

    blob, ref = Oracle.default().select(_cfg()).__reduce__()[1]
    with pytest.raises(TableError) as info:
        _decision_on_shipped_view(blob, (ref[0], "0" * 16, ref[2]))
    assert info.value.issues[0].value == "0" * 16 and info.value.issues[0].allowed == [ref[1]]
