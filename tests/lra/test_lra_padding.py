"""Padding masks, length bucketing, the probe and the sweep of the LRA layer, on tiny data."""

import json
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from spt_theory.analysis.probes import band_mass, offset_mass, offsets, uniform_band_mass, uniform_pattern
from spt_theory.core.model import Encoder, ModelConfig
from spt_theory.lra.__main__ import main
from spt_theory.lra.configs import LRAConfig, tiny
from spt_theory.lra.data import real_lengths
from spt_theory.lra.inputs import LRATask
from spt_theory.lra.readers.common import LISTOPS_VOCAB
from spt_theory.lra.sweep_cells import cells, label
from spt_theory.lra.tasks import config_for
from spt_theory.training.loop import epoch_batches
from synthetic import listops, pathfinder


def _padded(examples: list[torch.Tensor], width: int) -> torch.Tensor:
    x = torch.zeros(len(examples), width, dtype=torch.long)
    for row, example in enumerate(examples):
        x[row, :len(example)] = example
    return x


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "max", "last", "cls"])
@pytest.mark.parametrize("bias", ["none", "alibi"])
@given(lengths=st.lists(st.integers(1, 9), min_size=1, max_size=4), extra=st.integers(0, 4),
       seed=st.integers(0, 2**16))
def test_masked_padded_batch_gives_the_outputs_of_the_unpadded_examples(pooling, bias, lengths, extra, seed):
    """for all lengths, padding widths: logits and reconstructions of a padded batch with its key
    mask = those of each example alone (fused and explicit attention paths)."""
    torch.manual_seed(seed)
    model = Encoder(ModelConfig(vocab_size=9, n_classes=3, recon_classes=9, max_len=16, d_model=8, n_heads=2,
                                d_ff=16, pooling=pooling, attention_bias=bias)).double().eval()
    examples = [torch.randint(2, 9, (n,)) for n in lengths]
    x = _padded(examples, max(lengths) + extra)
    valid = x != 0
    alone = torch.cat([model(e[None]) for e in examples])
    explicit, _ = model.run_with_cache(x, valid=valid)
    torch.testing.assert_close(model(x, valid=valid), alone, rtol=0, atol=1e-12)
    torch.testing.assert_close(explicit, alone, rtol=0, atol=1e-12)
    rec = model.reconstruct(x, valid=valid)
    for row, e in enumerate(examples):
        torch.testing.assert_close(rec[row, :len(e)], model.reconstruct(e[None])[0], rtol=0, atol=1e-12)


def test_without_the_mask_padding_changes_the_output_and_mean_all_pools_it():
    torch.manual_seed(0)
    cfg = dict(vocab_size=9, n_classes=3, recon_classes=9, max_len=16, d_model=8, n_heads=2, d_ff=16)
    model = Encoder(ModelConfig(**cfg)).double().eval()
    x = _padded([torch.tensor([3, 4, 5])], 8)
    assert not torch.allclose(model(x), model(x[:, :3]))  # padding attended and pooled
    mean_all = Encoder(ModelConfig(**cfg, pooling="mean_all")).double().eval()
    mean_all.load_state_dict(model.state_dict())
    h = mean_all.encode(x, valid=x != 0)
    torch.testing.assert_close(mean_all.pool(h, x != 0), h.mean(1))


