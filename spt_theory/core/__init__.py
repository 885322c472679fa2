"""Layer core: the model (one readable file), objectives, initialisations, CPU kernels, FLOPs, and
the command-line spelling of their settings."""
