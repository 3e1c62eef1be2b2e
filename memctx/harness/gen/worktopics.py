"""Topics about the agent's own working state: its rules, todo items, files, reasons.

The fact topics of :mod:`~memctx.harness.gen.topics` are about the project (a port, a
library, a root cause). The complaints most often filed against agent compaction are about
the work itself: an instruction given early ("never use X", "always run Y before
committing") lost after a compaction, a todo item's state forgotten, so finished work is
redone. These topics plant that state with the same machinery, so the same invariants hold
(a value occurs only where it was stated; a revision makes the earlier value stale):

- :data:`RULE_TOPICS` (kind ``rule``): a constraint laid down by the user or read from the
  project's contributing notes, sometimes revised later; the probe expects the rule in force.
- :data:`TASK_TOPICS` (kind ``task``): a todo item, first stated open (blocked until some
  change lands), and for some items later ticked off (merged in another change); the probe
  asks whether it is done and expects the latest status's change reference.
- :data:`ARTIFACT_TOPICS` (kind ``artifact``): a file renamed, created, deleted or edited,
  stated only by the tool call that did it (its input; the output does not repeat it); the
  probe asks for the new name, the new file, the deleted file or the new content.
- :data:`DECISION_TOPICS` (kind ``rationale``): a choice made during the work and the reason
  given for it; the probe names the choice and expects the reason.
- :data:`CURRENT_STEP` (kind ``continuation``): the step of work in progress, restated as
  the work moves on; asked once the context has moved past it, it expects the latest step.

Values are drawn from the generator's rare words and number ranges filler never uses, so
each is distinctive; the builder still redraws one that collides with anything else.
"""

from __future__ import annotations

import random

from .topics import Topic
from .values import RARE, SOURCE_EXT, Draw, Value

__all__ = [
    "ARTIFACT_TOPICS",
    "CURRENT_STEP",
    "DECISION_TOPICS",
    "RULE_TOPICS",
    "TASK_TOPICS",
]


def _value(text: str, *aliases: str) -> Value:
    return Value(text, text, text, tuple(dict.fromkeys((text, *aliases))))


def _rare(rng: random.Random) -> str:
    return rng.choice(RARE)


def _precommit(rng: random.Random, _lang: str) -> Value:
    word = _rare(rng)
    text = rng.choice(
        (f"make {word}-check", f"./scripts/{word}_gate.sh", f"just {word}-verify", f"tox -e {word}")
    )
    return _value(text)


def _banned_lib(rng: random.Random, _lang: str) -> Value:
    word = _rare(rng)
    return _value(rng.choice((f"{word}js", f"py{word}", f"{word}-utils", f"lib{word}")))


def _line_length(rng: random.Random, _lang: str) -> Value:
    n = rng.choice([n for n in range(91, 140) if n % 10 not in (0, 5)])
    return _value(f"{n} columns", f"{n} characters", f"{n} chars", f"{n} cols")


def _branch_prefix(rng: random.Random, _lang: str) -> Value:
    return _value(f"{_rare(rng)}/")


def _protected_dir(rng: random.Random, _lang: str) -> Value:
    root = rng.choice(("vendor", "third_party", "generated", "legacy"))
    return _value(f"{root}/{_rare(rng)}/")


_PEOPLE = (
    "Ines Okafor", "Tomasz Wielgus", "Priya Raman", "Dara Lindqvist", "Mateo Ferrante",
    "Yuki Tanabe", "Amara Nwosu", "Soren Haugland", "Lucia Benedetti", "Kofi Mensah",
    "Anika Vasquez", "Bjorn Ekdahl", "Leila Haddad", "Ravi Chandrasekar", "Elif Demir",
)  # fmt: skip


def _reviewer(rng: random.Random, _lang: str) -> Value:
    name = rng.choice(_PEOPLE)
    return _value(name)


def _commit_prefix(rng: random.Random, _lang: str) -> Value:
    return _value(f"{_rare(rng).upper()}-")


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday")


