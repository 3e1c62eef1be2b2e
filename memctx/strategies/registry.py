"""The one registry of strategies: built-ins, ``register_strategy`` and the entry-point group.

A strategy is known by name. Three ways in, one table:

- memctx's built-ins register themselves when :mod:`memctx.strategies` is imported (their
  modules are imported only when one is built);
- :func:`register_strategy` from Python (a plugin module, a test, ``memctx eval --plugin``);
- the Python entry-point group ``memctx.strategies`` of any installed package: an entry
  ``lastn = my_package.strategies:LastN`` makes ``lastn`` available to
  :func:`memctx.make_strategy` and ``memctx eval --strategy lastn`` in every process, with no
  ``--plugin`` (read on the first lookup of a name the table does not hold).

A name may carry settings, ``NAME:KEY=VALUE[,KEY=VALUE]`` (``observation-masking:keepLast=5``,
``openclaw:pruning=off``), parsed by the parsers the strategy registered. A setting may stand
for a config setting (``openclaw:pruning`` is ``contextPruning.mode``): the name's value then
applies, and a config that sets the same key explicitly to another value is refused naming
both. (A strategy's own defaults for config settings, such as ``openclaw``'s ``cache-ttl``
pruning, live with its class: :attr:`memctx.strategies.BaseStrategy.config_defaults`.)

Strategies outside memctx are wrapped in :class:`CheckedStrategy`, which checks what each
method returns and turns an exception into a :class:`~memctx.errors.StrategyError` naming the
strategy, where it came from and the method: a plugin's mistake is reported as the plugin's,
never as a bug in memctx.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memctx.config import MemoryContextConfig
from memctx.errors import ConfigError, StrategyError
from memctx.messages import InfoCache, TokenCounter

from .base import BaseStrategy, Messages, Prepared, Strategy, StrategySetup

if TYPE_CHECKING:
    from memctx.retrieval import Embedder

__all__ = [
    "ENTRY_POINT_GROUP",
    "CheckedStrategy",
    "ParamParser",
    "StrategyFactory",
    "StrategyInfo",
    "build_strategy",
    "make_strategy",
    "parse_strategy",
    "register_strategy",
    "resolve_config",
    "strategy_info",
    "strategy_names",
]

logger = logging.getLogger("memctx")

ENTRY_POINT_GROUP = "memctx.strategies"
StrategyFactory = Callable[[StrategySetup], Strategy]
ParamParser = Callable[[str], object]  # a setting's text -> its value; ValueError when bad
_SPEC_SYNTAX = "NAME:KEY=VALUE[,KEY=VALUE...], e.g. observation-masking:keepLast=5"
_DOCS = "docs/strategies.md"


@dataclass(frozen=True)
class StrategyInfo:
    """A registered strategy.

    Attributes:
        name: Its name (``memctx eval --strategy NAME``).
        factory: Builds one instance from a :class:`StrategySetup`.
        params: The settings its name may carry, each with a parser from text.
        settings: Name settings that stand for a config setting: ``{"pruning":
            "contextPruning.mode"}``.
        summaries: It compacts with summaries written by ``extractionModel`` (reports say
            which model wrote them).
        searches: Its results depend on the embedder (the harness runs it once per
            embedder; otherwise once, labelled with no embedder).
        origin: Where it comes from: ``memctx`` for a built-in, else the factory's module or
            the entry point that declared it.
    """

    name: str
    factory: StrategyFactory
    params: Mapping[str, ParamParser] = field(default_factory=dict)
    settings: Mapping[str, str] = field(default_factory=dict)
    summaries: bool = False
    searches: bool = True
    origin: str = ""

    @property
    def built_in(self) -> bool:
        return self.origin == "memctx"


_REGISTRY: dict[str, StrategyInfo] = {}
_BROKEN: dict[str, str] = {}  # entry points that failed to load: name -> why
_LOCK = threading.Lock()
_entry_points_read = False


def register_strategy(
    name: str,
    factory: StrategyFactory,
    *,
    params: Mapping[str, ParamParser] | None = None,
    settings: Mapping[str, str] | None = None,
    summaries: bool = False,
    searches: bool | None = None,
    replace: bool = False,
    origin: str | None = None,
) -> None:
    """Make ``name`` available to :func:`make_strategy` and ``memctx eval --strategy``.

    Args:
        name: The strategy's name (no ``:``: that starts its settings).
        factory: Builds one instance from a :class:`StrategySetup` (a class taking the
            setup, such as a :class:`BaseStrategy` subclass, or a function).
        params: The settings its name may carry (``NAME:KEY=VALUE``), each with a parser
            from text; they reach the factory as ``setup.params``.
        settings: Which of ``params`` stand for a config setting (``{"pruning":
            "contextPruning.mode"}``): the value then goes into ``setup.config``.
        summaries: The strategy compacts with summaries written by ``extractionModel``.
        searches: Its results depend on the embedder; ``None`` reads the factory's
            ``searches`` attribute (a :class:`BaseStrategy` subclass has one), else ``True``.
        replace: Allow replacing a registered name.
        origin: Where the strategy comes from (reports and errors name it); ``None`` means
            the factory's module.

    Raises:
        ValueError: The name is empty or holds ``:``, it is taken and ``replace`` is false,
            or ``settings`` names a key ``params`` does not declare.
    """
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"strategy name {name!r} must be a non-empty string without ':'")
    if not callable(factory):
        raise ValueError(f"strategy {name!r}: the factory must be callable, got {factory!r}")
    declared = dict(params or {})
    backed = dict(settings or {})
    if unknown := sorted(set(backed) - set(declared)):
        raise ValueError(f"strategy {name!r}: settings {unknown} are not among its params")
    if searches is None:
        found = getattr(factory, "searches", True)
        searches = found if isinstance(found, bool) else True
    info = StrategyInfo(
        name=name,
        factory=factory,
        params=declared,
        settings=backed,
        summaries=summaries,
        searches=searches,
        origin=origin if origin is not None else _origin(factory),
    )
    with _LOCK:
        if name in _REGISTRY and not replace:
            raise ValueError(
                f"strategy {name!r} is already registered (from {_REGISTRY[name].origin}); "
                "pass replace=True to replace it"
            )
        _REGISTRY[name] = info
        _BROKEN.pop(name, None)


def _origin(factory: object) -> str:
    module = getattr(factory, "__module__", None) or "?"
    return "memctx" if module == "memctx" or module.startswith("memctx.") else module


def _read_entry_points() -> None:
    """Register the strategies installed packages declare (once per process)."""
    global _entry_points_read
    with _LOCK:
        if _entry_points_read:
            return
        _entry_points_read = True
        entries = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    for entry in entries:
        if entry.name in _REGISTRY:
            continue  # registered from Python already: that registration wins
        where = f"entry point {entry.name} = {entry.value}"
        dist = getattr(entry, "dist", None)
        if dist is not None:
            where += f" of {dist.metadata['Name']} {dist.version}"
        try:
            factory = entry.load()
        except Exception as exc:  # a broken plugin must not break the other strategies
            _BROKEN[entry.name] = f"{where} cannot be loaded: {type(exc).__name__}: {exc}"
            logger.warning("memctx: %s", _BROKEN[entry.name])
            continue
        if entry.name in _REGISTRY:
            continue  # importing it registered it
        try:
            register_strategy(entry.name, factory, origin=where)
        except ValueError as exc:
            _BROKEN[entry.name] = f"{where}: {exc}"


def strategy_names() -> list[str]:
    """Every strategy that can be built, sorted (entry points included)."""
    _read_entry_points()
    return sorted(_REGISTRY)


def strategy_info(name: str) -> StrategyInfo:
    """The registration of ``name`` (a bare name, no settings).

    Raises:
        ValueError: No such strategy (the message lists the valid ones, or says why an
            installed one could not be loaded).
    """
    if name not in _REGISTRY:
        _read_entry_points()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in _BROKEN:
        raise ValueError(f"strategy {name!r}: {_BROKEN[name]}")
    raise ValueError(f"unknown strategy {name!r}; valid: {', '.join(strategy_names())}")


def parse_strategy(spec: str) -> tuple[str, dict[str, object]]:
    """Split ``"observation-masking:keepLast=5"`` into the name and its parsed settings.

    Raises:
        ValueError: Unknown name (the message lists the valid ones), a malformed setting,
            a key the strategy does not take, or a value its parser refuses.
    """
    name, has_params, text = spec.partition(":")
    try:
        info = strategy_info(name)
    except ValueError as exc:
        raise ValueError(str(exc).replace(repr(name), repr(spec), 1)) from None
    params: dict[str, object] = {}
    if not has_params:
        return name, params
    for item in text.split(","):
        key, has_value, value = (part.strip() for part in item.partition("="))
        if not key or not has_value:
            raise ValueError(f"strategy {spec!r}: bad setting {item!r}; expected {_SPEC_SYNTAX}")
        if key not in info.params:
            takes = f"it takes {', '.join(sorted(info.params))}" if info.params else "it takes none"
            raise ValueError(f"strategy {spec!r}: {name} has no setting {key!r}; {takes}")
        try:
            params[key] = info.params[key](value)
        except ValueError as exc:
            raise ValueError(f"strategy {spec!r}: {key}={value!r}: {exc}") from None
    return name, params


def resolve_config(spec: str, config: MemoryContextConfig) -> MemoryContextConfig:
    """``config`` with the config settings strategy ``spec``'s name carries applied.

    Raises:
        ValueError: ``spec`` is unknown or malformed (:func:`parse_strategy`).
        ConfigError: The name sets a config setting that ``config`` sets explicitly to
            another value (both are named).
    """
    name, params = parse_strategy(spec)
    info = _REGISTRY[name]
    explicit = config.explicit_settings()
    wanted: dict[str, object] = {}
    for key, value in params.items():
        setting = info.settings.get(key)
        if setting is None:
            continue
        if setting in explicit and explicit[setting] != value:
            raise ConfigError(
                f"strategy {spec!r} sets {setting}={value!r} but the config sets "
                f"{setting}={explicit[setting]!r}: drop one of them"
            )
        wanted[setting] = value
    return config.with_overrides(wanted) if wanted else config


def build_strategy(spec: str, setup: StrategySetup) -> Strategy:
    """Build ``spec`` (a name, maybe with settings) from ``setup``.

    The strategy receives ``setup`` with its config resolved (:func:`resolve_config`) and
    its name's settings in ``params``. A strategy from outside memctx comes wrapped in
    :class:`CheckedStrategy`.

    Raises:
        ValueError: Unknown strategy or bad settings.
        ConfigError: A name setting conflicts with the config.
        StrategyError: A plugin's factory failed or built something that is not a strategy.
    """
    name, params = parse_strategy(spec)
    info = _REGISTRY[name]
    config = resolve_config(spec, setup.config)
    setup = dataclasses.replace(setup, config=config, params={**setup.params, **params})
    if info.built_in:
        return info.factory(setup)
    try:
        built = info.factory(setup)
    except Exception as exc:
        raise StrategyError(_blame(info, "its factory", f"raised {_exception(exc)}")) from exc
    missing = [m for m in ("prepare", "start_session") if not callable(getattr(built, m, None))]
    if missing:
        raise StrategyError(
            _blame(
                info,
                "its factory",
                f"returned {type(built).__name__}, which has no {' or '.join(missing)}(); "
                "it must return a strategy (subclass memctx.strategies.BaseStrategy)",
            )
        )
    return CheckedStrategy(built, info, setup)


def make_strategy(
    name: str,
    *,
    store_dir: str | Path,
    session_id: str,
    window: int,
    config: MemoryContextConfig | None = None,
    embedder: Embedder | None = None,
    clock: Callable[[], float] | None = None,
) -> Strategy:
    """Build a registered strategy for an agent loop and start its first session.

    Args:
        name: ``"openclaw"``, ``"memory-context"``, ... (:func:`strategy_names`), maybe with
            settings (``"observation-masking:keepLast=5"``).
        store_dir: Where the strategy keeps its files (raw store, memory files, sidecars,
            tool payloads); sessions sharing it share memory.
        session_id: The session that starts now (letters, digits, ``._-``).
        window: The model's context window in tokens.
        config: memctx settings (:func:`memctx.load_config`); ``None`` means the defaults.
        embedder: An embedder instead of the one ``config.embeddingModel`` names.
        clock: Epoch seconds (``time.time`` by default).

    Returns:
        The strategy; call ``step(history)`` before every model call (see
        :class:`memctx.strategies.BaseStrategy`), ``end_session`` and ``close`` at the end.

    Raises:
        ValueError: Unknown strategy, bad settings, or a window that is not a positive int.
        ConfigError: A setting in the name conflicts with ``config``.
        StoreError: ``store_dir`` or ``session_id`` cannot be used.
        StrategyError: A plugin strategy failed to build.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(f"window must be a positive number of tokens, got {window!r}")
    config = config if config is not None else MemoryContextConfig()
    room = window - config.reserve_tokens
    if room < window // 4:  # known here only: said once, not on every call
        logger.warning(
            "memctx: reserveTokens %d (kept for the model's reply) leaves %d of the %d-token "
            "window for the conversation, so strategies that fit the history into it send "
            "little or nothing but the system prompt; set reserveTokens below %d or give the "
            "model's real window",
            config.reserve_tokens,
            max(room, 0),
            window,
            window // 2,
        )
    setup = StrategySetup(
        window=window,
        config=config,
        store_dir=Path(store_dir).expanduser(),
        counter=TokenCounter(config.token_counter),
        infos=InfoCache(),
        clock=clock if clock is not None else time.time,
        embedder=embedder,
    )
    strategy = build_strategy(name, setup)
    strategy.start_session(session_id)
    return strategy


