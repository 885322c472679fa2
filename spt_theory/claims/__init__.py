"""Layer claims: the registry (``registry``: ``@claim``, ``Context``, ``Measurement``) and the one
table of claims with their records (``records``).  The checks live in :mod:`spt_theory.checks`."""