@given(n=st.integers(1, 300), batch=st.integers(1, 40), seed=st.integers(0, 2**16), bucketed=st.booleans())
def test_every_example_once_per_epoch_same_step_count_seeded(n, batch, seed, bucketed):
    lengths = torch.randint(1, 50, (n,), generator=torch.Generator().manual_seed(seed)) if bucketed else None
    batches = epoch_batches(n, batch, torch.Generator().manual_seed(seed), lengths)
    assert sorted(torch.cat(batches).tolist()) == list(range(n))
    assert len(batches) == -(-n // batch) and all(len(b) == batch for b in batches[:-1] if not bucketed)
    again = epoch_batches(n, batch, torch.Generator().manual_seed(seed), lengths)
    assert all(torch.equal(a, b) for a, b in zip(batches, again))


def test_bucketing_cuts_the_padding_of_a_listops_like_epoch():
    lengths = torch.randint(500, 2000, (6400,), generator=torch.Generator().manual_seed(0))
    bucketed = epoch_batches(len(lengths), 32, torch.Generator().manual_seed(1), lengths)
    plain = epoch_batches(len(lengths), 32, torch.Generator().manual_seed(1))
    work = {name: sum(len(b) * lengths[b].max().item() for b in batches)
            for name, batches in (("bucketed", bucketed), ("plain", plain))}
    assert work["bucketed"] < 0.75 * work["plain"]  # real tokens are ~2/3 of a padded plain epoch
    assert work["bucketed"] < 1.02 * lengths.sum().item()


def test_trim_and_valid_follow_the_padding_switches():
    task = LRATask(tiny(config_for("listops")), LISTOPS_VOCAB)
    x = _padded([torch.tensor([3, 4]), torch.tensor([5, 6, 7])], 6)
    assert task.trim(x).shape == (2, 3) and torch.equal(task.valid(task.trim(x)), task.trim(x) != 0)
    assert real_lengths(x, 0).tolist() == [2, 3]
    for change in ({"mask_padding": False}, {"pooling": "mean_all"}):
        other = LRATask(LRAConfig(**{**task.config.__dict__, **change}), LISTOPS_VOCAB)
        assert other.trim(x).shape == (2, 6)
    assert LRATask(LRAConfig(**{**task.config.__dict__, "mask_padding": False}), LISTOPS_VOCAB).valid(x) is None


def test_offset_mass_by_hand_and_band_mass_of_uniform_attention():
    pattern = torch.zeros(1, 1, 3, 3)
    pattern[0, 0, 0, 1] = pattern[0, 0, 1, 1] = pattern[0, 0, 2, 0] = 1.0  # offsets +1, 0, -2
    valid = torch.tensor([[True, True, False]])
    sums, queries = offset_mass(pattern, valid)
    assert queries == 2 and sums[0].tolist() == [0, 0, 1, 1, 0]  # the padded query is not counted
    full, _ = offset_mass(pattern)
    assert full[0].tolist() == [1, 0, 1, 1, 0]
    for n in (1, 2, 5, 17):
        real = torch.ones(3, n, dtype=torch.bool)
        assert band_mass(uniform_pattern(real), 2, real) == pytest.approx(uniform_band_mass(n))
        assert band_mass(uniform_pattern(real), n, real) == pytest.approx(1.0)
    random = torch.rand(2, 3, 7, 7).softmax(-1)
    assert band_mass(random, 1) == pytest.approx((random * (offsets(7) <= 1)).sum(-1).mean().item())


def test_sweep_cells_product_extra_and_scratch_normalised():
    found = cells(["recipe=scratch,spt", "keep=all,qk"], ["recipe=spt,pretrain_task=listops,keep=qk+vo"])
    assert [label(c) for c in found] == ["scratch", "spt", "spt keep=qk",
                                         "spt keep=qk+vo pretrain_task=listops"]
    for bad in (["keep=none"], ["recipe=maybe"], ["layers=0"], ["freeze=qk+nope"], ["colour=red"]):
        with pytest.raises(Exception, match="keep=none|recipe=maybe|layers=0|nope|colour"):
            cells(bad, [])


@pytest.fixture(scope="module")
def small_lra(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lra-small")
    assert listops.main(["--out", str(root / "listops-1000"), "--train", "40", "--val", "10", "--test", "12",
                         "--min-len", "5", "--max-len", "40"]) == 0
    pathfinder.write_dataset(root / "pathfinder16", 30, seed=0,
                             style=pathfinder.PathfinderStyle(size=16, contour_length=4, distractors=1,
                                                              distractor_length=2))
    return root


@pytest.mark.slow
def test_sweep_runs_reloads_probes_and_draws(small_lra, tmp_path, capsys):
    args = ["sweep", "--task", "listops", "--data-dir", str(small_lra), "--tiny", "--max-steps", "2",
            "--out", str(tmp_path), "--no-progress", "--seeds", "0", "1", "--grid", "recipe=scratch,spt",
            "--cell", "recipe=scratch,freeze=qk", "--name", "t"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "sweeps/listops-t.json").read_text())
    assert [row["label"] for row in summary["cells"]] == ["scratch", "spt", "scratch freeze=qk"]
    assert all(len(row["test_accuracy"]["per_seed"]) == 2 for row in summary["cells"])
    assert summary["cells"][1]["spt_band_ratio"]["mean"] > 0
    assert summary["data"]["padding"] == {"masked": True, "pooling": "mean", "bucketed": True}
    assert summary["data"]["source"]["origin"] == "generated"
    assert (tmp_path / "sweeps/listops-t.png").stat().st_size > 0
    first = capsys.readouterr().out
    assert "scratch freeze=qk" in first
    cached = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert main(args) == 0  # reloads: no new stage
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == cached
    assert capsys.readouterr().out == first


@pytest.mark.slow
def test_probe_reports_init_spt_finetuned_and_2d_neighbours(small_lra, tmp_path, capsys):
    common = ["--data-dir", str(small_lra), "--tiny", "--max-steps", "2", "--out", str(tmp_path),
              "--no-progress", "--set", "resolution=16", "--set", "contour_length=4"]
    assert main(["finetune", "--task", "pathfinder", *common]) == 0
    capsys.readouterr()
    assert main(["probe", str(tmp_path / "results"), "--data-dir", str(small_lra)]) == 0
    out = capsys.readouterr().out
    assert "init" in out and "spt" in out and "finetuned" in out and "2-D neighbours" in out
    report = json.loads(next((tmp_path / "probes/pathfinder").glob("spt-*.json")).read_text())
    stats = report["probes"][0]["layers"][0]
    assert 0 < sum(stats["offset_share"].values()) <= 1 + 1e-9  # offsets |delta| <= 40 of 255 kept
    assert stats["band_mass"] == pytest.approx(sum(stats["offset_share"][str(d)] for d in range(-2, 3)), abs=1e-5)
    assert stats["uniform_band_mass"] == pytest.approx(uniform_band_mass(256), abs=1e-6)
    assert stats["uniform_grid_neighbour_share"] == pytest.approx(
        sum(stats["uniform_offset_share"][d] for d in ("-16", "-1", "1", "16")), abs=1e-5)


@pytest.mark.parametrize("target, message", [("nowhere", "no such result"), (".", "no scratch/spt result")])
def test_probe_bad_target_is_one_error_line(target, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["probe", target]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["scratch", "--keep", "qk"], "--keep does nothing in 'scratch'"),
    (["scratch", "--epochs", "3"], "--epochs does nothing in 'scratch'"),
    (["scratch", "--pretrain-task", "pathfinder"], "--pretrain-task does nothing in 'scratch'"),
    (["pretrain", "--freeze", "qk"], "--freeze does nothing in 'pretrain'"),
    (["pretrain", "--finetune-epochs", "2"], "--finetune-epochs does nothing in 'pretrain'"),
    (["sweep", "--seed", "1", "--grid", "recipe=scratch"], "--seed does nothing in 'sweep' (use --seeds)"),
    (["sweep", "--grid", "keep=everything"], "keep=everything: unknown group"),
])
def test_options_a_command_would_ignore_are_errors(args, message, small_lra, tmp_path, capsys):
    code = main([*args, "--task", "listops", "--data-dir", str(small_lra), "--out", str(tmp_path), "--tiny"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "cache").exists()


def test_negative_and_repeated_seeds_are_refused_by_argparse(argparse_refusal):
    argparse_refusal(main, ["scratch", "--task", "listops", "--data-dir", ".", "--seed", "-1"],
                     "argument --seed: must be a non-negative integer, got '-1'")
    argparse_refusal(main, ["sweep", "--task", "listops", "--data-dir", ".", "--grid", "recipe=scratch",
                            "--seeds", "1", "1"], "argument --seeds: each seed once (distinct seeds)")


def test_report_compares_with_the_reference_only_at_its_setting():
    from dataclasses import asdict

    from spt_theory.lra.report import rows

    paper = asdict(config_for("pathfinder"))
    result = {"kind": "scratch", "task": "pathfinder", "seed": 0, "config": paper,
              "options": {"keep": [], "freeze": [], "tiny": False}, "metrics": {"test_accuracy": 0.7, "epochs_run": 3},
              "data": {"fingerprint": "abcdef0123", "n_test": 20000, "source": {"origin": "release"}}}
    assert rows([result])[0][5:] == ("release abcdef01", "20000", "70.00", "71.40", "-1.40")
    generated = {**result, "data": {**result["data"], "source": {"origin": "generated"}}}
    smaller = {**result, "config": {**paper, "d_model": 64}}
    assert rows([generated])[0][-1] == "-" and rows([smaller])[0][-1] == "-"


def test_probe_of_a_result_without_its_checkpoint_fields_is_one_error_line(tmp_path, capsys):
    result = {"kind": "scratch", "task": "listops", "seed": 0, "metrics": {"test_accuracy": 0.3}, "options": {}}
    (tmp_path / "scratch-x.json").write_text(json.dumps(result))
    assert main(["probe", str(tmp_path / "scratch-x.json")]) == 2
    err = capsys.readouterr().err
    assert "no field cache" in err and len(err.strip().splitlines()) == 1
