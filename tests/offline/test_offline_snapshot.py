"""The offline model's compaction summary: a state snapshot of the rendered transcript."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.compaction import render_messages, summary_request
from memctx.messages import estimate_tokens, inspect_message
from memctx.offline.model import offline_reply
from memctx.offline.snapshot import SNAPSHOT_SECTIONS, state_snapshot


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _calls(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": list(calls)}


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _rendered(messages: list[dict[str, Any]]) -> str:
    """What a compaction sends the summariser: the rendered history."""
    return render_messages(inspect_message(m) for m in messages)


def _sections(snapshot: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    title = ""
    for line in snapshot.splitlines():
        if line.endswith(":") and line[:-1] in SNAPSHOT_SECTIONS:
            title = line[:-1]
            found[title] = []
        elif line.startswith("- "):
            found[title].append(line[2:])
    return found


def _noise(n: int) -> list[dict[str, Any]]:
    """Turns of routine work that state nothing the probes ask about."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append(_calls(_call(f"n{i}", "Grep", pattern=f"helper{i}")))
        out.append(_result(f"n{i}", f"Found {i} files"))
        out.append({"role": "assistant", "content": f"Looked through helper number {i} again."})
    return out


def test_the_users_rules_are_kept_after_long_work() -> None:
    messages = [
        {
            "role": "user",
            "content": "Refactor the billing module. Never use raw SQL outside "
            "migrations. Always run the linter before committing.",
        },
        *_noise(60),
        {"role": "user", "content": "Now carry on with the invoices."},
    ]
    snapshot = state_snapshot(_rendered(messages), 400)
    rules = " ".join(_sections(snapshot)["Rules and instructions"])
    assert "Never use raw SQL outside migrations." in rules
    assert "Always run the linter before committing." in rules
    assert _sections(snapshot)["Latest request"] == ["Now carry on with the invoices."]


def test_each_file_shows_its_actions_newest_last() -> None:
    messages = [
        {"role": "user", "content": "Tidy the project."},
        _calls(
            _call("a", "Write", file_path="/home/dev/shop/src/app/models.py", content="x = 1\n")
        ),
        _result("a", "File created successfully at: /home/dev/shop/src/app/models.py"),
        _calls(
            _call(
                "b",
                "Edit",
                file_path="/home/dev/shop/src/app/models.py",
                old_string="1",
                new_string="2",
            )
        ),
        _result("b", "The file /home/dev/shop/src/app/models.py has been updated."),
        _calls(_call("c", "Read", file_path="/home/dev/shop/src/app/views.py")),
        _result("c", "     1\tdef view(): ...\n"),
        _calls(_call("d", "Bash", command="rm src/app/old_views.py && mv src/a.py src/b.py")),
        _result("d", ""),
        _calls(_call("e", "Read", file_path="/home/dev/shop/tests/test_urls.py")),
        _result("e", "     1\turls = []\n"),
    ]
    snapshot = state_snapshot(_rendered(messages), 600)
    files = _sections(snapshot)["Files"]
    by_path = dict(line.rsplit(": ", 1) for line in files)
    assert by_path["shop/src/app/models.py"] == "created, then edited (1 → 2)"
    assert by_path["shop/src/app/views.py"] == "read"
    assert by_path["src/app/old_views.py"] == "deleted"
    assert by_path["src/a.py"] == "renamed to src/b.py"
    assert by_path["src/b.py"] == "created"
    # Paths under the project are shown relative to the folder above it, said once.
    assert "Paths are relative to: /home/dev" in snapshot
    assert not any(path.startswith("/home/") for path in by_path)


def test_a_short_edit_says_what_changed_and_the_next_snapshot_keeps_it() -> None:
    messages = [
        {"role": "user", "content": "Switch the logs to JSON and raise the upload limit."},
        _calls(
            _call(
                "a",
                "str_replace_editor",
                command="str_replace",
                path="/srv/shop/config/logging.yaml",
                old_str="format: plain",
                new_str="format: json_lines",
            )
        ),
        _result("a", "The file /srv/shop/config/logging.yaml has been edited."),
        _calls(
            _call(
                "b",
                "Edit",
                file_path="/srv/shop/src/upload.py",
                old_string="def limit():\n    return 10",
                new_string="def limit():\n    return 20",
            )
        ),
        _result("b", "ok"),
    ]
    snapshot = state_snapshot(_rendered(messages), 400)
    files = _sections(snapshot)["Files"]
    assert any(
        f.endswith("logging.yaml: edited (format: plain → format: json_lines)") for f in files
    )
    # A multi-line edit is code: the file's action says enough.
    assert any(f.endswith("upload.py: edited") for f in files)
    later = state_snapshot("[Summary of the earlier conversation]:\n" + snapshot, 400)
    assert _sections(later)["Files"] == files


