"""Masking and losses: Bernoulli rate, masked positions only, continuous two-channel input."""

import pytest
import torch

from spt_theory.core.objectives import bernoulli_mask, mask_continuous, mask_tokens, masked_l1_loss, masked_token_loss


def test_bernoulli_mask_rate():
    mask = bernoulli_mask((400, 100), 0.15, torch.Generator().manual_seed(0))
    assert abs(mask.float().mean().item() - 0.15) < 0.005


@pytest.mark.parametrize("ratio", [-0.1, 1.0, 1.5])
def test_mask_ratio_outside_unit_interval_is_refused(ratio):
    with pytest.raises(ValueError, match="mask ratio"):
        bernoulli_mask((2, 2), ratio, torch.Generator())


def test_loss_only_on_masked_positions():
    x = torch.tensor([[1, 2, 3, 4]])
    mask = torch.tensor([[False, True, False, True]])
    logits = torch.randn(1, 4, 6, requires_grad=True)
    masked_token_loss(logits, x, mask).backward()
    assert logits.grad[0, 0].abs().sum() == 0 and logits.grad[0, 2].abs().sum() == 0
    assert logits.grad[0, 1].abs().sum() > 0
    assert mask_tokens(x, mask, 9).tolist() == [[1, 9, 3, 9]]


def test_continuous_masking_and_l1():
    x = torch.tensor([[0.5, -1.0, 2.0]])
    mask = torch.tensor([[False, True, True]])
    two = mask_continuous(x, mask)
    assert two.tolist() == [[[0.5, 0.0], [-0.0, 1.0], [0.0, 1.0]]]
    prediction = torch.tensor([[[9.0], [0.0], [1.0]]])
    assert masked_l1_loss(prediction, x, mask).item() == pytest.approx((1.0 + 1.0) / 2)
