"""The bag-of-tokens baseline: an MLP on token histograms, blind to order by construction.

    z = W_2 ReLU(W_1 (h / n) + b_1) + b_2,    h_v = #{i : x_i = v}

Any permutation-invariant readout of the sequence is a function of h, so if this model is at
chance on a task with enough data, the task does not leak its label through token counts (T6).
"""

from __future__ import annotations

import torch
from torch import nn

from synthetic.walk import token_histogram


def train_bag_of_tokens(x_train: torch.Tensor, y_train: torch.Tensor, x_test: torch.Tensor,
                        y_test: torch.Tensor, vocab: int, *, epochs: int = 30, hidden: int = 64,
                        lr: float = 3e-3, batch_size: int = 128, seed: int = 0) -> dict:
    """Train the histogram MLP with Adam; returns train and test accuracy."""
    torch.manual_seed(seed)
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    model = nn.Sequential(nn.Linear(vocab, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))
    h_train = token_histogram(x_train, vocab) / x_train.shape[1]
    h_test = token_histogram(x_test, vocab) / x_test.shape[1]
    mean, std = h_train.mean(0), h_train.std(0).clamp_min(1e-6)
    h_train, h_test = (h_train - mean) / std, (h_test - mean) / std
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(h_train), generator=gen)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            loss = nn.functional.cross_entropy(model(h_train[idx]), y_train[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        return {"train_accuracy": (model(h_train).argmax(-1) == y_train).float().mean().item(),
                "test_accuracy": (model(h_test).argmax(-1) == y_test).float().mean().item()}
