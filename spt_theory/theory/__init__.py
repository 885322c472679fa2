"""Layer theory: closed forms of the lemmas, one module per family: the score gradients of both
losses (``gradients``: T1, T2, T5), score directions (``patterns``: kernels, band, proximity basis),
blind directions (``blind_directions``: T3), the rank-one update of ``M`` (``rank_one``: T4) and the
single-token readout (``readout``: X4); sympy derivations (``symbolic``), the real model at uniform
attention per token (``per_token``), the exact first-order force (``force``) and T6's exact
enumeration (``bag_bayes``)."""
