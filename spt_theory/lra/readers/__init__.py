"""Readers for the five LRA tasks in the release layout, returning int64 tensors: one module per
format (:mod:`~spt_theory.lra.readers.listops`, :mod:`~spt_theory.lra.readers.text`,
:mod:`~spt_theory.lra.readers.retrieval`, :mod:`~spt_theory.lra.readers.image` with its restricted
unpickler :mod:`~spt_theory.lra.readers.unpickler`, :mod:`~spt_theory.lra.readers.pathfinder`), what
they share in :mod:`~spt_theory.lra.readers.common`; the reader of each task is registered with
it in :mod:`spt_theory.lra.tasks`.

Every reader takes the data root (``--data-dir``) and a split name and returns an ``LRASplit``
(``LRAPairSplit`` for Retrieval): ``inputs`` (N, L) padded with the vocabulary's pad id to the
longest example (at most ``max_len``; longer examples are truncated, as in LRA), ``labels`` (N,),
``lengths`` (N,), and the ``Vocabulary``.

Token ids:
- ListOps: ``<pad>`` 0, ``<mask>`` 1, digits ``0``-``9`` 2-11, ``[MIN`` 12, ``[MAX`` 13, ``[MED`` 14,
  ``[SM`` 15, ``]`` 16 (17 ids); parentheses are dropped.
- Text, Retrieval: ``<pad>`` 0, ``<mask>`` 1, byte ``b`` (UTF-8) is ``b + 2`` (258 ids).
- Image, Pathfinder: the pixel intensity 0-255 itself (256 ids, no specials; every example is
  1024 long).

A missing file raises ``InputError`` naming the expected path and layout; a malformed line, label,
image or batch raises ``InputError`` naming the file (and line).  The count read is logged.

A path taken from inside the data (a Pathfinder metadata line, a file of an IMDb folder, the files
a Hugging Face copy lists) must stay under the folder it was found in: an absolute path, a ``..``
or a symbolic link leading out raises ``InputError`` naming the file and line, and the file it
points at is never opened (:func:`~spt_theory.lra.readers.common.inside`).
"""
