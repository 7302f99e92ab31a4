"""`--help` shows every option of every command with its help text and its default."""

from __future__ import annotations

import argparse

import pytest

from evictable.proofs.cli.main import build_parser

COMMANDS = ["verify", "check", "explore", "replay", "diagram"]


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for action in parser._actions:  # argparse keeps its subparsers here
        if isinstance(action, argparse._SubParsersAction):
            sub: argparse.ArgumentParser = action.choices[name]
            return sub
    raise AssertionError("no subcommands")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_every_option_with_help_text_and_default(command: str) -> None:
    sub = _subparser(command)
    text = " ".join(sub.format_help().split())
    for action in sub._actions:
        if not action.option_strings or action.dest == "help":
            continue
        assert action.help, f"{command} {action.option_strings}: no help text"
        formatter = sub._get_formatter()
        shown = formatter._get_help_string(action) or ""
        assert "default" in shown, f"{command} {action.option_strings}: no default shown"
        assert action.option_strings[-1] in text


def test_check_help_names_the_preset_contract_and_errors() -> None:
    text = " ".join(_subparser("check").format_help().split())
    assert "--preset {third-party}" in text
    assert "third-party = --black-box --contract safety --errors any --valid-only" in text
    assert "--contract {exact,safety}" in text and "else exact)" in text
    assert "--errors {typed,builtin,any}" in text and "else typed)" in text
    assert "--html PATH" in text and "--junit PATH" in text
    assert "(default: 200)" in text and "(default: off)" in text


def test_verify_help_offers_html_and_junit() -> None:
    text = " ".join(_subparser("verify").format_help().split())
    assert "--html PATH" in text and "--junit PATH" in text and "--json PATH" in text
