"""Files, written safely: one atomic write (temporary file, ``fsync``, ``os.replace``) for
every file memctx replaces, and the directory ``fsync`` that makes a rename durable.

A foundation, the tier just above :mod:`memctx.errors`: it imports nothing of memctx. Nothing
here is for users of the library, so ``__all__`` is empty; the other packages use the names
imported below (their internal interface).
"""

from __future__ import annotations

from .atomic import atomic_write as atomic_write
from .atomic import fsync_dir as fsync_dir
from .atomic import write_new_file as write_new_file

__all__: list[str] = []
