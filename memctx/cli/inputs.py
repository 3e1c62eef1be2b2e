"""The transcripts a command is given: files, ``FILE#N`` and folders.

Every command that reads transcripts (``replay``, ``check``, ``calibrate``, ``foundation``)
reads its arguments here, so they all mean the same thing:

- ``FILE``: every transcript the file holds. Most files hold one; an OpenHands or nebius
  file holds several, and each is then named ``FILE#N``.
- ``FILE#N``: the file's N-th transcript, **counted from 0**, as ``memctx check`` lists them
  and as :func:`memctx.transcripts.load_transcripts` returns them. A file whose own name
  contains ``#`` is read as that file.
- ``DIR``: the transcripts in a folder. The shared datasets root (a folder holding
  ``claude-code/``, ``swe-agent/``, ``*/sample_raw.json``) is read with its layout; any other
  folder is read flat: its ``*.jsonl``, ``*.json`` and ``*.traj`` files (so the datasets'
  ``claude-code`` folder itself works too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

from memctx.transcripts import Transcript, load_transcripts

from .options import OptionError

__all__ = [
    "DATASET_PATTERNS",
    "TRANSCRIPT_ARG_HELP",
    "expand_transcript_arg",
    "folder_transcripts",
    "load_transcript_arg",
    "split_transcript_arg",
    "transcript_files",
]

TRANSCRIPT_ARG_HELP = (
    "FILE#N picks the N-th transcript of a file that holds several (counted from 0, as "
    "`memctx check` lists them); a FILE alone means all of its transcripts"
)
DATASET_PATTERNS = ("claude-code/*.jsonl", "swe-agent/*.traj", "*/sample_raw.json")
FLAT_SUFFIXES = (".jsonl", ".json", ".traj")


def split_transcript_arg(text: str) -> tuple[Path, int | None]:
    """``"FILE#N"`` as ``(FILE, N)``; ``"FILE"`` (or a file whose name holds ``#``) as
    ``(FILE, None)``.

    Raises:
        OptionError: ``FILE`` exists but what follows ``#`` is not a number from 0.
    """
    path = Path(text)
    head, sep, tail = text.rpartition("#")
    if path.exists() or not sep or not head or not Path(head).exists():
        return path, None  # a missing file is the loader's error, with its own wording
    if not (tail.isascii() and tail.isdigit()):
        raise OptionError(
            f"{text}: after '#' give the transcript's number, counted from 0 "
            f"(e.g. {Path(head).name}#0)"
        )
    return Path(head), int(tail)


def _named(transcript: Transcript, index: int) -> Transcript:
    return dataclasses.replace(transcript, source=f"{transcript.source}#{index}")


def load_transcript_arg(text: str) -> list[Transcript]:
    """The transcripts ``FILE`` or ``FILE#N`` names (see the module docstring); in a file
    holding several, each is named ``FILE#N`` (its :attr:`~Transcript.source`).

    Raises:
        TranscriptError: The file cannot be read as transcripts (the loader's message).
        OptionError: ``#N`` past the file's last transcript (the message says how many).
    """
    path, index = split_transcript_arg(text)
    found = load_transcripts(path)
    several = len(found) > 1
    if index is None:
        return [_named(t, i) for i, t in enumerate(found)] if several else found
    if index >= len(found):
        if not several:
            raise OptionError(f"{text}: the file holds one transcript; pass the file alone")
        raise OptionError(
            f"{text}: the file holds {len(found)} transcripts, #0 to #{len(found) - 1} "
            "(counted from 0); pass one of those, or the file alone for all of them"
        )
    return [_named(found[index], index)] if several else found


def _is_dataset_root(folder: Path) -> bool:
    return (
        (folder / "claude-code").is_dir()
        or (folder / "swe-agent").is_dir()
        or any(folder.glob("*/sample_raw.json"))
    )


def folder_transcripts(folder: Path) -> list[Path]:
    """The transcript files in ``folder``: the datasets root by its layout
    (:data:`DATASET_PATTERNS`), any other folder flat (its ``*.jsonl``, ``*.json``, ``*.traj``
    files), sorted."""
    if _is_dataset_root(folder):
        found: Iterable[Path] = (p for pattern in DATASET_PATTERNS for p in folder.glob(pattern))
    else:
        found = (p for p in folder.iterdir() if p.suffix in FLAT_SUFFIXES)
    return sorted(p for p in found if not p.name.startswith(".") and not p.is_dir())


def expand_transcript_arg(arg: str) -> list[tuple[str, bool]]:
    """One argument as transcript arguments for :func:`load_transcript_arg`: a folder
    becomes its files (:func:`folder_transcripts`), anything else stays as given.

    Returns:
        ``(argument, named)`` pairs in order: ``named`` is ``False`` for a file found in a
        folder (a caller may skip it when it cannot be read) and ``True`` for one the user
        named.

    Raises:
        OptionError: A folder holding no transcript file.
    """
    path = Path(arg)
    if not path.is_dir():
        return [(arg, True)]
    files = folder_transcripts(path)
    if not files:
        raise OptionError(
            f"{arg}: no transcript file in this folder (*.jsonl, *.json, *.traj, or the "
            "datasets layout claude-code/*.jsonl, swe-agent/*.traj, */sample_raw.json); "
            "pass a transcript file or a folder holding some"
        )
    return [(str(p), False) for p in files]


def transcript_files(args: Sequence[str]) -> list[tuple[str, bool]]:
    """Every argument through :func:`expand_transcript_arg`, in order."""
    return [pair for arg in args for pair in expand_transcript_arg(arg)]
