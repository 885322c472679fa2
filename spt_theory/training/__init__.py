"""Layer training: the one training loop (``loop``), its run cache (``cache``) and recipes as data
(``recipes``)."""
