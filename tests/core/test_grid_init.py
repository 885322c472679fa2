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
