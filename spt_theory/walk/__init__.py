"""Task walk: the walk-task runs (``experiments``) and the paper-sized runs (``paper_runs``)."""