def _deploy_window(rng: random.Random, _lang: str) -> Value:
    day = rng.choice(_DAYS)
    hour, minute = rng.randint(9, 16), rng.choice((10, 20, 40, 50))
    return _value(f"{day}s after {hour}:{minute}", f"{day} after {hour}:{minute}")


def _pr_size(rng: random.Random, _lang: str) -> Value:
    n = rng.choice([n for n in range(310, 890) if n % 10])
    return _value(f"{n} changed lines", f"{n} lines")


def _test_seed(rng: random.Random, _lang: str) -> Value:
    return _value(f"--seed={rng.randint(1103, 9871)}")


def _forbidden_cmd(rng: random.Random, _lang: str) -> Value:
    word = _rare(rng)
    return _value(rng.choice((f"make {word}-reset", f"./scripts/{word}_purge.sh")))


def _error_prefix(rng: random.Random, _lang: str) -> Value:
    return _value(f"{_rare(rng).upper()}_E")


def _merge_label(rng: random.Random, _lang: str) -> Value:
    return _value(f"{_rare(rng)}-approved")


def _profile(rng: random.Random, _lang: str) -> Value:
    return _value(f"{_rare(rng)}-local")


def _rule(
    key: str,
    draw: Draw,
    subj: tuple[str, ...],
    q: tuple[str, ...],
    para: tuple[str, ...],
    short: tuple[str, ...],
    statements: tuple[str, ...],
    revisions: tuple[str, ...],
    line: str,
) -> Topic:
    return Topic(
        f"rule-{key}", "rule", draw, subj, (), q, para, short, (), (),
        {"readme": (line,)}, statements, revisions,
    )  # fmt: skip