def _exception(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _blame(info: StrategyInfo, where: str, what: str) -> str:
    return f"strategy {info.name!r} (from {info.origin}): {where} {what} (see {_DOCS})"


class CheckedStrategy(BaseStrategy):
    """A strategy from outside memctx, held to the protocol.

    Each call is passed on; what comes back is checked against the protocol's types, and an
    exception becomes a :class:`~memctx.errors.StrategyError` that names the strategy, its
    origin, the method and the cause (the original exception chained).
    """

    def __init__(self, inner: Strategy, info: StrategyInfo, setup: StrategySetup) -> None:
        super().__init__(getattr(inner, "setup", setup))
        self.inner = inner
        self.info = info
        self.name = info.name
        self.searches = info.searches

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.inner, method)(*args)
        except StrategyError:
            raise
        except Exception as exc:
            raise StrategyError(
                _blame(self.info, f"{method}()", f"raised {_exception(exc)}")
            ) from exc

    def _wrong(self, method: str, result: object, expected: str) -> StrategyError:
        got = type(result).__name__
        return StrategyError(
            _blame(self.info, f"{method}()", f"returned {got}; it must return {expected}")
        )

    def start_session(self, session_id: str) -> None:
        self._call("start_session", session_id)

    def compact(self, transcript: Messages, tokens: int | None = None) -> Messages | None:
        result = self._call("compact", transcript, self.count(transcript, tokens))
        if result is not None and not _is_messages(result):
            raise self._wrong("compact", result, "None or a list of message dicts")
        return result  # type: ignore[no-any-return]

    def prepare(self, transcript: Messages) -> Prepared:
        result = self._call("prepare", transcript)
        if not isinstance(result, Prepared):
            raise self._wrong(
                "prepare", result, "memctx.strategies.Prepared(context=[...messages to send...])"
            )
        if not _is_messages(result.context):
            raise self._wrong("prepare", result.context, "a Prepared whose context is a list")
        return result

    def search(self, query: str) -> list[str] | None:
        result = self._call("search", query)
        if result is not None and not (
            isinstance(result, list) and all(isinstance(t, str) for t in result)
        ):
            raise self._wrong("search", result, "None or a list of str")
        return result

    def end_session(self, transcript: Messages) -> None:
        self._call("end_session", transcript)

    def close(self) -> Mapping[str, float]:
        result = self._call("close")
        if result is None:
            return {}
        if not isinstance(result, Mapping) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in result.values()
        ):
            raise self._wrong("close", result, "a mapping of usage numbers (or None)")
        return result


def _is_messages(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(m, dict) for m in value)