def test_files_created_deleted_or_renamed_outlast_files_only_read() -> None:
    messages = [
        {"role": "user", "content": "Clean up the helpers."},
        _calls(_call("d", "Bash", command="git rm -q tests/helpers/old_fixture.py")),
        _result("d", ""),
        *[
            m
            for i in range(40)
            for m in (
                _calls(_call(f"r{i}", "Read", file_path=f"src/pkg/module_{i}.py")),
                _result(f"r{i}", "     1\tx = 1\n"),
            )
        ],
    ]
    snapshot = state_snapshot(_rendered(messages), 250)
    files = _sections(snapshot)["Files"]
    assert "tests/helpers/old_fixture.py: deleted" in files
    assert len(files) < 41  # the budget left out some of the files only read


def test_the_step_in_progress_is_kept_apart_from_the_last_thing_said() -> None:
    messages = [
        {"role": "user", "content": "Work through the refund backlog."},
        {
            "role": "assistant",
            "content": "Done with the first part. Now working on `retry_refunds`.",
        },
        *_noise(30),
        {"role": "assistant", "content": "Okay, moving on to the next item."},  # names nothing
        {"role": "assistant", "content": "Fixed. The root cause was an unchecked total."},
    ]
    snapshot = state_snapshot(_rendered(messages), 300)
    work = _sections(snapshot)["Work in progress"]
    assert "Step in progress: Now working on `retry_refunds`." in work
    assert any(w.startswith("Last said: Fixed.") for w in work)
    # A newer step replaces it, in prose too, and the next snapshot carries it forward.
    messages.append(
        {"role": "assistant", "content": "I'm now busy with the nightly export scheduler."}
    )
    snapshot = state_snapshot(_rendered(messages), 300)
    later = state_snapshot(
        "[Summary of the earlier conversation]:\n" + snapshot + "\n[User]: ok", 300
    )
    steps = [w for w in _sections(later)["Work in progress"] if w.startswith("Step")]
    assert steps == ["Step in progress: I'm now busy with the nightly export scheduler."]


def test_an_error_is_paired_with_what_was_done_about_it() -> None:
    messages = [
        {"role": "user", "content": "Make the tests pass."},
        _calls(_call("t", "Bash", command="pytest -q tests/test_cache.py")),
        _result("t", "E   KeyError: 'ttl'\n1 failed, 12 passed in 0.4s"),
        {
            "role": "assistant",
            "content": "The cache config is missing the ttl key because the "
            "loader drops defaults. I'll add the default in config.py.",
        },
        _calls(_call("u", "Bash", command="pytest -q tests/test_cache.py")),
        _result("u", "13 passed in 0.3s"),
    ]
    snapshot = state_snapshot(_rendered(messages), 500)
    (error,) = _sections(snapshot)["Errors and fixes"]
    assert "KeyError: 'ttl'" in error and "loader drops defaults" in error
    # The command's newest result wins.
    commands = _sections(snapshot)["Commands and results"]
    assert any(
        c.startswith("pytest -q tests/test_cache.py → ") and "13 passed" in c for c in commands
    )
    assert not any("1 failed" in c for c in commands)


def test_open_tasks_follow_the_newest_task_list() -> None:
    def todos(*items: tuple[str, str]) -> list[dict[str, str]]:
        return [{"content": c, "status": s, "activeForm": c} for c, s in items]

    messages = [
        {"role": "user", "content": "Ship the export feature."},
        _calls(
            _call(
                "1",
                "TodoWrite",
                todos=todos(
                    ("Add the CSV writer", "in_progress"), ("Document the flag", "pending")
                ),
            )
        ),
        _result("1", "Todos have been modified successfully"),
        *_noise(5),
        _calls(
            _call(
                "2",
                "TodoWrite",
                todos=todos(("Add the CSV writer", "completed"), ("Document the flag", "pending")),
            )
        ),
        _result("2", "Todos have been modified successfully"),
    ]
    found = _sections(state_snapshot(_rendered(messages), 500))
    assert found["Open tasks"] == ["Document the flag"]
    assert found["Done"] == ["Add the CSV writer"]


def test_key_values_are_kept_verbatim() -> None:
    messages = [
        {
            "role": "user",
            "content": "The service listens on port 8443 and needs "
            "`requests==2.32.3`; the docs are at https://example.org/api/v2.",
        },
        *_noise(30),
        {"role": "user", "content": "Continue."},
    ]
    snapshot = state_snapshot(_rendered(messages), 300)
    for value in ("port 8443", "requests==2.32.3", "https://example.org/api/v2"):
        assert value in snapshot