RULE_TOPICS: tuple[Topic, ...] = (
    _rule("precommit", _precommit,
          ("the pre-commit check", "the command to run before committing"),
          ("What must I run before committing?", "Which command is required before every commit?"),
          ("What has to pass on my machine before I save work into version control?",),
          ("pre-commit?",),
          ("Ground rule for this repo: always run `{val}` before committing.",
           "Before every commit, run `{val}`. No exceptions, please.",
           "Please never commit without running `{val}` first."),
          ("Rule change: the check before committing is now `{val}`; drop the old one.",
           "Update to the commit rule: run `{val}` before committing from now on."),
          "- Always run `{code}` before committing."),
    _rule("banned-lib", _banned_lib,
          ("the banned dependency", "the library we must not use"),
          ("Which library are we forbidden to use?", "What dependency is banned in this repo?"),
          ("Which package should never show up in our imports?",),
          ("banned lib?",),
          ("Never use {val} in this codebase; it is banned.",
           "Hard rule: do not add or import {val} anywhere.",
           "We don't use {val} here, ever. Please keep that in mind."),
          ("Change to the dependency ban: {val} is the banned one now, the old one is fine again.",
           "New ban list: never import {val}; the earlier ban is lifted."),
          "- Do not depend on {code}; it is banned."),
    _rule("line-length", _line_length,
          ("the maximum line length", "where lines wrap"),
          ("What's the maximum line length?", "At what width do lines have to wrap?"),
          ("How wide may a row of source text get before I must break it?",),
          ("line length?",),
          ("House style: keep every line within {val}.",
           "Style rule: lines wrap at {val}, please stick to it.",
           "Formatting rule for all files: max {val} per line."),
          ("Style change: the line limit is now {val}.",
           "We relaxed the formatter: lines may now run to {val}."),
          "- Lines wrap at {code}."),
    _rule("branch-prefix", _branch_prefix,
          ("the branch naming rule", "the prefix for branch names"),
          ("What prefix must branch names start with?", "How do we have to name branches?"),
          ("What goes at the front of every new line of development I open in git?",),
          ("branch prefix?",),
          ("Rule: every branch name starts with `{val}`, then the ticket.",
           "Please always prefix branches with `{val}`; CI ignores anything else.",
           "Branch naming is strict here: `{val}` followed by a short slug."),
          ("Branch rule changed: use the `{val}` prefix from now on.",
           "New branch convention: names start with `{val}` instead."),
          "- Branch names start with `{code}`."),
    _rule("protected-dir", _protected_dir,
          ("the directory we must never edit", "the folder that is off limits"),
          ("Which directory must we never edit?", "What folder is off limits for changes?"),
          ("Where in the tree are hand edits forbidden because it is regenerated?",),
          ("no-edit dir?",),
          ("Never edit anything under {val}; it is regenerated upstream.",
           "Hands off {val}: no manual changes there, ever.",
           "Rule: files in {val} are not ours to touch."),
          ("Correction to the hands-off rule: it's {val} that must never be edited now.",
           "The protected folder moved: never touch {val}."),
          "- Never edit files under {code} by hand."),
    _rule("reviewer", _reviewer,
          ("the required reviewer for migrations", "who must review schema migrations"),
          ("Who has to review migrations?", "Whose review does a schema migration need?"),
          ("Whose approval is mandatory before a change to the tables goes in?",),
          ("migration reviewer?",),
          ("Every migration needs a review from {val} before it merges.",
           "Rule: schema migrations are approved by {val}, nobody else.",
           "Don't merge a migration until {val} has signed off."),
          ("Reviewer change: migrations now go to {val} for approval.",
           "From now on {val} reviews every migration instead."),
          "- Migrations need a review from {code}."),
    _rule("commit-prefix", _commit_prefix,
          ("the commit message prefix", "how commit subjects must start"),
          ("What must commit messages start with?", "Which prefix do commit subjects need?"),
          ("What goes first in the one-line description of each change I record?",),
          ("commit prefix?",),
          ("Commit subjects must start with the ticket key `{val}`.",
           "Rule: prefix every commit message with `{val}` and the ticket number.",
           "Please begin each commit subject with `{val}`; the changelog tool needs it."),
          ("Commit convention changed: subjects start with `{val}` now.",
           "New ticket key for commits: `{val}`."),
          "- Commit subjects start with `{code}`."),
    _rule("deploy-window", _deploy_window,
          ("the deploy window", "when we may deploy"),
          ("When are we allowed to deploy?", "What's our deploy window?"),
          ("At what time of the week may a release go out to customers?",),
          ("deploy window?",),
          ("Only deploy on {val}; never outside that window.",
           "Release rule: production deploys happen {val}, nothing else.",
           "Remember the freeze: we ship only on {val}."),
          ("Deploy window moved: ship only on {val} from now on.",
           "Ops changed the window, it's {val} now."),
          "- Production deploys only on {code}."),
    _rule("pr-size", _pr_size,
          ("the pull request size limit", "how big a PR may be"),
          ("How big may a PR be?", "What's the size limit for a pull request?"),
          ("How much can a single change request contain before it must be split?",),
          ("PR limit?",),
          ("Keep each PR under {val}; split anything bigger.",
           "Rule: no pull request over {val}, reviewers won't take it.",
           "Please cap every PR at {val}."),
          ("PR size rule updated: the cap is {val} now.",
           "We loosened the review rule, PRs may have up to {val}."),
          "- Pull requests stay under {code}."),
    _rule("test-seed", _test_seed,
          ("the flag the test runs must use", "how the tests must be invoked"),
          ("Which flag must the test runs use?", "What option do we always pass to the tests?"),
          ("What do I add to the test invocation so a failure replays identically?",),
          ("test flag?",),
          ("Always run the test suite with `{val}` so failures reproduce.",
           "Rule: every test run passes `{val}`; don't drop it.",
           "Please keep `{val}` on every test invocation."),
          ("Test rule change: pass `{val}` from now on.",
           "We rotated the test seed: always use `{val}` now."),
          "- Run the tests with `{code}`."),
    _rule("forbidden-cmd", _forbidden_cmd,
          ("the command we must never run", "the forbidden command"),
          ("Which command must I never run?", "What command is forbidden here?"),
          ("Which invocation would wipe the shared data and so must not be typed?",),
          ("forbidden cmd?",),
          ("Never run `{val}`; it wipes the shared database.",
           "Hard rule: `{val}` is off limits, it destroys staging data.",
           "Do not ever run `{val}`, even locally against the shared DB."),
          ("The dangerous one is now `{val}`; never run it.",
           "Forbidden-command update: `{val}` is the one to never run."),
          "- Never run `{code}`: it wipes the shared database."),
    _rule("error-prefix", _error_prefix,
          ("the prefix for new error codes", "how error codes are named"),
          ("What prefix do new error codes take?", "How must new error codes be named?"),
          ("What do the identifiers of freshly added failure cases begin with?",),
          ("error prefix?",),
          ("Every new error code must use the `{val}` prefix.",
           "Rule for errors: codes are named `{val}` plus a number.",
           "Please prefix new error codes with `{val}`."),
          ("Error code convention changed: new codes use `{val}`.",
           "New prefix for error codes: `{val}`."),
          "- New error codes use the `{code}` prefix."),
    _rule("merge-label", _merge_label,
          ("the label a migration PR needs", "the merge label for migrations"),
          ("Which label does a migration PR need?", "What label must be on a migration PR?"),
          ("What tag has to be attached before the bot lets a table change through?",),
          ("merge label?",),
          ("Migration PRs need the `{val}` label before merge.",
           "Rule: no migration merges without the `{val}` label.",
           "Please put `{val}` on every migration PR, the bot checks it."),
          ("Label rule changed: migrations need `{val}` now.",
           "The merge bot now wants `{val}` on migration PRs."),
          "- Migration PRs need the `{code}` label."),
    _rule("profile", _profile,
          ("the profile for local runs", "which profile local runs use"),
          ("Which profile should local runs use?", "What profile do we run locally with?"),
          ("Which settings bundle do I select when starting the service on my laptop?",),
          ("local profile?",),
          ("Always run locally with the `{val}` profile.",
           "Rule: local runs use `{val}`, never the shared one.",
           "Please start the service with the `{val}` profile on your machine."),
          ("Switch local runs to the `{val}` profile from now on.",
           "The local profile is `{val}` now."),
          "- Local runs use the `{code}` profile."),
)  # fmt: skip


