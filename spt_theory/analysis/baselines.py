"""Baselines that see the sequence only through mean-pooled per-token features.

Bag of tokens (E1): an MLP on token histograms, blind to order by construction,

    z = W_2 ReLU(W_1 (h / n) + b_1) + b_2,    h_v = #{i : x_i = v}.

Any permutation-invariant readout of the sequence is a function of h, so if this model is at
chance on a task with enough data, the task does not leak its label through token counts (T6).

Bag of (token, position) pairs (E1b): the same readout on

    u = (1/n) sum_i onehot(x_i, i) in R^{V n},

the mean-pooled features of a model whose tokens do not interact (uniform attention, T7): every
mean-pooled per-token feature (1/n) sum_i phi(x_i, i) is a linear function ``Phi u`` of it.  T7 says a
linear readout of ``u`` gets no first-order label signal on the walk task (equal class means); a
nonlinear readout can still separate the classes, e.g. through the quadratic statistic
:func:`diagonal_concentration_rule`.
"""

from __future__ import annotations

import torch
from torch import nn

from synthetic.walk import token_histogram


def pair_features(x: torch.Tensor, vocab: int) -> torch.Tensor:
    r"""``u = (1/n) sum_i onehot(x_i n + i)``: the mean-pooled one-hot of the (token, position) pair.

    Parameters
    ----------
    x : Tensor [batch, n], long
        Token sequences.
    vocab : int
        Tokens ``V``.

    Returns
    -------
    Tensor [batch, V * n], float32
        ``u``; entry ``v n + i`` is ``1/n`` if ``x_i = v``.

    References
    ----------
    proofs/T7_per_token_blindness.md (E1b).

    Examples
    --------
    >>> pair_features(torch.tensor([[1, 0]]), 2).tolist()  # (token 1, pos 0), (token 0, pos 1)
    [[0.0, 0.5, 0.5, 0.0]]
    """
    n = x.shape[1]
    index = x * n + torch.arange(n)
    return torch.zeros(x.shape[0], vocab * n).scatter_add_(1, index, torch.ones_like(index, dtype=torch.float32)) / n


def diagonal_concentration_rule(x: torch.Tensor, vocab: int) -> torch.Tensor:
    r"""Predict ``y = 1{sum_c N_-(c)^2 > sum_c N_+(c)^2}`` with ``N_-+(c) = #{i : x_i -+ i = c (mod V)}``.

    A run of +1 steps keeps ``x_i - i`` constant, a run of -1 steps keeps ``x_i + i`` constant, so
    the class-1 walk concentrates ``x_i - i``.  Both counts are sums along diagonals of the
    (token, position mod V) table, i.e. linear in :func:`pair_features`; the rule is quadratic in it.

    Parameters
    ----------
    x : Tensor [batch, n], long
        Token sequences.
    vocab : int
        Tokens ``V``.

    Returns
    -------
    Tensor [batch], long
        The predicted class.

    References
    ----------
    proofs/T7_per_token_blindness.md (E1b).

    Examples
    --------
    >>> diagonal_concentration_rule(torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0]]), 4).tolist()
    [1, 0]
    """
    i = torch.arange(x.shape[1])

    def concentration(codes: torch.Tensor) -> torch.Tensor:
        counts = torch.zeros(x.shape[0], vocab).scatter_add_(1, codes, torch.ones_like(codes, dtype=torch.float32))
        return (counts ** 2).sum(dim=1)

    return (concentration((x - i) % vocab) > concentration((x + i) % vocab)).long()


