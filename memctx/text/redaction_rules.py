"""The rule table of :mod:`memctx.text.redaction`: what a secret looks like, most specific first.

A :class:`Rule` is a compiled pattern, the cheap gates the engine runs first, and a check from
:mod:`memctx.text.redaction_checks` that vetoes a match or moves its span. Patterns capture the
part to mask in a group named ``secret`` (or ``qv``/``uv``, a quoted or bare value); without
one the whole match is masked.

Gates: a rule runs only on a text holding one of its ``needles`` (a needle with an upper-case
letter is matched as written, the others in the lower-cased text) and at least ``min_len``
characters long. Needles are substrings every match holds, cut to start at a rare character
(``ken`` for ``token``, ``cret`` for ``secret``): the engine finds them all in one trie regex
pass whose cost is the number of places a needle may start. For the same reason each pattern
starts with a literal (sre skips to a literal fast but tries an alternation at every position):
a command or key word with variants is one rule per word, and context that precedes the
secret's literal (an env name's first words, a ``.pgpass`` host, a Telegram bot id) is read
back by the check.

Vendor patterns follow each vendor's documented token format; the coverage lists of gitleaks
and detect-secrets served as a checklist (no code taken from either).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from .redaction_checks import (
    cli_check,
    context_check,
    cookie_check,
    credential_check,
    curl_user_check,
    discord_check,
    env_check,
    env_key_check,
    gitlab_check,
    header_check,
    hex_before_check,
    htpasswd_check,
    key_body_check,
    letters_check,
    line_value_check,
    login_check,
    mixed_check,
    npmrc_check,
    pgpass_check,
    secret_value_check,
    telegram_check,
    token_body_check,
    twitter_check,
    url_check,
    webhook_check,
    xml_check,
)
from .redaction_entropy import high_entropy_check, pem_base64_check

__all__ = ["RULES", "Check", "Rule"]

Check: TypeAlias = Callable[[str, re.Match[str], tuple[int, int]], tuple[int, int] | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """One redaction rule; see the module docstring."""

    name: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()  # lower-case substrings; the rule runs only if one is present
    on_lower: bool = False  # match the ASCII-lower-cased text (same offsets)
    bounded: bool = False  # the secret must start a run of token characters
    word_start: bool = False  # the match must start one (``mysql``, not ``mysqlx``)
    check: Check | None = None  # vetoes the match (None) or narrows its span
    min_len: int = 0


def _r(
    name: str, pattern: str, needles: str | tuple[str, ...], check: Check | None = None, **kw: Any
) -> Rule:
    """A rule; ``needles`` is a space-separated string, or a tuple when a needle holds a space."""
    words = tuple(needles.split()) if isinstance(needles, str) else needles
    return Rule(name, re.compile(pattern), words, check=check, **kw)


def _v(name: str, pattern: str, needles: str, check: Check | None = None) -> Rule:
    """A vendor token: a literal prefix the vendor chose, so the prefix makes it a secret."""
    return _r(name, pattern, needles, check, bounded=True)


_T = r"A-Za-z0-9_\-"
_VALUE = (  # a quoted value (spaces allowed), or an unquoted one up to a delimiter
    r"(?:(?P<q>\\*[\"'`])(?P<qv>[^\"'`\\\n\r]{1,512}?)(?P=q)"
    r"|(?P<uv>[^\s\"'`,;&|<>(){}\[\]\\]{1,512}))"
)
_CLI_VALUE = (  # an argument: quoted, or a shell word
    r"(?:(?P<q>\\*[\"'])(?P<qv>[^\"'\n\r]{1,256}?)(?P=q)|(?P<uv>[^\s\"'`\\|&<>]{1,256}))"
)
_ENV_VALUE = (  # the rest of an env assignment: quoted (spaces allowed) or up to whitespace
    r"(?:(?P<q>\\*[\"'])(?P<qv>[^\"'\\\n\r]{1,256})(?P=q)|(?P<uv>[^\s\"'`\\]{1,512}))"
)
_WS = r"(?:[ \t]|\\t)"
_SEG = r"[^\n|;&]{0,200}?(?<=\s)"  # the rest of one shell command, up to an option
_KEYED_TAIL = (  # ``(?P<pad>)`` tells ``k = v`` (code) from ``k=v``
    rf"(?:\\*[\"'`]|\*\*)?\]?(?P<pad>[ \t]*)(?P<sep>:=|=>|[:=])[ \t]*{_VALUE}"
)
# The last word of a key that names a secret (lower case), and its needles: one rule each.
_KEY_WORDS: tuple[tuple[str, str], ...] = (
    (r"api[_-]?key", "key"),
    (r"apikey", "key"),
    (r"token", "ken"),
    (r"secret(?:[_-]?key(?:[_-]?base)?)?", "cret"),
    (r"pass(?:word|wd|phrase)?", "pass"),
    (r"pwd", "pwd"),
    (r"auth", "uth"),
    (r"access[_-]?key", "key"),
    (r"private[_-]?key", "key"),
    (r"credentials?", "cred"),
    (r"key[_-]?data", "key"),
)
# A key that names a secret, assigned at the start of a line (env, YAML, JSON, INI): one rule
# per last word of the key; :func:`line_value_check` reads the key back and takes any literal.
_LINE_VALUE = (  # a quoted value, or the rest of the line (a YAML passphrase holds spaces)
    r"(?:(?P<q>\\*[\"'`])(?P<qv>[^\"'`\\\n\r]{1,512}?)(?P=q)|(?P<uv>[^\s\"'`][^\n\r\"'`\\]{0,511}))"
)
_LINE_TAIL = rf"(?P<close>\\*[\"'`]?)(?P<sep>[ \t]*(?::|=|:=)[ \t]*){_LINE_VALUE}"
_LINE_WORDS: tuple[tuple[str, str], ...] = (
    (r"salt", "salt"),
    (r"dsn", "dsn"),
    (r"key_?id", "yid y_id"),
    (r"cookie", "okie"),
    (r"auth", "uth"),
    (r"token", "ken"),
    (r"secret", "cret"),
    (r"pass(?:word|wd|phrase)?", "pass"),
    (r"pwd", "pwd"),
    (r"key", "key"),
    (r"credentials?", "cred"),
)
_CONTEXT_TAIL = (  # ``token is ...``, ``password was ...``: a value said after a secret's name
    r"(?:\*\*)?(?:[ \t]*(?:(?:is|was|are|now|value|of|to|set to|changed to|rotated to)(?![a-z])"
    r"|->|:))+[ \t]*[`'\"]?(?P<secret>[A-Za-z0-9+/_.~\-]{12,256}=*)"
)
_CONTEXT_WORDS: tuple[tuple[str, str], ...] = (
    (r"token", "ken"),
    (r"secret(?:[ _-]?key)?", "cret"),
    (r"pass(?:word|wd|phrase)", "pass"),
    (r"api[ _-]?key", "key"),
    (r"access[ _-]?key", "key"),
    (r"private[ _-]?key", "key"),
    (r"credentials?", "cred"),
    (r"(?:signing|encryption|master|deploy|license|session|shared|hmac|cookie)[ _-]?key", "key"),
    (r"salt", "salt"),
)
_ENV_ASSIGN = (  # from the key's last word; :func:`env_check` reads the whole key back
    r"(?P<suffix>PASSWORD|PASSWD|PASSPHRASE|PASS|PWD|PW|SECRET|TOKEN|KEY|CREDENTIALS?|SALT|DSN"
    r"|COOKIE|KEY_ID)"
    rf"(?:_?[0-9]{{1,2}})?(?P<pad>[ \t]*)[?:+]?=[ \t]*{_ENV_VALUE}"
)
_ENV_SET_TAIL = (  # ``KEY VALUE`` after fish ``set -x``, csh ``setenv``, ``setx``, ``ENV``
    r"[ \t]+(?P<key>[A-Za-z0-9_]*?(?i:pass(?:word|wd|phrase)?|pwd|pw|secret|token|key"
    rf"|credentials?)(?:_?[0-9]{{1,2}})?)(?P<gap>[ \t]+){_ENV_VALUE}"
)
_PEM = r"-----BEGIN (?P<label>[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----"
_AWS_SECRET = (
    r"aws_?secret_?access_?key\\*[\"']?\s*[:=]\s*\\*[\"']?"
    r"(?P<secret>[a-z0-9/+=]{40})(?![a-z0-9/+=])"
)
_BEARER = r"bearer\s+(?P<secret>[a-z0-9._~+/\-]{16,}=*)"
_URL_USER = r":(?:\\{0,3}/){2}[^\s:@/?#'\"<>\\]{0,128}:"  # also JSON-escaped: ``:\/\/``
_URL_PASSWORD = rf"{_URL_USER}(?P<secret>[^\s/?#'\"<>\\]{{1,256}})@(?=[A-Za-z0-9\[])"
_URL_PASSWORD_SLASH = (  # a raw ``/`` or ``#`` in the password: up to the first ``@`` after it
    rf"{_URL_USER}(?P<secret>[^\s@/?#'\"<>\\]{{0,128}}[/?#][^\s@'\"<>\\]{{0,128}})@(?=[A-Za-z0-9\[])"
)
_URL_ENCODED = (  # ``postgres%3A%2F%2Fuser%3Apw%40host``, matched in lower case
    r"%3a%2f%2f(?:[a-z0-9._~\-]|%(?!3a)[0-9a-f]{2}){0,128}%3a"
    r"(?P<secret>(?:[^\s&/?#'\"<>%\\]|%(?!2f)[0-9a-f]{2}){1,256})%40"
)
_AUTH_HEADER = (
    r"authorization\\*[\"']?\s*[:=]\s*\\*[\"']?"
    r"(?:(?P<scheme>bearer|basic|token|digest|bot|apikey)\s+)?(?P<secret>[a-z0-9._~+/=\-]{4,})"
)
_HEADER = (  # ``X-Functions-Key: v``: from the name's last word; the check reads the name back
    r"-(?:key|token|secret|auth|sessionid|session|password|apikey)\\*[\"']?[ \t]*:[ \t]*"
    r"\\*[\"']?(?P<secret>[^\s\"'\\,;]{1,512})"
)
_COOKIE = (
    r"(?P<set>set-)?cookie\\*[\"']?[ \t]*:[ \t]*\\*[\"']?"
    r"(?P<secret>[^\n\r\"'\\]{1,2048})"
)
_NETRC_TAIL = (
    r"(?:(?:\s|\\[nrt])+(?:login|account|port)(?:\s|\\[nrt])+[^\s\\]+)*(?:\s|\\[nrt])+password"
    r"(?:\s|\\[nrt])+(?P<uv>[^\s\\\"']{1,256})"
)
_SQL_TAIL = r"[ \t]+(?P<q>')(?P<qv>[^'\n]{1,256})'"  # ``PASSWORD 'pw'``, ``IDENTIFIED BY 'pw'``
_XML_ELEMENT = (  # ``<password>pw</password>`` (Maven settings, .NET config), in lower case
    r"<(?P<key>[a-z0-9_.:\-]{0,40}?(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key"
    r"|apikey|access[_-]?key|private[_-]?key|credentials?))>(?P<uv>[^<\s]{1,512})</(?P=key)>"
)
_WEBHOOKS = (  # a webhook URL is its own credential: (pattern, needle)
    (
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/\-]{20,})",
        "hooks.slack.com",
    ),
    (r"discord(?:app)?\.com/api/webhooks/(?P<secret>\d{5,}/[A-Za-z0-9_\-]{20,})", "/api/webhooks/"),
    (r"webhook\.office\.com/webhookb2/(?P<secret>[^\s\"'<>\\]{20,})", "webhook.office.com"),
    (r"hooks\.zapier\.com/hooks/catch/(?P<secret>[0-9]+/[A-Za-z0-9]+)", "hooks.zapier.com"),
)
_ENV_KEY = rf"_(?:KEY|AUTH)[ \t]*=[ \t]*{_VALUE}"

_MYSQL = rf"\b{_SEG}-p(?![\w-]*=)[ \t]*{_CLI_VALUE}"
_DASH_P = rf"\b{_SEG}-p[ \t]*{_CLI_VALUE}"
_DASH_BIG_P = rf"\b{_SEG}-P[ \t]+{_CLI_VALUE}"
_SMB_USER = (
    r"\b[^\n|;&]{0,200}?(?:-U|--user(?:name)?)(?:=|[ \t]+)?[^\s%'\"]+%(?P<uv>[^\s'\"]{1,256})"
)
_ORACLE = r"[ \t]+(?:-\w+[ \t]+)*[\w$#.\-]+/(?P<uv>[^\s@/'\"]{1,256})"
_TARGET = (  # impacket's ``[domain/]user:password@host``
    r"\b[^\n|;&@]{0,120}?(?<=[\s'\"])(?:[\w.\-]+/)?[\w.\-$]+:(?P<uv>[^\s'\"@]{1,128})@(?=[\w\[])"
    r"(?!sha\d+:)"
)
_ECHO_PIPE = (  # ``echo PW | docker login --password-stdin``, ``| sudo -S``, ``| chpasswd``
    r"(?:[ \t]+-[ne]+)*[ \t]+(?:(?P<q>[\"'])(?P<qv>[^\"'\n]{1,256})(?P=q)|(?P<uv>[^\s|;&\"'`]"
    r"{1,256}))[ \t]*\|[ \t]*(?=sudo[ \t]+(?:-S|--stdin)|passwd[ \t]+--stdin|chpasswd"
    r"|[^\n|;&]*--password-stdin|kinit\b)"
)
_ECHO_NEEDLES = ("-stdin", "do -s", "hpasswd", "kinit")

# (command, its needles, what follows it): one rule per command, so that each pattern starts
# with a literal (sre skips to a literal fast, but tries an alternation at every position).
_CLI_COMMANDS: tuple[tuple[str, str | tuple[str, ...], str], ...] = (
    (r"mysql(?:dump|admin|import|check|show|pump|sh)?", "mysql", _MYSQL),
    (r"mariadb(?:-dump|-admin)?", "mariadb", _MYSQL),
    (r"sshpass", "hpass", _DASH_P),
    (r"nxc", ("xc ",), _DASH_P),
    (r"netexec", "xec", _DASH_P),
    (r"crackmapexec", "xec", _DASH_P),
    (r"cme", ("cme ",), _DASH_P),
    (r"evil-winrm", "vil-winrm", _DASH_P),
    (r"hydra", ("hydra ",), _DASH_P),
    (r"medusa", ("medusa ",), _DASH_P),
    (r"rdesktop", ("desktop ",), _DASH_P),
    (r"mongo(?:sh|dump|restore|export|import)?", "mongo", _DASH_P),
    (r"redis-cli", "dis-cli", rf"\b{_SEG}-a[ \t]+{_CLI_VALUE}"),
    (r"sqlcmd", "qlcmd", _DASH_BIG_P),
    (r"bcp", "bcp", _DASH_BIG_P),
    (r"mosquitto_(?:pub|sub)", "mosquitto", _DASH_BIG_P),
    (r"zip(?:cloak)?", "zip", _DASH_BIG_P),
    (r"unzip", "zip", _DASH_BIG_P),
    (r"7z[ar]?", "7z", rf"\b{_SEG}-p{_CLI_VALUE}"),
    (r"ldap[a-z]+", "dap", rf"\b{_SEG}-w[ \t]+{_CLI_VALUE}"),
    (r"xfreerdp", "freerdp", rf"\b{_SEG}/p:{_CLI_VALUE}"),
    (r"wlfreerdp", "freerdp", rf"\b{_SEG}/p:{_CLI_VALUE}"),
    (r"sdl-freerdp", "freerdp", rf"\b{_SEG}/p:{_CLI_VALUE}"),
    (r"smb(?:client|map|cacls)", ("mbcl", "mbmap", "mbca"), _SMB_USER),
    (r"rpcclient", "pcclient", _SMB_USER),
    (r"nxc", ("xc ",), _SMB_USER),
    (r"netexec", "xec", _SMB_USER),
    (r"crackmapexec", "xec", _SMB_USER),
    (r"mount\.cifs", ".cifs", _SMB_USER),
    (r"impacket-\w+", "mpacket", _TARGET),
    (r"\.py", ".py", _TARGET),
    (r"sql(?:plus|ldr)", "qlplus qlldr", _ORACLE),
    (r"expdp", "xpdp", _ORACLE),
    (r"impdp", "mpdp", _ORACLE),
    (r"echo", _ECHO_NEEDLES, _ECHO_PIPE),
    (r"printf", _ECHO_NEEDLES, _ECHO_PIPE),
)
_HTPASSWD = (
    r"htpasswd(?P<flags>(?:[ \t]+-[A-Za-z]+(?:[ \t]+\d+)?)+)[ \t]+(?P<a1>[^\s|;&]+)"
    r"[ \t]+(?P<a2>[^\s|;&]+)(?:[ \t]+(?P<a3>[^\s|;&]+))?"
)
# Options that carry a password whatever the command: (pattern, needles, check).
_CLI_OPTIONS: tuple[tuple[str, str | tuple[str, ...], Check], ...] = (
    (
        r"--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|pwd|secret|token|api-?key"
        r"|access-key|secret-key|auth-token|client-secret|private-key|storepass|keypass"
        rf"|requirepass|masterauth)(?:=|{_WS}+){_CLI_VALUE}",
        "--",
        cli_check,
    ),
    (
        r"-(?:src|dest)?(?:storepass|keypass|storepassword|keypassword)(?::|=|[ \t]+)"
        rf"{_CLI_VALUE}",
        "pass",
        cli_check,
    ),
    (rf"-(?:passin|passout|pass|password)[ \t]+pass:{_CLI_VALUE}", "pass:", cli_check),
    (  # ``docker login -p``; :func:`login_check` reads the command back
        rf"login\b{_SEG}(?:-p|--password)(?:=|[ \t]+){_CLI_VALUE}",
        "login",
        login_check,
    ),
    (
        r"-(?:u|-user|a|-auth|-proxy-user|U)(?:=|[ \t]+)?(?P<q>\\*[\"'])?"
        r"[^\s:\"'\\]{0,128}:(?P<secret>[^\s\"'\\]{1,256})",
        "curl wget ftp http",
        curl_user_check,
    ),
    (r"-u[ \t]+[^\s,]+,(?P<uv>[^\s\"'\\]{1,256})", "ftp", curl_user_check),
    (
        r"-(?:b|-cookie)(?:=|[ \t]+)\\*[\"']?[A-Za-z0-9_.\-]+=(?P<uv>[^\s\"'\\;]{1,1024})",
        "curl",
        curl_user_check,
    ),
    (rf"secret[ \t]+set[ \t]+\S+[ \t]+(?:-b|--body)(?:=|[ \t]+){_CLI_VALUE}", "cret", cli_check),
    (rf"--from-literal[= ][^=\s'\"]+={_CLI_VALUE}", "--from-literal", cli_check),
    (
        r"config(?:ure)?[ \t]+set[ \t]+\S*(?:token|password|passwd|secret|_auth)\S*[ \t]+"
        + _CLI_VALUE,
        "fig",
        cli_check,
    ),
)


def _cli_rules() -> tuple[Rule, ...]:
    rules = [
        _r("cli_password", head + tail, needles, cli_check, word_start=True)
        for head, needles, tail in _CLI_COMMANDS
        if tail
    ]
    rules.append(_r("cli_password", _HTPASSWD, "htpasswd", htpasswd_check, word_start=True))
    rules += [_r("cli_password", p, n, c, word_start=True) for p, n, c in _CLI_OPTIONS]
    return tuple(rules)


_VENDOR_RULES = (
    _v("anthropic_key", rf"sk-ant-[{_T}]{{20,}}", "k-ant-", key_body_check),
    _v("openai_key", rf"sk-(?!ant-)[{_T}]{{20,}}", "k-", key_body_check),
    _v("github_token", r"gh[pousr]_[A-Za-z0-9]{30,}", "ghp_ gho_ ghu_ ghs_ ghr_"),
    _v("github_token", rf"github_pat_[{_T}]{{22,}}", "github_pat_"),
    _v("gitlab_token", rf"gl[a-z]{{2,7}}-[{_T}]{{20,}}", "gl", gitlab_check),
    _v("gitlab_token", rf"GR1348941[{_T}]{{20,}}", "GR1348941"),
    _v("huggingface_token", r"(?:hf_|api_org_)[A-Za-z]{30,}", "hf_ _org_", letters_check),
    _v("aws_access_key_id", r"A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])", "AKIA ASIA"),
    _v("slack_token", r"(?:xox[abeoprs]|xapp)-[A-Za-z0-9\-]{10,}", "xox xapp-"),
    _v("slack_token", r"xoxe\.xox[bp]-[A-Za-z0-9\-]{10,}", "xoxe."),
    _v("stripe_key", r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}", "k_live_ k_test_"),
    _v("stripe_key", r"whsec_[A-Za-z0-9+/=]{24,}", "whsec_"),
    _v("google_api_key", rf"AIza[{_T}]{{35,}}", "AIza"),
    _v(
        "google_oauth",
        rf"(?:GOCSPX-[{_T}]{{24,}}|ya29\.[{_T}]{{30,}}|1//0[{_T}]{{40,}})",
        "GOCSPX- ya29. 1//0",
    ),
    _v("npm_token", r"npm_[A-Za-z0-9]{36,}", "pm_"),
    _v("shopify_token", r"shp(?:at|ss|ca|pa|ua)_[A-Za-z0-9]{32,}", "hpat_ hpss_ hpca_ hppa_ hpua_"),
    _v("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}", "_v1_"),
    _v("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?(?![A-Za-z0-9])", "dapi"),
    _v("sendgrid_key", rf"SG\.[{_T}]{{22}}\.[{_T}]{{43}}", "SG."),
    _v("pypi_token", rf"pypi-AgE[{_T}]{{50,}}", "-AgE"),
    _v("twilio_key", r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", "SK"),
    _v("mailgun_key", r"key-[0-9a-f]{32}(?![0-9a-f])", "key-"),
    _v("mailchimp_key", r"-us\d{1,2}(?![0-9A-Za-z])", "-us", hex_before_check),
    _v("atlassian_token", rf"(?:ATATT3|ATCTT3|ATBB)[{_T}=]{{24,}}", "ATATT3 ATCTT3 ATBB"),
    _v("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}", "_api_ _oauth_"),
    _v("notion_token", r"secret_[A-Za-z0-9]{40,}", "cret_", token_body_check),
    _r("notion_token", r"ntn_[A-Za-z0-9]{40,}", "", token_body_check, bounded=True, min_len=44),
    _v("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "PMAK-"),
    _v("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", "dp."),
    _v("vault_token", rf"hv[sbr]\.[{_T}]{{24,}}", "hvs. hvb. hvr."),
    _v(
        "grafana_token",
        r"glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}",
        "glc_ glsa_",
    ),
    _v("grafana_token", r"eyJrIjoi[A-Za-z0-9+/]{40,}={0,2}", "JrIjoi"),
    _v(
        "newrelic_key",
        r"NR(?:AK|AA|II|JS|RA|SP)-[A-Za-z0-9]{19,}",
        "NRAK- NRAA- NRII- NRJS- NRRA- NRSP-",
    ),
    _v("sentry_token", r"sntry[su]_[A-Za-z0-9+/=_\-]{40,}", "ys_ yu_"),
    _v("heroku_key", rf"HRKU-[{_T}]{{20,}}", "HRKU-"),
    _r("discord_token", rf"\.[{_T}]{{6}}\.[{_T}]{{27,40}}", "", discord_check, min_len=59),
    _r("telegram_token", rf":(?P<body>[{_T}]{{35}})(?![{_T}])", "", telegram_check, min_len=44),
    _v("square_token", rf"sq0(?:atp|csp|idp)-[{_T}]{{22,}}", "q0"),
    _v("docker_token", rf"dckr_(?:pat|oat)_[{_T}]{{20,}}", "kr_"),
    _v(
        "age_secret_key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        "AGE-SECRET-KEY-1",
    ),
    _v("supabase_key", rf"sb(?:p|_secret)_[{_T}]{{32,}}", "bp_ b_secret_"),
    _v("planetscale_token", rf"pscale_(?:tkn|pw|oauth)_[{_T}.]{{32,}}", "pscale_"),
    _v("flyio_token", rf"fo1_[{_T}]{{40,}}|fm[12][ar]?_[{_T}+/=]{{60,}}", "fo1_ fm1 fm2"),
    _v("figma_token", rf"figd_[{_T}]{{38,}}", "figd_"),
    _v("terraform_token", rf"[A-Za-z0-9]{{14}}\.atlasv1\.[{_T}=]{{60,}}", ".atlasv1."),
    _v("pulumi_token", r"pul-[a-f0-9]{40}", "pul-"),
    _v("groq_key", r"gsk_[A-Za-z0-9]{48,}", "gsk_"),
    _v("replicate_token", r"r8_[A-Za-z0-9]{37,}", "r8_"),
    _v("perplexity_key", r"pplx-[A-Za-z0-9]{40,}", "pplx-"),
    _v("xai_key", r"xai-[A-Za-z0-9]{60,}", "xai-"),
    _v("tavily_key", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}", "vly-"),
    _v("langsmith_key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", "v2_"),
    _v("buildkite_token", r"bkua_[a-f0-9]{40}", "bkua_"),
    _v("circleci_token", r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}", "CCIPAT_"),
    _v("dynatrace_token", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}", "0c01."),
    _v("sourcegraph_token", r"sgp_(?:local_)?[a-f0-9]{40}", "gp_"),
    _v("alibaba_key", r"LTAI[A-Za-z0-9]{12,20}(?![A-Za-z0-9])", "LTAI", mixed_check),
    _v("onepassword_token", rf"ops_eyJ[{_T}+/=]{{100,}}", "_eyJ"),
    _v("jfrog_token", r"AKCp[A-Za-z0-9]{60,}|cmVmdGtu[A-Za-z0-9]{50,}", "AKCp VmdGtu"),
    _v("airtable_token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", "pat"),
    _v("mapbox_token", rf"sk\.eyJ[{_T}]{{20,}}\.[{_T}]{{20,}}", "k.eyJ"),
    _v("cloudflare_key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", "v1.0-"),
    _v("azure_client_secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}", "q~"),
    _v("firebase_key", rf"AAAA[{_T}]{{7}}:APA91b[{_T}]{{100,}}", "APA91b"),
    _v("twitter_token", r"A{21}[A-Za-z0-9%]{30,}", "AAAAAAAAAAAAAAAAAAAAA", twitter_check),
    _v("facebook_token", r"EAA[A-Za-z0-9]{80,}", "EAA", mixed_check),
    _v("netlify_token", r"nfp_[A-Za-z0-9]{36,}", "fp_"),
    _r("render_key", r"rnd_[A-Za-z0-9]{32,}", "", token_body_check, bounded=True, min_len=36),
    _v("neon_key", r"napi_[a-z0-9]{60,}", "pi_"),
    _v("rubygems_key", r"rubygems_[a-f0-9]{48}", "bygems_"),
    _v("nuget_key", r"oy2[a-z0-9]{43}(?![a-z0-9])", "y2"),
    _v("clojars_token", r"CLOJARS_[a-z0-9]{60}", "CLOJARS_"),
    _v("contentful_token", rf"CFPAT-[{_T}]{{43}}", "CFPAT-"),
    _v("prefect_key", r"pnu_[A-Za-z0-9]{36}", "pnu_"),
    _v("readme_key", r"rdme_[a-z0-9]{70}", "dme_"),
    _v(
        "plaid_token",
        r"access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f\-]{27}",
        "ccess-",
    ),
)

RULES: tuple[Rule, ...] = (
    _r("private_key", _PEM + r"(?P<secret>[\s\S]{1,16000}?)-----END (?P=label)-----", "-----begin"),
    _r("private_key", _PEM + r"(?P<secret>(?:(?!-----)[\w+/=\s:,.\\-]){1,16000})", "-----begin"),
    _r(
        "private_key",
        r"private-lines:[ \t]*\d+(?:\r?\n|\\r?\\n)"  # PuTTY's ``.ppk``: the lines after it
        r"(?P<secret>(?:[A-Za-z0-9+/=]{4,}(?:\r?\n|\\r?\\n)){0,400}[A-Za-z0-9+/=]{4,})",
        "-lines:",
        on_lower=True,
    ),
    _r("private_key", r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{40,}", "LS0tLS1CRUdJTi", pem_base64_check),
    _r(  # the look-behind after ``eyJ`` skips a mid-run ``eyJ`` before scanning the run
        "jwt",
        rf"eyJ(?:(?<![{_T}]eyJ)|(?<=\\[nrt]eyJ))[{_T}]{{5,}}\.[{_T}]{{8,}}\.[{_T}]{{8,}}",
        "yJ",
        bounded=True,
    ),
    *_VENDOR_RULES,
    _r("aws_secret_key", _AWS_SECRET, "ws", on_lower=True),
    _r(
        "azure_storage_key",
        r"(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
        "AccountKey= SharedAccessKey=",
    ),
    _r(
        "azure_storage_key",
        r"[?&;]sig=(?P<secret>(?:[A-Za-z0-9+/]|%2[bBfF]|%3[dD]){20,})",
        "&sig= ?sig= ;sig=",
    ),
    *(
        _r("webhook_url", pattern, needle, webhook_check, word_start=True)
        for pattern, needle in _WEBHOOKS
    ),
    _r("npm_token", rf"_auth(?:Token)?[ \t]*=[ \t]*{_VALUE}", "_auth", npmrc_check),
    _r("url_password", _URL_PASSWORD, ":// :\\", url_check),
    _r("url_password", _URL_PASSWORD_SLASH, ":// :\\", url_check),
    _r("url_password", _URL_ENCODED, "%3a%2f%2f", url_check, on_lower=True),
    _r("auth_header", _AUTH_HEADER, "zation", credential_check, on_lower=True),
    _r(
        "auth_header",
        _HEADER,
        "-key -token -secret -auth -session -password -apikey",
        header_check,
        on_lower=True,
    ),
    _r("bearer_token", _BEARER, "bearer", credential_check, on_lower=True),
    _r("session_cookie", _COOKIE, "kie", cookie_check, on_lower=True, word_start=True),
    *_cli_rules(),
    _r(  # ``.pgpass``: ``host:port:db:user:password``; the check reads the host back
        "password_file",
        r"(?m):(?P<port>\d{1,5}|\*):[^:\s\\\",{}\[\]]+:[^:\s\\\",{}\[\]]+:"
        r"(?P<secret>[^\s\\\":]{1,256})"  # a colon in it is escaped: ``\:``
        r"(?=[ \t]*\r?(?:$|\\[nr]|\\*\"))",  # the line ends, or the JSON string holding it
        ":0 :1 :2 :3 :4 :5 :6 :7 :8 :9 :*",
        pgpass_check,
        min_len=11,
    ),
    *(
        _r(  # ``.netrc``: ``machine HOST login USER password PW``
            "password_file",
            head + _NETRC_TAIL,
            needle,
            cli_check,
            on_lower=True,
            word_start=True,
        )
        for head, needle in ((r"machine(?:\s|\\[nrt])+[^\s\\]+", "machine"), ("default", "fault"))
    ),
    *(
        _r("sql_password", head + _SQL_TAIL, needle, cli_check, on_lower=True, word_start=True)
        for head, needle in (
            ("password", "pass"),
            (r"identified(?:[ \t]+with[ \t]+\w+)?[ \t]+by", "dentified"),
        )
    ),
    _r("secret_value", _ENV_ASSIGN, "pass pwd _pw cret ken key cred salt dsn okie", env_check),
    _r(
        "secret_value",
        r"set(?:x|env)?(?:[ \t]+-[A-Za-z]+)*" + _ENV_SET_TAIL,
        ("x ", "v "),
        env_check,
        word_start=True,
    ),
    _r("secret_value", "ENV" + _ENV_SET_TAIL, ("ENV ",), env_check, word_start=True),
    *(
        _r("secret_value", f"(?P<key>{w}){_KEYED_TAIL}", n, secret_value_check, on_lower=True)
        for w, n in _KEY_WORDS
    ),
    *(
        _r("secret_value", f"(?P<key>{w}){_LINE_TAIL}", n, line_value_check, on_lower=True)
        for w, n in _LINE_WORDS
    ),
    _r("secret_value", _XML_ELEMENT, "pass pwd cret ken key cred", xml_check, on_lower=True),
    _r("secret_value", _ENV_KEY, "_key _auth", env_key_check),
    *(
        _r("secret_context", w + _CONTEXT_TAIL, n, context_check, on_lower=True)
        for w, n in _CONTEXT_WORDS
    ),
    _r("high_entropy", r"[A-Za-z0-9+/_.\-]{32,}=*", "", high_entropy_check, min_len=32),
)