def _change(rng: random.Random, _lang: str) -> Value:
    if rng.random() < 0.5:
        n = rng.randint(1203, 9877)
        return _value(f"PR #{n}", f"#{n}", f"pull request {n}")
    digest = "".join(rng.choice("0123456789abcdef") for _ in range(7))
    while digest.isdigit() or digest.isalpha():
        digest = "".join(rng.choice("0123456789abcdef") for _ in range(7))
    return _value(f"commit {digest}", digest)


_TASK_OPEN = (
    "Adding to the todo list: {subj}. It's blocked until {val} lands.",
    "Todo: {subj}, waiting on {val}.",
    "Open item: {subj}; it can't be finished before {val} is merged.",
    "Still open: {subj}, it depends on {val}.",
    "Put {subj} on the list, please; first we need {val}.",
    "Parking {subj} for now, it needs {val} to go in first.",
    "Next up, but not started: {subj}. Blocked on {val}.",
    "Tracking {subj} as open until {val} is in.",
)
_TASK_DONE = (
    "Done: {subj} is finished, merged in {val}.",
    "Ticking off {subj}: it landed in {val}.",
    "{Subj} is complete, shipped as {val}.",
    "Closed {subj}; the fix went in with {val}.",
    "{Subj}: done and merged ({val}).",
    "Crossing {subj} off the list, it's in as {val}.",
    "Finished {subj}, see {val}.",
    "That wraps up {subj}; merged via {val}.",
)


def _task(key: str, *subj: str) -> Topic:
    main = subj[0]
    return Topic(
        f"task-{key}", "task", _change, subj, (),
        (f"Is {main} done?", f"Where does {main} stand?", f"What's the status of {main}?"),
        (f"Can I consider {main} finished, or is it still waiting on something?",),
        (f"{key.replace('-', ' ')}?",), (), (), {}, _TASK_OPEN, _TASK_DONE,
    )  # fmt: skip