def train_feature_classifier(f_train: torch.Tensor, y_train: torch.Tensor, f_test: torch.Tensor,
                             y_test: torch.Tensor, *, hidden: int | None = 64, epochs: int = 30,
                             lr: float = 3e-3, batch_size: int = 128, seed: int = 0) -> dict:
    """Train a readout of fixed features with Adam on CE and report its train and test accuracy.

    The features are standardised with the training set's mean and standard deviation; the readout
    is ``W_2 ReLU(W_1 f + b_1) + b_2`` (``hidden=None``: a linear readout ``W f + b``).

    Parameters
    ----------
    f_train : Tensor [batch, feature]
        Training features.
    y_train : Tensor [batch], long
        Training labels.
    f_test : Tensor [batch_test, feature]
        Test features.
    y_test : Tensor [batch_test], long
        Test labels.
    hidden : int or None
        Width of the hidden layer; ``None`` for a linear readout.
    epochs : int
        Passes over the training set.
    lr : float
        Adam's learning rate.
    batch_size : int
        Minibatch size.
    seed : int
        Seeds the initialisation and the shuffling.

    Returns
    -------
    dict
        ``{"train_accuracy": float, "test_accuracy": float}``.

    References
    ----------
    proofs/T6_bag_invariance.md (E1), proofs/T7_per_token_blindness.md (E1b).
    """
    torch.manual_seed(seed)
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    mean, std = f_train.mean(0), f_train.std(0).clamp_min(1e-6)
    f_train, f_test = (f_train - mean) / std, (f_test - mean) / std
    width = f_train.shape[1]
    model = (nn.Linear(width, n_classes) if hidden is None else
             nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, n_classes)))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(f_train), generator=gen)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            loss = nn.functional.cross_entropy(model(f_train[idx]), y_train[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        return {"train_accuracy": (model(f_train).argmax(-1) == y_train).float().mean().item(),
                "test_accuracy": (model(f_test).argmax(-1) == y_test).float().mean().item()}


def train_bag_of_tokens(x_train: torch.Tensor, y_train: torch.Tensor, x_test: torch.Tensor,
                        y_test: torch.Tensor, vocab: int, *, epochs: int = 30, hidden: int = 64,
                        lr: float = 3e-3, batch_size: int = 128, seed: int = 0) -> dict:
    """The E1 baseline: the histogram MLP (features ``h / n``) trained with Adam.

    Parameters
    ----------
    x_train : Tensor [batch, n], long
        Training sequences.
    y_train : Tensor [batch], long
        Training labels.
    x_test : Tensor [batch_test, n], long
        Test sequences.
    y_test : Tensor [batch_test], long
        Test labels.
    vocab : int
        Tokens ``V``.
    hidden : int
        Width of the hidden layer.
    epochs : int
        Passes over the training set.
    lr : float
        Adam's learning rate.
    batch_size : int
        Minibatch size.
    seed : int
        Seeds the initialisation and the shuffling.

    Returns
    -------
    dict
        ``{"train_accuracy": float, "test_accuracy": float}``.

    References
    ----------
    proofs/T6_bag_invariance.md (E1).
    """
    return train_feature_classifier(token_histogram(x_train, vocab) / x_train.shape[1], y_train,
                                    token_histogram(x_test, vocab) / x_test.shape[1], y_test,
                                    hidden=hidden, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed)


def train_bag_of_pairs(x_train: torch.Tensor, y_train: torch.Tensor, x_test: torch.Tensor,
                       y_test: torch.Tensor, vocab: int, *, hidden: int | None = 64, epochs: int = 10,
                       seed: int = 0) -> dict:
    """The E1b baseline: :func:`train_feature_classifier` on :func:`pair_features`.

    Parameters
    ----------
    x_train : Tensor [batch, n], long
        Training sequences.
    y_train : Tensor [batch], long
        Training labels.
    x_test : Tensor [batch_test, n], long
        Test sequences.
    y_test : Tensor [batch_test], long
        Test labels.
    vocab : int
        Tokens ``V``.
    hidden : int or None
        Width of the hidden layer; ``None`` for a linear readout (T7: no first-order label signal).
    epochs : int
        Passes over the training set.
    seed : int
        Seeds the initialisation and the shuffling.

    Returns
    -------
    dict
        ``{"train_accuracy": float, "test_accuracy": float}``.

    References
    ----------
    proofs/T7_per_token_blindness.md (E1b).
    """
    return train_feature_classifier(pair_features(x_train, vocab), y_train, pair_features(x_test, vocab), y_test,
                                    hidden=hidden, epochs=epochs, seed=seed)
