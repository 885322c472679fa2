"""Layer analysis: probes of trained models and baselines, shared by tasks, checks and figures."""
