"""Rules for the argv template of a command the image tool runs (profile field ``image_command``).

The model writes the prompt, so the prompt must stay one plain argument of the image program:
a template that hands it to a shell or an interpreter's ``-c``/``-e`` would run it as code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SHELLS = frozenset(
    "sh bash dash zsh ksh mksh oksh lksh pdksh ash yash posh csh tcsh fish rc es xonsh nu elvish busybox "
    "toybox pwsh powershell cmd".split()
)
# Programs that run the program named after them (with their own options first).
LAUNCHERS = frozenset(
    "env nice nohup timeout stdbuf ionice chrt taskset setsid exec command sudo doas time xargs unbuffer "
    "flock firejail systemd-run".split()
)
INTERPRETERS = frozenset(
    "python pypy perl ruby node nodejs deno bun php lua luajit tclsh wish awk gawk osascript".split()
)
EVAL_FLAGS = frozenset({"-c", "-e", "-E", "-r", "--eval", "--command", "-command", "-Command"})
_OPTION_VALUE = re.compile(r"^(\d+(\.\d+)?[smhd]?|[A-Za-z_][A-Za-z0-9_]*=.*)$")


def program_name(arg: str) -> str:
    """``/usr/bin/python3.11`` -> ``python``; ``bash.exe`` -> ``bash``."""
    name = arg.replace("\\", "/").rsplit("/", 1)[-1].lower()
    name = name.removesuffix(".exe")
    return re.sub(r"[\d.]+$", "", name) or name


def shell_reason(argv: Sequence[str]) -> str | None:
    """Why this template would run the prompt as code (None when it runs a program directly)."""
    index = 0
    while index < len(argv):
        name = program_name(argv[index])
        if name in SHELLS:
            return f"must run the image program directly, not a shell ({argv[index]}): the prompt would run as code"
        if name in INTERPRETERS and any(arg in EVAL_FLAGS or arg.startswith(("-c", "-e")) for arg in argv[index + 1 :]):
            return f"must not pass code to an interpreter ({argv[index]} -c/-e): the prompt would run as code"
        if name not in LAUNCHERS:
            return None
        # Skip the launcher's options and their values (env VAR=x, timeout 10, nice -n 5) to its program.
        index += 1
        while index < len(argv) and (argv[index].startswith("-") or _OPTION_VALUE.match(argv[index])):
            index += 1
    return None


def prompt_reason(argv: Sequence[str], prompt: str) -> str | None:
    """Why this prompt cannot be passed: starting with '-', a whole ``{prompt}`` argument would be read as an option.

    A ``--`` earlier in the template ends the options, so such a prompt is safe there.
    """
    if not prompt.startswith("-"):
        return None
    for position, arg in enumerate(argv):
        if arg == "{prompt}" and "--" not in argv[:position]:
            return (
                "the prompt must not start with '-' (the image program would read it as an option): "
                'rephrase it, or put "--" before {prompt} in the profile field image_command'
            )
    return None
