"""A real model without its credentials fails in one line naming the variable to set, before
any work (``check_llm_credentials``; ``memctx eval --llm`` and replay's ``extractionModel``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import session

import memctx.harness
from memctx.cli import main
from memctx.cli.options import OptionError, check_llm_credentials

KEYS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
    "AWS_ROLE_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "OLLAMA_API_BASE",
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws either
    return monkeypatch


def test_a_missing_key_is_named_with_the_fix(no_keys: pytest.MonkeyPatch) -> None:
    with pytest.raises(OptionError) as caught:
        check_llm_credentials("anthropic/claude-sonnet-4-5")
    assert str(caught.value) == (
        "--llm anthropic/claude-sonnet-4-5: ANTHROPIC_API_KEY is not set; export it or pass a "
        "model whose key you have"
    )
    with pytest.raises(OptionError, match=r"^--llm gpt-4o: OPENAI_API_KEY is not set"):
        check_llm_credentials("gpt-4o")  # litellm knows the provider from the name
    with pytest.raises(OptionError, match=r"^extractionModel gpt-4o: OPENAI_API_KEY"):
        check_llm_credentials("gpt-4o", option="extractionModel")
    no_keys.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    check_llm_credentials("anthropic/claude-sonnet-4-5")


def test_several_missing_variables_are_all_named(
    no_keys: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(OptionError, match="AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not"):
        check_llm_credentials("bedrock/anthropic.claude-3-haiku-20240307-v1:0")
    no_keys.setenv("AWS_ACCESS_KEY_ID", "AKIA-test")  # only what is still missing is named
    with pytest.raises(OptionError, match=r": AWS_SECRET_ACCESS_KEY is not set; export it"):
        check_llm_credentials("bedrock/anthropic.claude-3-haiku-20240307-v1:0")
    no_keys.delenv("AWS_ACCESS_KEY_ID")
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text("[default]\n")
    check_llm_credentials("bedrock/anthropic.claude-3-haiku-20240307-v1:0")  # boto3 reads it


def test_models_that_need_nothing_pass(
    no_keys: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check_llm_credentials("memctx/offline")  # memctx's own model, served in-process
    check_llm_credentials("mock")  # a test model answered by mock_response
    check_llm_credentials("ollama/llama3")  # only a base URL, which defaults to localhost
    check_llm_credentials("not-a-known-model-xyz")  # unknown: its first call says why
    assert capsys.readouterr() == ("", "")  # and litellm printed no banner
    with pytest.raises(OptionError, match="needs a model name"):
        check_llm_credentials(" ")


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(session("s", 2)))
    return path


def test_replay_checks_a_real_extraction_model_before_any_work(
    no_keys: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    played: list[Any] = []
    no_keys.setattr(memctx.harness, "replay_transcript", lambda *a, **k: played.append(a))
    path = _transcript(tmp_path)
    model = "anthropic/claude-sonnet-4-5"
    config = tmp_path / "memctx.json"
    config.write_text(json.dumps({"extractionModel": model}))
    for extra in (["--set", f"extractionModel={model}"], ["--config", str(config)]):
        assert main(["replay", str(path), *extra]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == (
            f"memctx: error: extractionModel {model}: ANTHROPIC_API_KEY is not set; export it "
            "or pass a model whose key you have\n"
        )
    assert played == []
