"""Rules for the argv template of the command the image tool runs (profile field ``image_command``).

The user writes the template; the model writes the prompt. The rule holds by the template's
shape, never by recognising a dangerous prompt:

1. No shell parses anything: the template is a JSON list, run with ``exec`` (no shell at all).
2. The prompt reaches the program in one of three ways only: ``{prompt}`` as one whole argument
   (never inside a larger one, like ``--prompt={prompt}`` or ``print({prompt})``),
   ``{prompt_file}`` (the path of a private temporary file that holds it), or the program's
   standard input (a template with neither). A whole ``{prompt}`` starting with ``-`` is refused
   unless ``--`` comes before it (the program would read it as an option).
3. No word of the template names a program that runs its arguments, its input or a file as code
   (a shell, an interpreter, a program that runs another program): ``CODE_RUNNERS``. Every word
   is checked, not only the first (later ones against the list less a few ordinary words), so a
   listed program cannot hide behind an unlisted launcher (``uv run python -c``, ``docker run
   IMAGE sh -c``); at run time the program's real file is checked too (``flux2`` as a link to
   ``python3``).

Points 1 and 2 need no list: whatever the prompt holds, it arrives as one argument, a file or a
byte stream, and the program named by the user decides what it means. Point 3 is the only list,
and it answers one question that no shape can answer: is the named program one whose job is to
run code? A program not on the list that still runs its data as code (a user's own script that
``eval``s its argument) is the template author's choice; the vault that holds it must be trusted
before any image command runs (``core.trust``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

PROMPT = "{prompt}"
PROMPT_FILE = "{prompt_file}"
OUTPUT = "{output}"
INPUT = "{input}"  # the picture to edit (edit_image): a private copy, never the vault's file
MASK = "{mask}"

_SHELLS = (
    "sh bash dash zsh fish rbash ksh mksh oksh lksh pdksh ash yash posh csh tcsh rc es xonsh nu elvish "
    "busybox toybox pwsh powershell cmd"
)
_INTERPRETERS = (
    "python pythonw pypy ipython jython ironpython perl ruby irb jruby node nodejs deno bun php lua luajit "
    "awk gawk mawk nawk sed tclsh wish expect osascript r rscript julia java jshell groovy scala kotlin "
    "guile racket sbcl clisp ecl gforth ocaml swipl erl escript elixir iex runghc runhaskell ghci dotnet "
    "m4 bc dc gdb lldb vim vi nvim view vimdiff ex ed emacs sqlite3 psql mysql make gmake cmake ninja "
    "ant mvn gradle git tar zip"
)
# Programs that run the program (or command line) named in their arguments or input.
_LAUNCHERS = (
    "env xargs find script sudo su doas pkexec nohup timeout nice ionice chrt taskset setsid stdbuf time "
    "strace ltrace valgrind watch parallel eval exec command builtin flock chroot unshare nsenter "
    "systemd-run runuser setpriv capsh firejail bwrap unbuffer tmux screen ssh docker podman kubectl nix "
    "nix-shell npx uvx uv pipx poetry pdm hatch conda mamba fakeroot proot xterm at batch xdg-open open "
    "gio sg newgrp catchsegv entr start"
)
CODE_RUNNERS = frozenset(f"{_SHELLS} {_INTERPRETERS} {_LAUNCHERS}".split())
# Ordinary words too (a language code, an option value): after the first word they are not taken
# for a program. The first word is always checked against the whole list.
_COMMON_WORDS = frozenset(
    "es rc nu r ex view ed dc bc at batch sg start open time watch command script make tar zip git find "
    "exec eval builtin parallel screen entr".split()
)
LATER_RUNNERS = CODE_RUNNERS - _COMMON_WORDS
_SUFFIXES = (".exe", ".com", ".bat", ".cmd", ".ps1")


def program_names(word: str) -> set[str]:
    """The names a word could run as: ``/usr/bin/python3.11`` -> python3.11 and python; ``m4`` -> m4."""
    name = word.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return {name, re.sub(r"[\d.]+$", "", name) or name}


def code_runner(word: str, first: bool = True) -> bool:
    """Does ``word`` (or the value after ``=`` in ``--opt=value``) name a program that runs code?
    ``first``: the template's first word (the whole list); later words leave out ordinary words."""
    names = CODE_RUNNERS if first else LATER_RUNNERS
    candidates = [word, word.split("=", 1)[1]] if "=" in word else [word]
    return any(program_names(candidate.strip()) & names for candidate in candidates if candidate.strip())


def template_reason(argv: Sequence[str]) -> str | None:
    """Why this template could run the prompt as code, or is incomplete (None: it is fine)."""
    if not any(OUTPUT in arg for arg in argv):
        return "must contain {output} (where the image goes)"
    for position, arg in enumerate(argv):
        if code_runner(arg, first=position == 0):
            return (
                f"must run the image program directly, not a shell, an interpreter or a program that runs "
                f"other programs ({arg!r}): the prompt would run as code (make your script executable and "
                "name it first)"
            )
    for arg in argv:
        if PROMPT in arg and arg != PROMPT:
            return (
                f"must pass {{prompt}} as a whole argument of its own, not inside {arg!r}: there it could "
                'change what the argument means (e.g. ["flux2", "--prompt", "{prompt}", "{output}"], or '
                "use {prompt_file})"
            )
    return None


def real_program_reason(path: str) -> str | None:
    """At run time: the file the first word really runs (links followed) must not be a code runner."""
    import os

    real = os.path.realpath(path)
    if code_runner(real):
        return f"must run the image program directly, not a program that runs code ({path} is {real})"
    return None


def prompt_reason(argv: Sequence[str], prompt: str) -> str | None:
    """Why this prompt cannot be passed: starting with '-', a whole ``{prompt}`` argument would be read as an option.

    A ``--`` earlier in the template ends the options, so such a prompt is safe there.
    """
    if not prompt.startswith("-"):
        return None
    for position, arg in enumerate(argv):
        if arg == PROMPT and "--" not in argv[:position]:
            return (
                "the prompt must not start with '-' (the image program would read it as an option): "
                'rephrase it, or put "--" before {prompt} in the profile field image_command'
            )
    return None


def prompt_channel(argv: Sequence[str]) -> str:
    """How the prompt reaches the program: ``argument``, ``file`` or ``stdin``."""
    if PROMPT in argv:
        return "argument"
    if any(PROMPT_FILE in arg for arg in argv):
        return "file"
    return "stdin"