TASK_TOPICS: tuple[Topic, ...] = (
    _task("csv-export", "the CSV export fix", "the fix for the CSV export"),
    _task("webhook-retries", "the webhook retry rework", "reworking the webhook retries"),
    _task("login-throttle", "the login throttling ticket", "throttling failed logins"),
    _task("payout-migration", "the payout table migration", "migrating the payout table"),
    _task("search-reindex", "the search index rebuild", "rebuilding the search index"),
    _task("audit-backfill", "the audit-log backfill", "backfilling the audit log"),
    _task("flaky-checkout", "the flaky checkout test", "fixing the flaky checkout test"),
    _task("api-docs", "the API docs update", "updating the API docs"),
    _task("session-cleanup", "the session cleanup job", "the job that purges old sessions"),
    _task("rounding-bug", "the currency rounding bug", "fixing currency rounding"),
    _task("dep-bump", "the dependency bump", "bumping the dependencies"),
    _task("admin-pagination", "the admin dashboard pagination", "paginating the admin dashboard"),
    _task("email-templates", "the email template refactor", "refactoring the email templates"),
    _task("sso-callback", "the SSO callback fix", "fixing the SSO callback"),
)


def _path(dir_: str, stem: str, ext: str | None = None) -> Draw:
    """A new file's path: ``dir_/<rare word>_stem.ext`` (``ext`` None: the project's)."""

    def draw(rng: random.Random, lang: str) -> Value:
        suffix = SOURCE_EXT.get(lang, "py") if ext is None else ext
        name = f"{_rare(rng)}_{stem}.{suffix}"
        return _value(f"{dir_}/{name}", name)

    return draw


def _token(form: str) -> Draw:
    """A new setting's value: ``form`` with ``{w}`` a rare word, ``{n}`` a 3-digit number."""

    def draw(rng: random.Random, _lang: str) -> Value:
        return _value(form.replace("{w}", _rare(rng)).replace("{n}", str(rng.randint(103, 989))))

    return draw


_HEREDOC = "cat > {code} <<'EOF'\n"


def _artifact(
    key: str,
    draw: Draw,
    subj: str,
    q: tuple[str, ...],
    para: str,
    calls: tuple[dict[str, str], ...],
) -> Topic:
    return Topic(
        f"artifact-{key}", "artifact", draw, (subj,), (), q, (para,),
        (f"{key.split('-', 1)[1].replace('-', ' ')}?",), (), (), {}, calls=calls,
    )  # fmt: skip


