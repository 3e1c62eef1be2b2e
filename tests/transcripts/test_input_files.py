"""Reading the files a user names: regular files only, a size cap, bounded lines, and error
messages that name the path, line and byte offset but never quote the file."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest
from helpers.files import make_fifo

from memctx.errors import TranscriptError
from memctx.transcripts import (
    DEFAULT_MAX_INPUT_BYTES,
    MAX_INPUT_BYTES_ENV,
    InputFileError,
    check_input_file,
    iter_lines,
    load_transcript,
    load_transcripts,
    max_input_bytes,
    read_input_bytes,
)

SECRET = "hunter2-SECRET-VALUE-9f8e7d"


@pytest.mark.timeout(30)
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    # Opening a FIFO for reading blocks until a writer comes: it must never be opened.
    with pytest.raises(
        TranscriptError, match=r"pipe\.jsonl: cannot read the transcript: it is a FIFO"
    ):
        load_transcripts(make_fifo(tmp_path))


@pytest.mark.timeout(30)
def test_a_device_is_refused_before_it_is_read() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(TranscriptError, match="it is a character device, not a regular file"):
        load_transcript("/dev/zero")


@pytest.mark.timeout(30)
def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    link = tmp_path / "session.jsonl"
    link.symlink_to("/dev/zero")
    with pytest.raises(TranscriptError, match="character device"):
        load_transcript(link)


@pytest.mark.timeout(30)
def test_directories_and_sockets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="cannot read the transcript: it is a directory"):
        load_transcripts(tmp_path)
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
    except OSError:  # a path too long for a socket name
        pytest.skip("cannot bind a unix socket here")
    try:
        with pytest.raises(TranscriptError, match="it is a socket"):
            load_transcripts(path)
    finally:
        server.close()


def test_a_missing_file_says_so_and_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"cannot read the transcript: No such file.*check"):
        load_transcripts(tmp_path / "nope.jsonl")


def _chat(n: int) -> str:
    return "".join(json.dumps({"role": "user", "content": f"m{i}"}) + "\n" for i in range(n))


def test_the_size_cap_names_itself_and_how_to_raise_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(_chat(50), encoding="utf-8")
    size = path.stat().st_size
    assert len(load_transcript(path, max_bytes=size).messages) == 50
    with pytest.raises(
        TranscriptError, match=f"larger than the .* input limit.*{MAX_INPUT_BYTES_ENV}"
    ):
        load_transcript(path, max_bytes=size - 1)
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "1K")
    assert max_input_bytes() == 1024
    with pytest.raises(TranscriptError, match=f"1 KiB input limit.*{MAX_INPUT_BYTES_ENV}=2G"):
        load_transcript(path)
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "10M")
    assert len(load_transcript(path).messages) == 50
    for bad in ("lots", "-5", "0", "1.5G"):
        monkeypatch.setenv(MAX_INPUT_BYTES_ENV, bad)
        with pytest.raises(InputFileError, match=f"{MAX_INPUT_BYTES_ENV}=.*is not a size"):
            load_transcript(path)
    monkeypatch.delenv(MAX_INPUT_BYTES_ENV)
    assert max_input_bytes() == DEFAULT_MAX_INPUT_BYTES == 512 * 1024**2
    with pytest.raises(InputFileError, match="max_bytes must be a positive"):
        load_transcript(path, max_bytes=0)


def test_one_endless_line_is_cut_at_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "line.jsonl"
    path.write_bytes(b"a" * 100_000)  # no newline at all
    with pytest.raises(TranscriptError, match="input limit"):
        load_transcripts(path, max_bytes=10_000)


class _Recording(io.BytesIO):
    """A stream that records how much each readline asked for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int] = []

    def readline(self, size: int | None = -1, /) -> bytes:
        self.asked.append(-1 if size is None else size)
        return super().readline(size)


def test_lines_are_read_one_at_a_time_never_past_the_cap() -> None:
    stream = _Recording(b'{"a": 1}\n' * 5 + b"x" * 1000)
    lines = iter_lines(stream, source="s", limit=200)
    first = next(lines)
    assert (first.number, first.offset, first.text) == (1, 0, '{"a": 1}\n')
    assert stream.tell() == 9  # one line read, not the whole stream
    with pytest.raises(InputFileError, match="input limit"):
        list(lines)
    assert all(0 < size <= 201 for size in stream.asked)
    assert stream.tell() <= 201


def test_invalid_utf8_names_the_line_and_byte_offset_not_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(_chat(2).encode() + b'{"role": "user", "content": "\xff\xfe"}\n')
    offset = len(_chat(2).encode()) + len(b'{"role": "user", "content": "')
    with pytest.raises(TranscriptError, match=f"invalid byte at line 3, byte offset {offset}"):
        load_transcripts(path)


def _secret_files(tmp_path: Path) -> list[Path]:
    """Files whose content is a secret in every shape the loader could echo."""
    texts = {
        "passwd": f"root:{SECRET}:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin\n",
        "jsonl_bad_line": f'{{"a": 1}}\n{SECRET} not json\n',
        "json_keys": json.dumps({SECRET: 1, "other": 2}),
        "json_list_keys": json.dumps([{SECRET: 1}]),
        "jsonl_no_messages": json.dumps({SECRET: 1}) + "\n" + json.dumps({"k": SECRET}) + "\n",
        "unknown_roles": json.dumps([{"role": SECRET, "content": "x"}]),
        "claude_types": json.dumps({"type": "system", "subtype": SECRET, "uuid": "u"}),
        "torn_json": '{"messages": [{"role": "user", "content": "' + SECRET,
        "long_line": SECRET * 1000,
    }
    paths = []
    for name, text in texts.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def test_errors_never_quote_the_file(tmp_path: Path) -> None:
    for path in _secret_files(tmp_path):
        with pytest.raises(TranscriptError) as info:
            load_transcripts(path)
        message = str(info.value)
        assert str(path) in message
        assert SECRET not in message and SECRET[:8] not in message, (path.name, message)
        assert "root:" not in message


def test_a_symlink_to_a_system_file_is_not_quoted(tmp_path: Path) -> None:
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd")
    link = tmp_path / "session.jsonl"
    link.symlink_to(passwd)
    with pytest.raises(TranscriptError) as info:
        load_transcript(link)
    first = passwd.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    assert first[:12] not in str(info.value)
    assert "line 1 (byte offset 0)" in str(info.value)


def test_check_input_file_and_read_input_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"12345")
    assert check_input_file(path) == 5
    assert read_input_bytes(path) == b"12345"
    with pytest.raises(InputFileError, match="larger than the 4 bytes input limit"):
        read_input_bytes(path, max_bytes=4)
    with pytest.raises(InputFileError, match="it is a directory"):
        check_input_file(tmp_path, what="config")
