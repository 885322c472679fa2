"""Layer theory: closed forms of the lemmas (``lemmas``), sympy derivations (``symbolic``), the
real model at uniform attention per token (``per_token``), the exact first-order force (``force``) and
T6's exact enumeration (``bag_bayes``)."""