# Each topic is one file's story, told by the tool call that changed it (the call's output
# does not repeat the value): its key's first word is what happened to the file.
ARTIFACT_TOPICS: tuple[Topic, ...] = (
    _artifact("renamed-retry-helpers", _path("src/retries", "retry_helpers"),
              "the retry helpers module",
              ("What did we rename the retry helpers module to?",
               "Where does the retry helpers module live after the rename?"),
              "Under which new name can I find the code that used to be the retry helpers?",
              ({"op": "bash", "command": "git mv src/retry_helpers.{ext} {code}"},)),
    _artifact("renamed-payment-client", _path("src/payments", "client"),
              "the legacy payment client",
              ("What was the legacy payment client file renamed to?",
               "Which file did the legacy payment client become?"),
              "The old module that talked to the payment processor: what is it called now?",
              ({"op": "bash", "command": "git mv lib/legacy_payments.{ext} {code}"},)),
    _artifact("renamed-settings-loader", _path("src/config", "settings"),
              "the old settings loader",
              ("What is the settings loader file called after we renamed it?",
               "Which path did the settings loader move to?"),
              "After the move, where is the code that reads our configuration at startup?",
              ({"op": "bash", "command": "git mv src/load_settings.{ext} {code}"},)),
    _artifact("created-webhook-fixture", _path("tests/fixtures", "webhook_payload", "json"),
              "the fixture file for the webhook tests",
              ("Which fixture file did we add for the webhook tests?",
               "What's the path of the new webhook test fixture?"),
              "Where is the sample notification body the callback tests load?",
              ({"op": "bash",
                "command": _HEREDOC + '{"event": "payout.settled", "attempt": 1}\nEOF'},)),
    _artifact("created-migration", _path("migrations", "add_index", "sql"),
              "the migration we added",
              ("Which migration file did we create?", "What's the new migration's file name?"),
              "Which schema-change script did we write for the new index?",
              ({"op": "bash",
                "command": _HEREDOC + "CREATE INDEX CONCURRENTLY ON orders (created_at);\nEOF"},)),
    _artifact("created-healthcheck", _path("scripts", "healthcheck", "sh"),
              "the new health-check script",
              ("What's the path of the health-check script we created?",
               "Which script did we add for health checks?"),
              "Which new shell file probes whether the service is alive?",
              ({"op": "bash",
                "command": _HEREDOC + "#!/bin/sh\ncurl -fsS localhost/healthz\nEOF"},)),
    _artifact("deleted-flag-shim", _path("src/flags", "shim"),
              "the dead feature-flag shim",
              ("Which feature-flag shim file did we delete?",
               "What was the path of the flag shim we removed?"),
              "Which leftover toggle adapter got removed from the tree?",
              ({"op": "bash", "command": "git rm -q {code}"},)),
    _artifact("deleted-test-helper", _path("tests/helpers", "duplicate"),
              "the duplicate test helper",
              ("Which duplicate test helper did we delete?",
               "What file did we remove from the test helpers?"),
              "Which redundant testing utility is gone now?",
              ({"op": "bash", "command": "git rm -q {code}"},)),
    _artifact("deleted-dockerfile", _path("docker", "Dockerfile", "old"),
              "the unused Dockerfile variant",
              ("Which Dockerfile variant did we delete?", "What Dockerfile did we remove?"),
              "Which container build recipe was thrown away as unused?",
              ({"op": "bash", "command": "git rm -q {code}"},)),
    _artifact("modified-ci-runner", _token("{w}-runner-8core"), "the CI workflow",
              ("What did we change in the CI workflow?",
               "Which runner does the CI workflow use after our edit?"),
              "What did we switch the pipeline machines to in the workflow file?",
              ({"op": "edit", "path": ".github/workflows/ci.yml",
                "old": "runs-on: ubuntu-latest", "new": "runs-on: {code}"},)),
    _artifact("modified-body-size", _token("{n}m"), "the nginx config",
              ("What did we change in the nginx config?",
               "What request body limit did we set in the nginx config?"),
              "How large may an upload be now, per the proxy settings we edited?",
              ({"op": "edit", "path": "deploy/nginx.conf",
                "old": "client_max_body_size 10m;", "new": "client_max_body_size {code};"},)),
    _artifact("modified-log-format", _token("{w}_json"), "the logging config",
              ("What did we change in the logging config?",
               "Which log format did we put in the logging config?"),
              "What output style did we switch the diagnostic settings file to?",
              ({"op": "edit", "path": "config/logging.yaml",
                "old": "format: plain", "new": "format: {code}"},)),
    _artifact("modified-release-target", _token("{w}-sign"), "the Makefile's release target",
              ("What did we change in the Makefile's release target?",
               "Which step did we add to the release target?"),
              "What extra prerequisite does cutting a release now run, per our Makefile edit?",
              ({"op": "edit", "path": "Makefile",
                "old": "release: build", "new": "release: build {code}"},)),
)  # fmt: skip


def _reason(rng: random.Random, _lang: str) -> Value:
    word, n = _rare(rng), rng.randint(103, 989)
    pick = rng.randrange(5)
    if pick == 0:
        return _value(f"the {word} load test showed a p99 of {n} ms", f"p99 of {n} ms")
    if pick == 1:
        return _value(f"the {word.capitalize()} contract caps us at {n} calls a second",
                      f"{n} calls a second")  # fmt: skip
    if pick == 2:
        return _value(f"it saves about {n} dollars a month", f"{n} dollars a month")
    if pick == 3:
        return _value(
            f"the {word} security audit flagged the alternative", f"{word} security audit"
        )
    return _value(f"the {word} licence rules out the other option", f"{word} licence")


