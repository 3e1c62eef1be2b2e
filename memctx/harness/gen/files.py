"""Config-like files an agent reads (``.env``, YAML, logs, README) and the secrets in them.

:func:`config_file` renders one such file with given lines (fact lines, secret lines) spread
through ordinary content; ``size`` makes it long (tool-heavy outputs). :func:`secret_line`
draws one credential in a format :mod:`memctx.text.redaction` masks (OpenAI/Anthropic keys, AWS key
pairs, Stripe and GitHub tokens, passwords, URL passwords, bearer tokens).
"""

from __future__ import annotations

import random
import string
import time

from .code import FIELDS, VERBS
from .project import Project

__all__ = ["SECRET_KINDS", "config_file", "log_lines", "secret_line"]


_ENV_FILLER = (
    "LOG_LEVEL=info",
    "APP_ENV=staging",
    "WORKERS=4",
    "DB_POOL_SIZE=10",
    "REDIS_URL=redis://cache:6379/0",
    "SENTRY_ENVIRONMENT=staging",
    "TZ=UTC",
    "ENABLE_METRICS=true",
    "MAX_UPLOAD_MB=25",
    "CORS_ORIGINS=http://localhost:5173",
)
_YAML_FILLER = (
    "log_level: info",
    "workers: 4",
    "db_pool_size: 10",
    "metrics:",
    "  enabled: true",
    "  path: /metrics",
    "cors:",
    "  origins: [http://localhost:5173]",
    "uploads:",
    "  max_mb: 25",
    "features:",
    "  dark_mode: false",
)
_README = (
    "## Development",
    "Install the dev dependencies and run the test suite before pushing.",
    "## Layout",
    "Handlers stay thin; business rules live in the service layer.",
    "## Conventions",
    "Every migration is reversible and reviewed by a second person.",
    "## Troubleshooting",
    "If the container does not start, check the logs of the api service.",
)


def _log_lines(rng: random.Random, project: Project, n: int) -> list[str]:
    out = []
    for _ in range(n):
        noun = rng.choice(project.nouns)
        method = rng.choice(("GET", "GET", "POST", "PATCH", "DELETE"))
        out.append(
            f"{rng.choice(('INFO ', 'INFO ', 'DEBUG', 'WARN '))} {method} /api/{noun}s/"
            f"{rng.randint(1, 99)} {rng.choice((200, 200, 201, 204, 404))} "
            f"in {rng.randint(1, 99)}ms"
        )
    return out


def log_lines(rng: random.Random, project: Project, n: int, *, stamp: float) -> list[str]:
    """``n`` access-log lines of a running service from ``stamp`` (epoch seconds) on, each
    with its time (milliseconds) and a request id: the lines a log file of
    :func:`config_file` holds, as a service prints them."""
    out = []
    for line in _log_lines(rng, project, n):
        stamp += rng.random() * 3
        clock = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp))
        rid = rng.getrandbits(32)
        out.append(f"{clock},{int(stamp * 1000) % 1000:03d} {line} request_id={rid:08x}")
    return out


def _bulk(rng: random.Random, project: Project, kind: str, n: int) -> list[str]:
    """Many more lines of a config-like file: per-noun settings, env dumps, API docs."""
    out: list[str] = []
    while len(out) < n:
        noun = rng.choice(project.nouns)
        up = noun.upper()
        if kind == "env":
            out += [
                f"{up}_SERVICE_URL=http://{noun}:80",
                f"{up}_BATCH_SIZE={rng.randint(10, 99)}",
                f"{up}_ENABLED={rng.choice(('true', 'false'))}",
                f"{up}_LOG_LEVEL=info",
            ]
        elif kind == "yaml":
            out += [
                f"{noun}:",
                f"  replicas: {rng.randint(1, 6)}",
                "  resources:",
                f"    cpu: {rng.randint(1, 9)}00m",
                f"    memory: {rng.randint(1, 9)}Gi",
                f"  queue: {noun}-{rng.choice(VERBS)}",
                "  probes:",
                "    path: /healthz",
            ]
        else:
            verb = rng.choice(VERBS)
            out += [
                "",
                f"### {rng.choice(('GET', 'POST', 'PATCH'))} /api/{noun}s",
                f"{verb.capitalize()}s {noun}s for the caller's tenant; filters by "
                f"`{rng.choice(FIELDS)}` and `{rng.choice(FIELDS)}`.",
                f"Errors: 404 when the {noun} does not exist, 422 on a bad `{rng.choice(FIELDS)}`.",
            ]
    return out


