"""Layer util: atomic files and provenance markers, locks, progress, interrupts, tables, plotting.

The bottom layer: imports nothing of the toolkit and no torch, so the data generators
(``synthetic``) use it without the heavy parts.
"""
