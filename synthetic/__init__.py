"""Data generators: the walk-direction proximity task, and LRA's ListOps and Pathfinder."""
