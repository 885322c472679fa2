"""Layer analysis: probes of trained models and baselines, and the measurements of the lemma checks
(``lemma_harness``: instances and autograd references; ``lemma_measures``, ``walk_descent``), shared by
tasks, checks, figures and tests."""
