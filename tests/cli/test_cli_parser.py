"""The parser defines only the subcommand a command line names (cli_parser.py): every command line
must parse exactly as with the whole parser (the same values, the same errors, the same help)."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from tui_agent.cli_parser import COMMANDS, build_parser, command_named


def _outcome(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[object, str, str]:
    """What parsing ``argv`` gives: the values (or the exit code), and what was printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result: object = parser.parse_known_args(argv)
        except SystemExit as exc:
            result = ("exit", exc.code)
    return result, out.getvalue(), err.getvalue()


def _every_help_line() -> list[list[str]]:
    """``--help`` of each command and each of its actions, read off the whole parser."""
    lines = [["--help"]]
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                lines.append([name, "--help"])
                for inner in child._actions:
                    if isinstance(inner, argparse._SubParsersAction):
                        lines += [[name, verb, "--help"] for verb in inner.choices]
    return lines


LINES = [
    ["ask", "hello", "there"],
    ["--profile", "p", "ask", "--new", "hi"],
    ["--prof", "ask", "ask", "hi"],  # an abbreviated option whose value is a command's name
    ["--prof=db", "ask", "hi"],
    ["--prof", "db", "ask", "hi"],  # the value names another command
    ["--vault", "mcp", "models"],
    ["--vault", "db", "--db", "sqlite:///x.db", "history", "search", "a", "-b"],
    ["--va", "v", "models"],
    ["--v", "x", "ask", "hi"],  # ambiguous (--vault, --version): argparse's own error
    ["--nope", "ask", "hi"],
    ["ask"],  # no text: ask's own error
    ["ask", "--conversation", "x", "hi"],
    ["tool", "--list"],
    ["profile", "set", "--profile", "p", "chat_model", "m"],
    ["profile"],
    ["history", "export", "3", "--format", "json", "--out", "-"],
    ["serve", "--port", "70000"],
    ["serve", "--port", "0", "--max-sessions", "2"],
    ["models", "--profile", "p"],
    ["mcp", "list"],
    ["mcp", "add", "time", "--", "python", "-m", "x"],
    ["vault", "status"],
    ["db", "show"],
    ["db", "use", "postgresql://u@h/d"],
    ["approve", "--profile", "p"],
    ["asks", "hi"],  # no such command
    ["--", "ask", "hi"],
    [],
    ["--version"],
    ["-h", "ask"],  # help before the command: the whole program's
    ["--help", "models"],
    ["--he", "ask"],
    ["--db", "x", "-h", "db"],
    ["--version", "ask"],
    ["-", "ask"],  # "-" is a positional: argparse's invalid choice, listing every command
    ["-1", "ask"],
    ["--vault=x", "ask", "hi"],
    ["--v=x", "ask", "hi"],  # ambiguous
    ["--nope=1", "ask", "hi"],
    ["--profile", "-x", "ask", "hi"],
]


@pytest.mark.parametrize("argv", LINES + _every_help_line(), ids=" ".join)
def test_a_command_line_parses_as_with_the_whole_parser(argv, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # the help's width, the same for both
    assert _outcome(build_parser(command_named(argv)), argv) == _outcome(build_parser(), argv)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["ask", "hi"], "ask"),
        (["--profile", "ask", "db", "show"], "db"),
        (["--prof", "ask", "models"], "models"),
        (["--profile=ask", "vault", "status"], "vault"),
        (["-h", "ask"], None),
        (["--help", "ask"], None),
        (["--version", "ask"], None),
        (["-", "ask"], None),
        (["--vault", "x", "--help"], None),
        (["--v", "x", "ask"], None),
        (["--", "ask"], None),
        (["hello"], None),
        ([], None),
    ],
)
def test_the_command_is_read_as_argparse_reads_the_top_level(argv, named):
    assert command_named(argv) == named


def test_a_named_command_is_the_only_one_defined():
    (subparsers,) = [a for a in build_parser("ask")._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(subparsers.choices) == ["ask"]
    (everything,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(everything.choices) == list(COMMANDS)
