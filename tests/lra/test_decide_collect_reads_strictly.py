"""``lra decide collect`` reads the sweep summaries with the evidence's strict reader (issue 57,
item 7): a 5,000-digit seed, 100,000 nested brackets, a key twice, a FIFO or a summary over the
size cap are each one ``error:`` line naming the file, exit 2, never a traceback or a hang, and
nothing is collected."""

import pytest

from spt_theory.evidence import strict
from spt_theory.lra.__main__ import main

NAME = "pathfinder-decide-l1b-s100.json"


def _collect(tmp_path, capsys):
    code = main(["decide", "collect", "--experiment", "l1b", "--out", str(tmp_path)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("text, words", [
    ('{"seeds": [' + "7" * 5000 + "]}", ["5000 digits"]),
    ("[" * 100_000 + "]" * 100_000, ["nested deeper"]),
    ('{"name": "decide-l1b-s100", "name": "decide-l1b-s100", "seeds": [100]}', ["'name' appears twice"]),
], ids=["5000-digit seed", "100000 brackets", "key twice"])
def test_a_malformed_sweep_summary_is_one_error_line(tmp_path, capsys, error_line, text, words):
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / NAME).write_text(text)
    code, err = _collect(tmp_path, capsys)
    assert code == 2 and "Traceback" not in err, err
    error_line(err, NAME, *words)
    assert not (tmp_path / "decide").exists()


def test_a_sweep_summary_over_the_cap_is_refused_before_it_is_read(tmp_path, capsys, error_line):
    (tmp_path / "sweeps").mkdir()
    with open(tmp_path / "sweeps" / NAME, "wb") as file:
        file.truncate(3 << 30)  # sparse: 3 GB on paper, nothing on disk
    code, err = _collect(tmp_path, capsys)
    assert code == 2
    error_line(err, NAME, str(3 << 30), str(strict.MAX_BYTES))
