"""The 2-D proximity init of W_Q, W_K (Pathfinder-16's capacity gate) and its LRA option.

At init on Pathfinder-16-shaped input (1 layer, width 64, 4 heads, FF 128; 32 generated images),
the attention's mass on the 4 grid neighbours (offsets +-1, +-16 of the flattened image) over its
uniform value: about 54 with the proximity init (alpha 3; 38 at alpha 2, 58 at 4; 64 is all the
mass on the neighbours) against 1.0 at the default init, on seeds 0-2.
"""

import numpy as np
import pytest
import torch
from helpers import _stub_train_stage, _write_lra

from spt_theory.core.inits import INIT_HOOKS, grid_offsets, grid_proximity_init
from spt_theory.core.model import Encoder, ModelConfig
from spt_theory.core.objectives import mask_continuous
from synthetic.pathfinder import PathfinderStyle, generate

SIDE = 16


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    style = PathfinderStyle(size=SIDE, contour_length=6, distractors=2, distractor_length=3, match_distances=True)
    pixels = np.stack([sample.image for sample in generate(16, seed=0, style=style)]).reshape(16, -1)
    x = torch.tensor(pixels).float() / 255.0
    return mask_continuous(x, torch.zeros_like(x, dtype=torch.bool))


def _model(seed: int) -> Encoder:
    torch.manual_seed(seed)
    return Encoder(ModelConfig(vocab_size=0, in_channels=2, n_classes=2, max_len=SIDE * SIDE, d_model=64,
                               n_heads=4, d_ff=128, n_layers=1, pooling="mean", head="linear")).eval()


@torch.no_grad()
def neighbour_ratio(model: Encoder, x: torch.Tensor) -> float:
    """Mean attention share on the 4 grid neighbours over its value under uniform attention."""
    _, cache = model.run_with_cache(x)
    pattern = cache["blocks.0.attn.pattern"].mean(dim=(0, 1))  # (n, n)
    n = pattern.shape[0]
    rows = torch.arange(n)
    neighbours = torch.zeros(n, n, dtype=torch.bool)
    for delta in grid_offsets(SIDE):
        cols = rows + delta
        inside = (cols >= 0) & (cols < n)
        neighbours[rows[inside], cols[inside]] = True
    share = (pattern * neighbours).sum(-1).mean()
    uniform = (neighbours.sum(-1).double() / n).mean()
    return float(share / uniform)


@pytest.mark.parametrize("seed", [0, 1])
def test_grid_init_attends_to_the_four_neighbours(images, seed):
    default = neighbour_ratio(_model(seed), images)
    model = _model(seed)
    grid_proximity_init(model)
    ratio = neighbour_ratio(model, images)
    assert 0.9 < default < 1.1
    assert ratio > 40  # measured about 54 (module doc)


def test_grid_init_changes_only_w_q_w_k():
    before, model = _model(0), _model(0)
    INIT_HOOKS["proxinit_grid"](model)
    changed = {name for name, p in model.state_dict().items() if not torch.equal(p, before.state_dict()[name])}
    assert "blocks.0.attn.qk.weight" in changed
    assert changed <= {"blocks.0.attn.qk.weight", "blocks.0.attn.qk.bias"}


def test_grid_init_peaks_each_head_at_its_offset(images):
    model = _model(0)
    grid_proximity_init(model)
    _, cache = model.run_with_cache(images)
    pattern = cache["blocks.0.attn.pattern"].mean(0)  # (heads, n, n)
    i = 5 * SIDE + 7  # an inner pixel
    for head, delta in enumerate(grid_offsets(SIDE)):
        assert int(pattern[head, i].argmax()) == i + delta