def config_file(
    rng: random.Random, project: Project, kind: str, inserts: list[str], size: int = 1
) -> tuple[str, str]:
    """A config-like file of ``kind`` (env, yaml, log, readme) with ``inserts`` spread in it.

    ``size`` multiplies the filler around the inserted lines (tool-heavy outputs are long).
    """
    if kind == "env":
        path = rng.choice((".env", ".env.staging", "deploy/.env.production"))
        base = rng.sample(_ENV_FILLER, rng.randint(4, 8))
    elif kind == "yaml":
        path = rng.choice(("config/settings.yaml", "deploy/values.yaml", "config/app.yaml"))
        base = list(_YAML_FILLER[: rng.randint(6, len(_YAML_FILLER))])
    elif kind == "log":
        path = rng.choice(("logs/api.log", "logs/worker.log", "/var/log/app/current"))
        base = _log_lines(rng, project, rng.randint(20, 60) * size)
    else:
        path = rng.choice(("README.md", "docs/operations.md", "docs/architecture.md"))
        base = [f"# {project.name}", "", f"{project.stack.framework} service."] + [
            line for pair in zip(_README[::2], _README[1::2], strict=True) for line in ("", *pair)
        ]
    if size > 1 and kind != "log":
        base += _bulk(rng, project, kind, rng.randint(40, 60) * size)
    lines = list(base)
    for line in inserts:
        lines.insert(rng.randint(1, len(lines)), line)
    return path, "\n".join(lines) + "\n"


def _rand(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        if (
            any(c.isupper() for c in out)
            and any(c.islower() for c in out)
            and any(c.isdigit() for c in out)
        ):
            return out


def secret_line(rng: random.Random, kind: str) -> tuple[str, str]:
    """A config/log line holding one secret, and the secret value itself."""
    upper = string.ascii_uppercase + string.digits
    if kind == "openai":
        value = "sk-proj-" + _rand(rng, 40)
        return f"OPENAI_API_KEY={value}", value
    if kind == "anthropic":
        value = "sk-ant-api03-" + _rand(rng, 40)
        return f"ANTHROPIC_API_KEY={value}", value
    if kind == "aws_id":
        value = "AKIA" + "".join(rng.choice(upper) for _ in range(16))
        return f"AWS_ACCESS_KEY_ID={value}", value
    if kind == "aws_secret":
        value = _rand(rng, 40, string.ascii_letters + string.digits + "/+")
        return f"AWS_SECRET_ACCESS_KEY={value}", value
    if kind == "stripe":
        value = "sk_live_" + _rand(rng, 24)
        return f"STRIPE_SECRET_KEY={value}", value
    if kind == "github":
        value = "ghp_" + _rand(rng, 36)
        return f"GITHUB_TOKEN={value}", value
    if kind == "password":
        value = _rand(rng, 18)
        return f"DB_PASSWORD={value}", value
    if kind == "url":
        value = _rand(rng, 16)
        return f"DATABASE_URL=postgres://app:{value}@db.internal:5432/app", value
    value = _rand(rng, 36)
    return f"> Authorization: Bearer {value}", value


SECRET_KINDS = (
    "openai",
    "anthropic",
    "aws_id",
    "aws_secret",
    "stripe",
    "github",
    "password",
    "url",
    "bearer",
)
