"""Fact values: their forms and aliases, and how each topic draws one.

A :class:`Value` has a prose form (``text``), the form it takes in a config file or log
(``code``), a Chinese form (``zh``) and every alias a probe accepts. Values are built from
words ordinary filler never uses (:data:`RARE`), numbers in ranges filler avoids (4-digit
ports, 3-digit seconds) or fixed pools of real product names; the generator still checks
that no alias occurs anywhere else in its scenario and redraws on a collision.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "DRAWS",
    "LIBS",
    "LIB_ZH",
    "RARE",
    "SOURCE_EXT",
    "Draw",
    "Value",
    "camel",
    "choice_value",
    "plain",
]

# Words that ordinary filler never uses: fact values built from them are distinctive.
RARE = (
    "quartz", "ember", "marlin", "basalt", "juniper", "kestrel", "obsidian", "saffron",
    "cobalt", "heron", "lantern", "meridian", "onyx", "pylon", "quill", "sable", "tundra",
    "vesper", "zephyr", "halcyon", "larch", "nimbus", "osprey", "pewter", "rook", "sorrel",
    "tamarack", "umber", "wren", "yarrow", "alder", "bramble", "cinder", "fennel", "garnet",
    "hazel", "ibis", "jasper", "kiln", "lichen", "mistral", "nettle", "ochre", "plover",
)  # fmt: skip


@dataclass(frozen=True)
class Value:
    """One drawn value: prose, config and Chinese forms, and every accepted alias."""

    text: str
    code: str
    zh: str
    aliases: tuple[str, ...]

    def form(self, name: str) -> str:
        return {"text": self.text, "code": self.code, "zh": self.zh}[name]


def _value(text: str, *aliases: str, code: str | None = None, zh: str | None = None) -> Value:
    forms = [text, *aliases]
    if code is not None:
        forms.append(code)
    if zh is not None:
        forms.append(zh)
    return Value(text, code or text, zh or text, tuple(dict.fromkeys(forms)))


_COMMON_PORTS = {5000, 5432, 5672, 6379, 8000, 8080, 8443, 8888, 9000, 9090, 9200, 9092}


def port(rng: random.Random) -> Value:
    n = rng.randint(4100, 9899)
    while n in _COMMON_PORTS or n % 100 == 0:
        n = rng.randint(4100, 9899)
    return _value(str(n))


def seconds(rng: random.Random) -> Value:
    n = rng.randint(105, 295)
    return _value(f"{n} seconds", f"{n} s", f"{n} sec", code=f"{n}s", zh=f"{n} 秒")


def minutes(rng: random.Random) -> Value:
    n = rng.randint(11, 95)
    return _value(f"{n} minutes", f"{n} min", code=f"{n}min", zh=f"{n} 分钟")


def millis(rng: random.Random) -> Value:
    n = rng.randint(120, 950)
    return _value(f"{n} milliseconds", f"{n} ms", code=f"{n}ms", zh=f"{n} 毫秒")


def per_minute(rng: random.Random) -> Value:
    n = rng.randint(130, 980)
    return _value(
        f"{n} requests per minute", f"{n}/min", f"{n} req", code=f"{n}/min", zh=f"每分钟 {n} 次"
    )


def choice_value(pool: Sequence[tuple[str, ...]]) -> Callable[[random.Random], Value]:
    """A draw from a fixed pool of ``(text, *aliases)``."""

    def draw(rng: random.Random) -> Value:
        text, *aliases = rng.choice(pool)
        return _value(text, *aliases)

    return draw


def camel(*words: str) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


Draw = Callable[[random.Random, str], Value]


def plain(fn: Callable[[random.Random], Value]) -> Draw:
    return lambda rng, _lang: fn(rng)


def _v(text: str, *aliases: str) -> Value:
    return Value(text, text, text, tuple(dict.fromkeys((text, *aliases))))


def _ident(rng: random.Random, lang: str, words: tuple[str, ...]) -> str:
    parts = (rng.choice(("coalesce", "reconcile", "debounce", "hydrate", "quarantine", "stitch")),
             rng.choice(RARE), rng.choice(words))  # fmt: skip
    return camel(*parts) if lang in ("typescript", "go") else "_".join(parts)


def _func(rng: random.Random, lang: str) -> Value:
    return _v(_ident(rng, lang, ("webhooks", "deliveries", "callbacks", "events")))


def _leaky(rng: random.Random, lang: str) -> Value:
    return _v(_ident(rng, lang, ("connections", "cursors", "handles", "sessions")))


def _class(rng: random.Random, _lang: str) -> Value:
    role = rng.choice(("Router", "Dispatcher", "Fanout", "Switchboard"))
    return _v(f"{rng.choice(RARE).capitalize()}{rng.choice(('Webhook', 'Payout', 'Refund'))}{role}")


SOURCE_EXT = {"python": "py", "typescript": "ts", "go": "go", "rust": "rs"}
_ROOT = {"python": "app", "typescript": "src", "go": "internal", "rust": "src"}


def _module(rng: random.Random, lang: str) -> Value:
    name = f"{rng.choice(RARE)}_{rng.choice(('reconcile', 'settlement', 'matching'))}"
    return _v(f"{_ROOT.get(lang, 'src')}/{rng.choice(RARE)}/{name}.{SOURCE_EXT.get(lang, 'py')}")


def _settings(rng: random.Random, _lang: str) -> Value:
    env = rng.choice(("staging", "prod", "canary", "shared"))
    return _v(f"deploy/{rng.choice(RARE)}-{env}.toml")


def _flag(rng: random.Random, _lang: str) -> Value:
    name = f"enable_{rng.choice(RARE)}_{rng.choice(('payouts', 'rollups', 'exports', 'sweeps'))}"
    return Value(name, name.upper(), name, (name,))


def _error(rng: random.Random, _lang: str) -> Value:
    return _v(f"ERR_{rng.choice(RARE).upper()}_{rng.choice(('QUOTA', 'DRIFT', 'STALE', 'LOCK'))}")


def _issue(rng: random.Random, _lang: str) -> Value:
    n = rng.randint(1200, 9899)
    return Value(f"issue #{n}", f"#{n}", f"#{n}", (f"#{n}", f"issue {n}"))


def _test(rng: random.Random, _lang: str) -> Value:
    tail = rng.choice(("rounding", "timezone", "ordering", "overflow", "pagination"))
    return _v(f"test_{rng.choice(RARE)}_{rng.choice(('refund', 'invoice', 'ledger'))}_{tail}")


def _ticket(rng: random.Random, _lang: str) -> Value:
    pfx = rng.choice(("PAY", "OPS", "CORE", "PLAT", "BILL", "INFRA", "DATA"))
    return _v(f"{pfx}-{rng.randint(1200, 9899)}")


def _branch(rng: random.Random, _lang: str) -> Value:
    kind = rng.choice(("feat", "fix", "chore", "spike"))
    return _v(f"{kind}/{rng.choice(RARE)}-{rng.choice(('sweep', 'backfill', 'cutover', 'split'))}")


def _pr(rng: random.Random, _lang: str) -> Value:
    n = rng.randint(1200, 9899)
    return Value(f"PR #{n}", f"#{n}", f"PR #{n}", (f"#{n}", f"PR {n}"))


def _batch(rng: random.Random, _lang: str) -> Value:
    n, m = rng.randint(120, 480), rng.randint(500, 900)
    return Value(f"batch {n} of {m}", f"batch={n}/{m}", f"第 {n} 批（共 {m} 批）",
                 (f"batch {n} of", f"batch={n}/", f"第 {n} 批"))  # fmt: skip


def _service(rng: random.Random, _lang: str) -> Value:
    return _v(f"{rng.choice(RARE)}-{rng.choice(('relay', 'fanout', 'dispatcher', 'notifier'))}")


def _table(rng: random.Random, _lang: str) -> Value:
    noun = rng.choice(("payout", "ledger", "refund", "webhook"))
    return _v(f"{noun}_{rng.choice(('outbox', 'journal', 'spool'))}_v{rng.randint(2, 9)}")


LIBS: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {
    "logging": {
        "python": (("structlog",), ("loguru",), ("python-json-logger",), ("eliot",)),
        "typescript": (("pino",), ("winston",), ("bunyan",), ("tslog",)),
        "go": (("zerolog",), ("uber-go/zap", "zap"), ("logrus",), ("apex/log",)),
        "rust": (("tracing-subscriber",), ("env_logger",), ("fern",), ("slog-term",)),
    },
    "retries": {
        "python": (("tenacity",), ("stamina",), ("backoff-utils",), ("retrying",)),
        "typescript": (("p-retry",), ("async-retry",), ("cockatiel",), ("exponential-backoff",)),
        "go": (
            ("cenkalti/backoff",),
            ("avast/retry-go", "retry-go"),
            ("sethvargo/go-retry",),
            ("eapache/go-resiliency",),
        ),
        "rust": (("backon",), ("tokio-retry",), ("again-rs",), ("tryhard",)),
    },
    "validation": {
        "python": (("marshmallow",), ("msgspec",), ("cattrs",), ("voluptuous",)),
        "typescript": (("zod",), ("valibot",), ("superstruct",), ("io-ts",)),
        "go": (
            ("go-playground/validator", "go-playground"),
            ("ozzo-validation",),
            ("gookit/validate",),
            ("asaskevich/govalidator",),
        ),
        "rust": (("garde",), ("nutype",), ("validify",), ("serde_valid",)),
    },
    "HTTP client": {
        "python": (("httpx",), ("aiohttp",), ("niquests",), ("urllib3",)),
        "typescript": (("axios",), ("undici",), ("ofetch",), ("superagent",)),
        "go": (
            ("go-resty", "resty"),
            ("go-retryablehttp",),
            ("imroc/req",),
            ("hashicorp/go-cleanhttp",),
        ),
        "rust": (("reqwest",), ("ureq",), ("isahc",), ("surf",)),
    },
}

LIB_ZH = {
    "logging": "日志",
    "retries": "重试",
    "validation": "数据校验",
    "HTTP client": "HTTP 客户端",
}


DATABASE = (("PostgreSQL 16", "Postgres 16"), ("PostgreSQL 15", "Postgres 15"), ("MySQL 8.4",),
       ("MariaDB 11.4",), ("CockroachDB 24.1", "Cockroach 24.1"), ("YugabyteDB 2.20",),
       ("TiDB 8.1",))  # fmt: skip
BROKER = (("NATS JetStream", "JetStream"), ("RabbitMQ",), ("Apache Kafka", "Kafka"),
           ("Amazon SQS",), ("Redis Streams",), ("Apache Pulsar", "Pulsar"),
           ("Google Pub/Sub",), ("Azure Service Bus",))  # fmt: skip
DEPLOY = (("Fly.io",), ("Google Cloud Run", "Cloud Run"), ("ECS Fargate", "Fargate"),
           ("Azure Container Apps",), ("Hetzner Cloud",), ("HashiCorp Nomad",),
           ("DigitalOcean App Platform",), ("Kubernetes on GKE", "GKE"))  # fmt: skip
AUTH = (("Keycloak",), ("Auth0",), ("Ory Kratos", "Kratos"), ("AWS Cognito", "Cognito"),
         ("SuperTokens",), ("FusionAuth",), ("Okta",))  # fmt: skip
CACHE = (("Redis 7.2",), ("Valkey 8",), ("Memcached 1.6",), ("DragonflyDB",), ("KeyDB",))
TRANSPORT = (("gRPC",), ("GraphQL",), ("WebSockets", "WebSocket"), ("Apache Thrift", "Thrift"),
              ("Cap'n Proto",), ("JSON-RPC",), ("NATS request-reply",))  # fmt: skip


def _ticket_draw(rng: random.Random, _lang: str) -> Value:
    return _ticket(rng, "")


DRAWS: dict[str, Draw] = {
    "api-port": plain(port),
    "request-timeout": plain(seconds),
    "cache-ttl": plain(minutes),
    "backoff-base": plain(millis),
    "rate-limit": plain(per_minute),
    "feature-flag": _flag,
    "database": plain(choice_value(DATABASE)),
    "broker": plain(choice_value(BROKER)),
    "deploy": plain(choice_value(DEPLOY)),
    "auth": plain(choice_value(AUTH)),
    "dedup-func": _func,
    "router-class": _class,
    "recon-module": _module,
    "settings-file": _settings,
    "error-code": _error,
    "regression-issue": _issue,
    "flaky-test": _test,
    "leaky-func": _leaky,
    "ticket": _ticket_draw,
    "branch": _branch,
    "open-pr": _pr,
    "backfill": _batch,
    "fanout-service": _service,
    "outbox-table": _table,
    "transport": plain(choice_value(TRANSPORT)),
    "cache-layer": plain(choice_value(CACHE)),
}