def test_lra_option_init_proximity_has_its_own_cache_key(tmp_path, monkeypatch):
    """``--cell recipe=scratch,init=proximity``: its own stage key, the default run's unchanged."""
    from spt_theory.lra import runner, sweep_cells

    asked = []

    _stub_train_stage(monkeypatch, lambda model, cache: asked.append((cache.key,
                                                                      model.blocks[0].attn.qk.weight.detach().clone())))
    root = _write_lra(tmp_path / "lra")
    base = runner.RunOptions(task="pathfinder", data_dir=root, tiny=True, out=tmp_path / "out", progress=False)
    [plain, proximity] = sweep_cells.cells([], ["recipe=scratch", "recipe=scratch,init=proximity"])
    assert sweep_cells.label(proximity) == "scratch init=proximity"
    for cell in (plain, proximity):
        runner.LRARun(sweep_cells.cell_options(base, cell, 0)).supervised(None)
    (plain_key, plain_qk), (prox_key, prox_qk) = asked
    assert plain_key != prox_key and not torch.equal(plain_qk, prox_qk)
    assert "init" not in runner.options_json(sweep_cells.cell_options(base, plain, 0))
    with pytest.raises(Exception, match="init=bogus"):
        sweep_cells.cells([], ["recipe=scratch,init=bogus"])


# ------------------------------------------------------------------ the 2-D init (no row wrap), issue 56
def _targets_attended(model: Encoder, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per (head, query): the attention on its 2-D target and the key it attends to most."""
    from spt_theory.core.inits import grid2d_targets

    with torch.no_grad():
        _, cache = model.run_with_cache(x)
    pattern = cache["blocks.0.attn.pattern"].double().mean(0)  # [head, query, key]
    targets = grid2d_targets(SIDE, model.cfg.n_heads)  # [head, query]
    return pattern.gather(2, targets.unsqueeze(-1)).squeeze(-1), pattern.argmax(-1)


@pytest.mark.parametrize("seed", [0, 1])
def test_grid2d_init_attends_to_the_true_neighbour_without_row_wrap(images, seed):
    """Every (head, query) attends most to its own 2-D neighbour (itself at an edge where the
    neighbour is missing) with at least 0.7 of its mass on average; the 1-D grid init sends the
    most attention of some (head, query) pairs across a row's end or to a distant pixel."""
    from spt_theory.core.inits import grid2d_proximity_init, grid2d_targets

    targets = grid2d_targets(SIDE, 4)
    old = _model(seed)
    grid_proximity_init(old)
    _, old_argmax = _targets_attended(old, images)
    assert (old_argmax != targets).sum() > 20  # the wrap and the leak this init removes
    model = _model(seed)
    grid2d_proximity_init(model)
    mass, argmax = _targets_attended(model, images)
    assert torch.equal(argmax, targets)
    assert mass.mean() > 0.7


def test_grid2d_init_changes_only_w_q_w_k_and_repeats():
    from spt_theory.core.inits import grid2d_proximity_init

    fresh, a, b = _model(3), _model(3), _model(3)
    grid2d_proximity_init(a, steps=40)  # what this checks needs no converged fit (the unit tier's time)
    grid2d_proximity_init(b, steps=40)
    for (name, before), after, again in zip(fresh.state_dict().items(), a.state_dict().values(),
                                            b.state_dict().values()):
        assert torch.equal(after, again), name  # same model, same machine: the same weights
        if "attn.qk" not in name:
            assert torch.equal(before, after), name


def test_grid2d_targets_and_neighbours_agree():
    """A target is a true neighbour, or the query itself exactly where that neighbour is missing."""
    from spt_theory.core.inits import grid2d_neighbours, grid2d_targets

    side = 5
    neighbours, targets = grid2d_neighbours(side), grid2d_targets(side, 4)
    query = torch.arange(side * side)
    on_edge = targets == query
    assert neighbours[query.expand(4, -1)[~on_edge], targets[~on_edge]].all()
    assert on_edge.sum() == 4 * side  # one missing neighbour per edge pixel and direction
    assert not neighbours[side - 1, side]  # the end of row 0 is not next to the start of row 1


def test_option_init_proximity2d_is_refused_for_token_tasks(tmp_path):
    from spt_theory.lra.runner import RunOptions
    from spt_theory.util.files import InputError

    with pytest.raises(InputError, match="proximity2d: only for image tasks"):
        RunOptions(task="listops", data_dir=tmp_path, init="proximity2d")
