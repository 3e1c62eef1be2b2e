"""Start-up stays light: the heavy dependencies load on first use, never on import or --help.

Each test runs a fresh interpreter (:mod:`helpers.imports`); none measures time.
"""

from __future__ import annotations

import re

from helpers.imports import cli_statement, modules_loaded_by

from memctx.cli.main import build_parser


def _subcommands() -> list[str]:
    """Every ``memctx`` subcommand, read from the help so that a new one is checked too."""
    choices = re.search(r"\{([a-z,-]+)\}", build_parser().format_help())
    assert choices, "memctx --help lists no {subcommand,...} group"
    return choices.group(1).split(",")


def test_importing_memctx_its_front_doors_and_the_cli_loads_no_heavy_module() -> None:
    loaded = modules_loaded_by(["import memctx", "import memctx.harness", "import memctx.cli"])
    assert loaded == {
        "import memctx": [],
        "import memctx.harness": [],
        "import memctx.cli": [],
    }


def test_help_of_memctx_and_of_every_subcommand_loads_no_heavy_module() -> None:
    commands = _subcommands()
    assert {"eval", "replay", "gen", "report"} <= set(commands)
    statements = [cli_statement("--help"), *(cli_statement(c, "--help") for c in commands)]
    loaded = modules_loaded_by(statements)
    assert {s: m for s, m in loaded.items() if m} == {}


def test_the_offline_model_is_served_through_litellm_on_its_first_call() -> None:
    call = (
        "from memctx.llm import LLMClient, task_marker\n"
        "messages = [{'role': 'system', 'content': task_marker('summarize')},\n"
        "            {'role': 'user', 'content': 'We decided to keep sessions in Redis.'}]\n"
        "reply = LLMClient().complete(messages, task='summarize')\n"
        "assert 'Redis' in reply.text, reply.text\n"
        "import litellm\n"
        "assert [i['provider'] for i in litellm.custom_provider_map] == ['memctx']\n"
    )
    loaded = modules_loaded_by(["import memctx", call], ["litellm"])
    assert loaded == {"import memctx": [], call: ["litellm"]}


def test_pandas_loads_when_a_frame_is_first_built() -> None:
    build = "import memctx.harness; assert memctx.harness.probe_frame([{'fits': True}]).shape"
    loaded = modules_loaded_by(["import memctx.harness", build], ["pandas"])
    assert loaded == {"import memctx.harness": [], build: ["pandas"]}
