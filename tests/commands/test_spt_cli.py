"""The ``spt`` launcher (spt_theory/cli.py): one console script whose subcommands are the project's
``python -m`` command lines, their arguments, output and exit status untouched."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
import types

import pytest
import tomllib
from helpers import REPO

from spt_theory import cli
from spt_theory.util.interrupts import interrupted_line, interruptible

NAMES = ["verify", "train", "lra", "plateau", "figures", "bench", "paper-runs", "listops", "pathfinder"]


def _python(*args: str) -> subprocess.CompletedProcess:
    """``python ARGS`` in the repository root (so that this tree's package is the one imported)."""
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_the_console_script_is_declared():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["spt"] == "spt_theory.cli:main"
    module, function = project["scripts"]["spt"].split(":")
    assert getattr(importlib.import_module(module), function) is cli.main


def test_help_lists_every_command_with_one_line(capsys):
    assert list(cli.COMMANDS) == NAMES
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: spt COMMAND")
    for name, command in cli.COMMANDS.items():
        assert command.summary and "\n" not in command.summary
        assert any(line.split()[:1] == [name] and command.summary in line for line in out.splitlines()), name


@pytest.mark.slow
def test_no_arguments_is_usage_on_stderr_exit_2():
    done = _python("-m", "spt_theory.cli")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == cli.usage()


@pytest.mark.slow
def test_an_unknown_command_is_one_line_exit_2():
    done = _python("-m", "spt_theory.cli", "nope", "--only", "T1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: unknown command 'nope' (commands: {', '.join(NAMES)})\n"


@pytest.mark.slow
def test_help_does_not_import_torch():
    done = _python("-c", "import sys, spt_theory.cli as c; code = c.main(['--help']); "
                         "heavy = [m for m in ('torch', 'numpy', 'spt_theory.verify') if m in sys.modules]; "
                         "print(code, heavy, c.__file__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("0 [] "), done.stdout
    assert str(REPO / "spt_theory" / "cli.py") in done.stdout


@pytest.mark.parametrize("name", NAMES)
def test_each_command_shows_its_own_help_named_spt(name, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "10000")  # no wrapping: the two helps differ only in the name
    command = cli.COMMANDS[name]
    with pytest.raises(SystemExit) as own:
        importlib.import_module(command.module).main(["--help"])
    expected = capsys.readouterr().out
    with pytest.raises(SystemExit) as via_spt:
        cli.main([name, "--help"])
    out = capsys.readouterr().out
    assert own.value.code == via_spt.value.code == 0
    assert expected.startswith(f"usage: {command.spelling} ")
    assert out == expected.replace(f"usage: {command.spelling} ", f"usage: spt {name} ", 1)


def test_a_subcommand_of_lra_keeps_its_own_help(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["lra", "sweep", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: spt lra sweep ") and "--grid" in out


def test_bad_arguments_are_the_module_s_own_error_named_spt(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["verify", "--no-such-option"])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "spt verify: error: unrecognized arguments: --no-such-option"
    with pytest.raises(SystemExit):  # outside spt, the python -m name again
        importlib.import_module("spt_theory.verify").main(["--no-such-option"])
    assert capsys.readouterr().err.startswith("usage: python -m spt_theory.verify ")


@pytest.mark.slow
def test_verify_through_spt_is_verify(capsys):
    from spt_theory import verify

    argv = ["--only", "T1", "--no-progress"]
    direct = verify.main(list(argv))
    direct_out = capsys.readouterr().out
    via_spt = cli.main(["verify", *argv])
    spt_out = capsys.readouterr().out
    assert via_spt == direct == 0
    timeless = lambda text: [line for line in text.splitlines() if " claims in " not in line]  # noqa: E731
    assert timeless(spt_out) == timeless(direct_out) and "T1" in spt_out


def test_arguments_and_interrupt_statuses_pass_through(monkeypatch, capsys):
    seen = []

    @interruptible
    def main(argv):
        seen.append(argv)
        if argv == ["--stop"]:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here
        return 7

    monkeypatch.setitem(sys.modules, "spt_fake_command", types.SimpleNamespace(main=main))
    monkeypatch.setitem(cli.COMMANDS, "fake", cli.Command("spt_fake_command", "python -m fake", "a stub"))
    assert cli.main(["fake", "--only", "T1", "--", "-x"]) == 7
    assert cli.main(["fake", "--stop"]) == 143
    assert seen == [["--only", "T1", "--", "-x"], ["--stop"]]
    assert capsys.readouterr().err.strip() == interrupted_line(signal.SIGTERM)
