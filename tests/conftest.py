"""Shared fixtures: tiny walk data and model sizes so every test runs in well under a second."""

import os
import signal

import pytest
from hypothesis import settings

from spt_theory.analysis.lemma_harness import single_threaded
from spt_theory.walk.experiments import WalkData

settings.register_profile("spt", max_examples=60, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "spt"))

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # A suite started as a background job (``pytest &``, ``nohup``) inherits SIGINT ignored, and the
    # commands rightly keep an ignored signal ignored; the tests of Ctrl-C stand for a terminal, so
    # their child processes start with SIGINT at its default (a Python handler resets on exec).
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def tiny_walk() -> WalkData:
    return WalkData(vocab=5, length=12, p=0.9, n_train=96, n_test=32)


@pytest.fixture
def tiny_model_overrides() -> dict:
    return dict(d_model=16, n_heads=2, d_ff=32)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small float64 tensors: one torch thread is much faster than two on a busy 2-core machine."""
    with single_threaded():
        yield


@pytest.fixture
def argparse_refusal(capsys):
    """``check(main, argv, *words)``: ``main(argv)`` is refused by argparse itself (a ``type=`` check
    of :mod:`spt_theory.core.args`): SystemExit 2, the usage, then one ``error: argument --X: ...``
    line naming every one of ``words``; nothing on stdout.  Returns that line."""
    def check(main, argv, *words) -> str:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert exit_info.value.code == 2 and lines[0].startswith("usage:") and captured.out == "", captured
        assert "error: argument " in lines[-1] and "Traceback" not in captured.err, captured.err
        for word in words:
            assert word in lines[-1], (word, lines[-1])
        return lines[-1]

    return check


@pytest.fixture
def error_line():
    """``check(err, *words)``: ``err`` is one ``error:`` line (lines saying a folder was created
    aside) holding every one of ``words``."""
    def check(err: str, *words: str) -> None:
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith("created folder")]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        for word in words:
            assert word in lines[0], (word, err)

    return check
