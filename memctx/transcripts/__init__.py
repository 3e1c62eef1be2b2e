"""Real agent transcripts as provider-format message lists: Claude Code JSONL, SWE-agent,
OpenHands, nebius, plain OpenAI/Anthropic JSON(L); and the bounded reading of every input
file a user names (regular files only, a size cap, line by line).

May import: the foundations below it (:mod:`memctx.errors`, :mod:`memctx.config`,
:mod:`memctx.messages`, :mod:`memctx.text`).
"""

from __future__ import annotations

from .files import (
    DEFAULT_MAX_INPUT_BYTES,
    MAX_INPUT_BYTES_ENV,
    SHARED_DATASETS,
    InputFile,
    InputFileError,
    InputLine,
    check_input_file,
    file_kind,
    iter_lines,
    max_input_bytes,
    open_input_file,
    read_input_bytes,
    shared_datasets_dir,
)
from .load import FORMATS, Transcript, Usage, load_transcript, load_transcripts

__all__: list[str] = []
