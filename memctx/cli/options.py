"""What the commands share: ``--config``/``--set`` settings, option checks, the one-line error.

Every error the command line prints is one line, ``memctx: error: <problem>; <fix>``, on
stderr, with exit status 2 (bad input); argparse's own usage errors look the same.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memctx.errors import MemctxError

if TYPE_CHECKING:
    from memctx.config import MemoryContextConfig

__all__ = [
    "CONFIG_HELP",
    "ERROR_STATUS",
    "OptionError",
    "check_llm_credentials",
    "config_from_args",
    "describe_os_error",
    "existing_dir",
    "fail",
    "one_line",
    "parse_set",
    "positive",
]

ERROR_STATUS = 2


class OptionError(MemctxError, ValueError):
    """A command-line option has a bad value (the message names the option and the fix)."""


def one_line(message: str) -> str:
    """``message`` on one line: its non-blank lines joined with ``"; "`` (with a space after
    a line that ends in a colon, which introduces the next)."""
    out = ""
    for line in (line.strip() for line in str(message).splitlines()):
        if line:
            out += ("" if not out else " " if out.endswith(":") else "; ") + line
    return out


def fail(message: str) -> int:
    """Print ``memctx: error: <message>`` on stderr; return the exit status 2."""
    print(f"memctx: error: {one_line(message)}", file=sys.stderr)
    return ERROR_STATUS


def describe_os_error(exc: OSError) -> str:
    """An :class:`OSError` as a message naming the file, the problem and the fix."""
    reason = exc.strerror or type(exc).__name__
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{reason}; check the path and its permissions"


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def parse_set(items: Sequence[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` items as a dict; a value that is JSON is parsed (``2000``,
    ``true``, ``[1, 2]``), anything else stays a string.

    Raises:
        OptionError: An item without ``=`` or with an empty key (the message shows the form).
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            shown = item if len(item) <= 60 else f"{item[:57]}..."
            raise OptionError(f"--set {shown!r}: expected KEY=VALUE, e.g. --set hardCapTokens=2000")
        out[key.strip()] = _parse_value(value.strip())
    return out


CONFIG_HELP = (
    "settings file: memctx .toml / .json / .json5, or an agent's openclaw.json (its "
    "agents.defaults.memoryContext, .compaction, .contextPruning and .memorySearch); "
    "--set applies on top (docs/configuration.md lists every setting)"
)


def config_from_args(config_file: str | None, sets: Sequence[str] | None) -> MemoryContextConfig:
    """The settings of a command: ``--config FILE`` read by :func:`memctx.config.load_config`
    (the one reader of config files, with its line and column errors), then each ``--set
    KEY=VALUE`` on top (:meth:`~memctx.config.MemoryContextConfig.with_overrides`).

    Raises:
        MemctxError: The file is not a readable regular file within the input size cap, it
            or a ``--set`` holds an invalid setting, or a ``--set`` item is not KEY=VALUE.
    """
    from memctx.config import MemoryContextConfig, load_config
    from memctx.transcripts import check_input_file

    overrides = parse_set(sets)  # a malformed item is named before the file is read
    config = MemoryContextConfig()
    if config_file:
        # A FIFO would block the read and a huge file flood memory: refused before reading.
        check_input_file(config_file, what="--config file")
        config = load_config(config_file)
    return config.with_overrides(overrides)


def positive(option: str, values: Sequence[int] | int | None, *, zero: bool = False) -> None:
    """Check that every value of a numeric option is positive (or >= 0 with ``zero``).

    Raises:
        OptionError: The first bad value, naming the option and what is allowed.
    """
    if values is None:
        return
    for value in [values] if isinstance(values, int) else values:
        if value < 0 or (value == 0 and not zero):
            want = "0 or more" if zero else "a positive number"
            raise OptionError(f"{option} must be {want}, got {value}")


def existing_dir(option: str, path: Path) -> None:
    """Check that ``path`` is a folder.

    Raises:
        OptionError: It is missing or a file (the message names the option).
    """
    if not path.is_dir():
        what = "a file, not a folder" if path.exists() else "missing"
        raise OptionError(f"{option} {path} is {what}; pass an existing folder")


# Model providers that need no credentials: memctx's own offline model is served in-process
# (``memctx/offline``; :func:`memctx.llm.is_offline_model`), and ``mock`` names a test model
# answered by litellm's ``mock_response`` (no request is made).
TEST_PROVIDERS = frozenset({"mock"})
# What litellm reports missing counts as a missing credential when its name says so; a
# missing base URL alone (OLLAMA_API_BASE: the provider defaults to localhost) does not.
CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
AWS_FILES = ("~/.aws/credentials", "~/.aws/config")


def check_llm_credentials(model: str, *, option: str = "--llm") -> None:
    """Check, before any work, that the environment holds the credentials ``model`` needs.

    litellm's ``validate_environment`` names the variables a provider reads (offline: it
    looks at the environment, never the network); the model is refused when one of them is
    a credential (a key, token or secret) and unset. memctx's offline model (``memctx/...``)
    and ``mock`` test models need none; a model whose provider litellm does not know, or
    that lacks only a server address or project (Ollama's base URL defaults to localhost),
    is not judged here: its first call says what is wrong. AWS keys also count as given by
    ``~/.aws/credentials`` or ``~/.aws/config``.

    Args:
        model: The litellm model string, e.g. ``anthropic/claude-sonnet-4-5``.
        option: How the command line names the setting, for the message.

    Raises:
        OptionError: A blank model, or a variable the model needs is not set; one line,
            e.g. ``--llm anthropic/claude-sonnet-4-5: ANTHROPIC_API_KEY is not set; export
            it or pass a model whose key you have``.
    """
    if not model or not model.strip():
        raise OptionError(f"{option} needs a model name, e.g. {option} anthropic/claude-sonnet-4-5")
    provider = model.split("/", 1)[0].lower()
    if provider in TEST_PROVIDERS or model.lower() in TEST_PROVIDERS:
        return
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch at import
    from memctx.llm import is_offline_model

    if is_offline_model(model):
        return
    import litellm

    quiet = litellm.suppress_debug_info
    litellm.suppress_debug_info = True  # no "Provider List" banner for an unknown provider
    try:
        found = litellm.validate_environment(model)
    except Exception:  # a model string litellm cannot parse: its first call will say so
        return
    finally:
        litellm.suppress_debug_info = quiet
    if found.get("keys_in_environment", True):
        return
    missing = [str(k) for k in found.get("missing_keys") or []]
    unset = [k for k in missing if not os.environ.get(k)] or missing
    if not any(word in k for k in unset for word in CREDENTIAL_WORDS):
        return  # only a server address or project, which the provider may default
    if all(k.startswith("AWS_") for k in unset) and any(
        Path(p).expanduser().is_file() for p in AWS_FILES
    ):
        return  # boto3 reads ~/.aws/credentials or ~/.aws/config, which litellm does not see
    if len(unset) == 1:
        what, pronoun = f"{unset[0]} is not set", "it"
    else:
        what, pronoun = f"{', '.join(unset[:-1])} and {unset[-1]} are not set", "them"
    raise OptionError(
        f"{option} {model}: {what}; export {pronoun} or pass a model whose key you have"
    )