_WHY = (
    "We went with {subj} because {val}.",
    "Reason for {subj}: {val}.",
    "Why {subj}? Because {val}.",
    "{Subj} it is, mainly since {val}.",
    "Let's record why we chose {subj}: {val}.",
    "The deciding factor for {subj} was that {val}.",
    "I picked {subj}; the short version is {val}.",
    "We settled on {subj} because {val}, in case anyone asks.",
)


def _decision(key: str, *subj: str) -> Topic:
    main = subj[0]
    return Topic(
        f"why-{key}", "rationale", _reason, subj, (),
        (f"Why did we choose {main}?", f"What was the reason for {main}?"),
        (f"What argument settled {main} back then?",),
        (f"why {key.replace('-', ' ')}?",), (), (),
        {"readme": (f"- Decision: {main}, because {{code}}.",)}, _WHY,
    )  # fmt: skip


# Choices made during the work, each with the reason given; kind ``rationale``.
DECISION_TOPICS: tuple[Topic, ...] = (
    _decision("queue-delivery", "queue-based webhook delivery", "delivering webhooks via a queue"),
    _decision("redis-sessions", "keeping sessions in Redis", "Redis for session storage"),
    _decision("worker-cron", "moving the cron jobs into the worker", "running cron in the worker"),
    _decision("ssr-dashboard", "server-side rendering for the dashboard", "SSR on the dashboard"),
    _decision("billing-split", "splitting out the billing service", "a separate billing service"),
    _decision("uuid-keys", "UUIDv7 primary keys", "UUIDv7 as the key type"),
    _decision("raw-sql-reports", "raw SQL for the reports", "dropping the ORM in reports"),
    _decision("monorepo", "the monorepo layout", "keeping everything in one repository"),
    _decision("pinned-runtime", "pinning the runtime version", "a pinned runtime"),
    _decision(
        "flags-over-branches", "feature flags over long-lived branches", "flags, not branches"
    ),
    _decision("batched-email", "batching the email sends", "sending emails in batches"),
    _decision("edge-cache", "caching price lookups at the edge", "an edge cache for prices"),
    _decision("read-replica", "a read replica for analytics", "sending analytics to a replica"),
)


def _step(rng: random.Random, lang: str) -> Value:
    verb = rng.choice(("port", "split", "rewrite", "inline", "retire", "harden"))
    noun = rng.choice(("batches", "ledger", "refunds", "cursor", "handoff", "backlog"))
    parts = (verb, _rare(rng), noun)
    name = (
        parts[0] + "".join(p.capitalize() for p in parts[1:])
        if lang in ("typescript", "go")
        else "_".join(parts)
    )
    return _value(name)


# The one thread of work a session is on: restated at each new step, asked about after the
# context has moved on by more than a window (the latest step is the answer; kind
# ``continuation``).
CURRENT_STEP = Topic(
    "current-step", "continuation", _step,
    ("the current step",), (),
    ("Where did we leave off?", "What were you in the middle of before the context was compacted?",
     "What was the step in progress when we stopped?", "Remind me what you were working on?"),
    ("Picking this back up: which piece of work was half-finished?",
     "Before the interruption, what was on the bench?"),
    ("where were we?",), (), (), {},
    ("I'm in the middle of `{val}`; its callers come next.",
     "Current step: `{val}`, about halfway through.",
     "Working on `{val}` now, then I'll run the full suite.",
     "Paused midway through `{val}`; the tests for it are still red.",
     "Next up and already started: `{val}`."),
    ("Moving on: I'm now in the middle of `{val}`.",
     "That part is done; current step is `{val}`.",
     "Switching to `{val}` now, halfway through it.",
     "Now working on `{val}`; the previous step is finished.",
     "Started `{val}`, nothing committed yet."),
)  # fmt: skip
