"""Files, written safely: one atomic write (temporary file, ``fsync``, ``os.replace``) for
every file memctx replaces, the directory ``fsync`` that makes a rename durable, and paths
below a store opened without following any symlink there (:mod:`memctx.fs.beneath`).

A foundation, the tier just above :mod:`memctx.errors`: it imports nothing of memctx. Nothing
here is for users of the library, so ``__all__`` is empty; the other packages use the names
imported below (their internal interface).
"""

from __future__ import annotations

from .atomic import atomic_write as atomic_write
from .atomic import atomic_write_beneath as atomic_write_beneath
from .atomic import fsync_dir as fsync_dir
from .atomic import write_new_file as write_new_file
from .beneath import NOFOLLOW as NOFOLLOW
from .beneath import check_single_link as check_single_link
from .beneath import note_refusal as note_refusal
from .beneath import open_beneath as open_beneath
from .beneath import open_dir_beneath as open_dir_beneath
from .beneath import refusals_under as refusals_under

__all__: list[str] = []
