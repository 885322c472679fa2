"""Layer theory: closed forms of the lemmas (``lemmas``), sympy derivations (``symbolic``), the
real model at uniform attention per token (``per_token``) and the exact first-order force (``force``)."""