def test_an_earlier_snapshot_is_carried_forward_and_the_newest_state_wins() -> None:
    first = [
        {"role": "user", "content": "Set up the package. Never commit the .env file."},
        _calls(_call("a", "Write", file_path="pkg/settings.py", content="DEBUG = True\n")),
        _result("a", "File created successfully at: pkg/settings.py"),
    ]
    earlier = state_snapshot(_rendered(first), 300)
    later = [
        _calls(_call("b", "Bash", command="rm pkg/settings.py")),
        _result("b", ""),
        {"role": "user", "content": "Now write the README."},
    ]
    request = summary_request(_rendered(later), previous_summary=earlier)
    snapshot = offline_reply(request, 300)
    found = _sections(snapshot)
    assert "pkg/settings.py: created, then deleted" in found["Files"]
    assert any("Never commit the .env file." in r for r in found["Rules and instructions"])
    assert found["Latest request"] == ["Now write the README."]


def test_agent_notices_are_not_taken_for_the_users_request() -> None:
    messages = [
        {"role": "user", "content": "Profile the importer."},
        {
            "role": "user",
            "content": "<task-notification>background job 7 finished </task-notification>",
        },
        {"role": "user", "content": "[Request interrupted by user]"},
    ]
    found = _sections(state_snapshot(_rendered(messages), 200))
    assert found["Latest request"] == ["Profile the importer."]


def test_plain_role_lines_are_read_too() -> None:
    text = (
        "user: We must keep Python 3.10 support.\n"
        "assistant: Decided to use uv instead of pip because it is faster.\n"
        "user: Bump the version to 2.4.1 next."
    )
    snapshot = state_snapshot(text, 200)
    found = _sections(snapshot)
    assert found["Rules and instructions"] == ["We must keep Python 3.10 support."]
    assert "Decided to use uv instead of pip because it is faster." in snapshot
    assert found["Latest request"] == ["Bump the version to 2.4.1 next."]


_FRAGMENTS = st.sampled_from(
    [
        "[User]: never push to main",
        "[Assistant]: decided to use `ruff` instead of flake8 because it is fast.",
        '[Assistant tool calls]: Edit({"file_path": "/r/a/b.py", "old_string": "x"})',
        '[Assistant tool calls]: Bash({"command": "rm x.txt && mv a.py b.py"})',
        "[Tool result Bash (error)]: Traceback (most recent call last):\nValueError: bad",
        "[Tool result]: 3 failed, 10 passed in 2.1s",
        '[Assistant tool calls]: TodoWrite({"todos": [{"content": "t", "status": "pending"}]})',
        "[Summary of earlier history]:\nFiles:\n- a.py: created\n\nOpen tasks:\n- t",
        "user: port 8080, version 1.2.3, https://x.org/y",
        "[Partial summary 1 of 2: oldest messages]:\nRules and instructions:\n- always test",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.one_of(_FRAGMENTS, st.text(max_size=200)), max_size=25),
    budget=st.integers(min_value=-5, max_value=400),
)
def test_the_budget_is_never_exceeded_and_the_snapshot_is_deterministic(
    parts: list[str], budget: int
) -> None:
    text = "\n\n".join(parts)
    snapshot = state_snapshot(text, budget)
    assert estimate_tokens(snapshot) <= max(0, budget)
    assert state_snapshot(text, budget) == snapshot


def test_settings_of_a_config_file_read_are_kept_and_secrets_are_not() -> None:
    messages = [
        {"role": "user", "content": "Why does the worker time out?"},
        _calls(_call("c", "Read", file_path="/srv/app/config/worker.yaml")),
        _result(
            "c",
            "     1\tqueue_name: billing_jobs_v3\n     2\tvisibility_timeout: 45\n"
            "     3\tapi_token: tok_9f8e7d6c5b4a39281716\n",
        ),
        *_noise(10),
        _calls(_call("d", "Bash", command="cat config/worker.yaml")),
        _result("d", "queue_name: billing_jobs_v3\nvisibility_timeout: 90\n"),
    ]
    snapshot = state_snapshot(_rendered(messages), 400)
    values = _sections(snapshot)["Key values"]
    assert "worker.yaml: queue_name: billing_jobs_v3" in values
    # The newest value of a setting wins.
    assert "worker.yaml: visibility_timeout: 90" in values
    assert "visibility_timeout: 45" not in snapshot
    assert "tok_9f8e7d6c5b4a39281716" not in snapshot
