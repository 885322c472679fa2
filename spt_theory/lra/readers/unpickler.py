"""The restricted unpickler of the CIFAR-10 python batches (:mod:`spt_theory.lra.readers.image`):
plain containers and numpy arrays only, no code named by the file imported or called."""

from __future__ import annotations

import pickle

import numpy as np

try:  # numpy >= 2
    from numpy._core.multiarray import _reconstruct
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]  # numpy 1.x: the same function


def _latin1_bytes(text, encoding="utf-8"):
    """What Python 3 pickles a ``bytes`` object into under protocols 0-2 (``_codecs.encode(text,
    "latin1")``), and nothing else ``codecs.encode`` could do (other codecs decompress or run)."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"refusing _codecs.encode of a {type(text).__name__} with codec "
                                     f"{encoding!r} (only latin1 text to bytes)")
    return text.encode("latin-1")


def _array_from_buffer(buffer, dtype, shape, order):
    """numpy's pickle-protocol-5 constructor (``_frombuffer``), for plain (non-object) arrays only."""
    if not isinstance(buffer, (bytes, bytearray, pickle.PickleBuffer)):
        raise pickle.UnpicklingError(f"refusing _frombuffer of a {type(buffer).__name__}")
    if not isinstance(dtype, np.dtype) or dtype.hasobject or order not in ("C", "F"):
        raise pickle.UnpicklingError(f"refusing _frombuffer with dtype {dtype!r}, order {order!r}")
    array = np.frombuffer(buffer, dtype=dtype)  # type: ignore[arg-type]  # PickleBuffer: numpy's stubs omit it
    return array.reshape(shape, order=order)


def _empty_array(subtype, shape, dtype):
    """numpy's pickle constructor (``_reconstruct``) as numpy's own pickles call it: an empty
    ``ndarray`` that ``__setstate__`` then fills.  Any other call is refused: a pickled shape could
    ask for an array of any size, filled (object dtype) before anything checks it."""
    if subtype is not np.ndarray or shape != (0,):
        raise pickle.UnpicklingError(f"refusing _reconstruct of a {getattr(subtype, '__name__', subtype)!s} "
                                     f"of shape {shape!r} (only an empty ndarray)")
    return _reconstruct(subtype, shape, dtype)


_NUMPY_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _empty_array,
    ("numpy._core.multiarray", "_reconstruct"): _empty_array,
    ("numpy.core.numeric", "_frombuffer"): _array_from_buffer,  # protocol 5 (numpy >= 1.16)
    ("numpy._core.numeric", "_frombuffer"): _array_from_buffer,
    ("_codecs", "encode"): _latin1_bytes,  # bytes under protocols 0-2 written by Python 3
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}


class CifarUnpickler(pickle._Unpickler):
    """Unpickler that builds only plain containers and numpy arrays: any other global is refused,
    so no code named by the file is ever imported or called.  The pure-Python unpickler, on the
    file's bytes in memory: its memo is a dict and every read is bounded by the file, where the C
    one would allocate a memo as long as any index the file names (``LONG_BINPUT 2**30``: 8 GB)."""

    def find_class(self, module: str, name: str):
        try:
            return _NUMPY_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}") from None

