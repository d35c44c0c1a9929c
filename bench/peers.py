"""Typing during a long streamed reply, tui-agent beside its peers: `python bench/peers.py [--runs 2]`.

The measurement of bench/stream_echo.py (``--tmux``: keys sent with ``tmux send-keys``, the screen
read with ``capture-pane``, a key every ``--every`` s on a clock while ``--tokens`` tokens of a
Markdown reply stream at ``--rate`` a second; each key's echo is the time until the screen shows it)
for each app, interleaved run by run, all against one loopback server (tests/fake_ollama.py: the
OpenAI-compatible API and Ollama's, on this machine). Each peer runs from its own venv
(``--elia`` and ``--oterm``: the venv's directory; default /tmp/peer-elia and /tmp/peer-oterm, made
with ``python -m venv /tmp/peer-elia && /tmp/peer-elia/bin/pip install elia-chat`` and likewise
``oterm``) with a throwaway HOME and XDG directories: nothing of the user's is read or written.

- tui-agent: a fresh vault whose profile points at the server; the message sent with Enter.
- elia: its config.toml (in the throwaway XDG_CONFIG_HOME) names one model, ``openai/fake-chat``
  with ``api_base`` on the server (elia calls litellm, which speaks the OpenAI API); the message
  typed on its home screen and sent with Ctrl+J.
- oterm: ``OLLAMA_URL`` is the server; its data folder holds one chat (``ollama`` provider, model
  ``fake-chat``), saved beforehand by oterm's own store, and its splash screen is off; the message
  sent with Enter. oterm asks Ollama's API for the models (``/api/tags``, ``/api/show``,
  ``/api/ps``) and streams the reply through Ollama's OpenAI-compatible ``/v1`` (pydantic-ai).

Prints one line per app and run, then the medians over the runs per app, and the host's load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from fake_ollama import MODEL, FakeOllama  # noqa: E402
from fake_openai import markdown_tokens  # noqa: E402
from pty_app import READY, make_vault  # noqa: E402
from stream_echo import EchoRun, TmuxScreen, type_during_reply, wait_shown  # noqa: E402


class PeerScreen(TmuxScreen):
    """A tmux pane that sends Ctrl+J (elia's "send message") for a ``\\n`` and never empties the
    composer: each round of 40 keys starts after a space instead (a new word, which the composer's
    soft wrap keeps whole on one line), its marker still unique on the screen.

    Emptying it (backspaces, then the next marker, as bench/stream_echo.py does) lost keys in elia's
    and oterm's composers (Textual's TextArea): ``ZZAqzj``, six backspaces and ``ZZBq`` showed
    ``ZZAq``, and an idle oterm showed ``abcdefgX``, three backspaces and ``YZ`` as ``abcdefg``,
    though tmux delivered every byte (read back in a raw pty): the missing marker made every later
    key of the round count as missed. The same keys go to every app."""

    def type(self, keys: bytes) -> None:
        marker = keys.lstrip(b"\x7f")
        if len(marker) < len(keys):
            super().type(b" " + marker)
        elif keys == b"\n":
            self._tmux("send-keys", "-t", self.session, "C-j")
        else:
            super().type(keys)


@dataclass
class Peer:
    name: str
    # (a throwaway home folder, the server) -> (argv, environment)
    prepare: Callable[[Path, FakeOllama], tuple[list[str], dict[str, str]]]
    ready: bytes  # on screen once the app takes a message
    send: bytes  # the message's keys, the last one sends it
    version: str = ""


def home_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_STATE_HOME": str(home / "state"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
    }


def tui_agent(home: Path, fake: FakeOllama) -> tuple[list[str], dict[str, str]]:
    # As bench/stream_echo.py starts it: the vault's profile set by `tui-agent profile set`, which also
    # approves the server for this machine (recorded under the real HOME, which stays).
    vault = make_vault(fake.base_url)
    return [sys.executable, "-m", "tui_agent"], {"TUI_AGENT_VAULT": str(vault), "TERM": "xterm-256color"}


def elia(venv: Path) -> Callable[[Path, FakeOllama], tuple[list[str], dict[str, str]]]:
    def prepare(home: Path, fake: FakeOllama) -> tuple[list[str], dict[str, str]]:
        config = home / "config" / "elia"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(
            'default_model = "loopback"\n\n[[models]]\nid = "loopback"\n'
            f'name = "openai/{MODEL}"\ndisplay_name = "Loopback"\nprovider = "Loopback"\n'
            f'api_base = "{fake.base_url}"\napi_key = "sk-loopback"\n'
        )
        return [str(venv / "bin" / "elia")], {**home_env(home), "OPENAI_API_KEY": "sk-loopback"}

    return prepare


OTERM_CHAT = """
import asyncio
from oterm.store.store import Store
from oterm.types import ChatModel

async def main():
    store = await Store.get_store()
    await store.save_chat(ChatModel(name="chat #1 - {model}", model="{model}", provider="ollama"))

asyncio.run(main())
"""


def oterm(venv: Path) -> Callable[[Path, FakeOllama], tuple[list[str], dict[str, str]]]:
    def prepare(home: Path, fake: FakeOllama) -> tuple[list[str], dict[str, str]]:
        data = home / "oterm"
        data.mkdir(parents=True)
        (data / "config.json").write_text(json.dumps({"theme": "textual-dark", "splash-screen": False}))
        env = {**home_env(home), "OTERM_DATA_DIR": str(data), "OLLAMA_URL": fake.host_url}
        script = OTERM_CHAT.replace("{model}", MODEL)
        subprocess.run([str(venv / "bin" / "python"), "-c", script], env=env, check=True, capture_output=True)
        return [str(venv / "bin" / "oterm")], env

    return prepare


def version(venv: Path, package: str) -> str:
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or "?"


def measure(
    peer: Peer, fake: FakeOllama, *, tokens: int, rate: float, every: float, give_up_s: float
) -> tuple[EchoRun, list[float]]:
    """One run, and the echoes of the keys typed while the server was still sending the reply."""
    home = Path(tempfile.mkdtemp(prefix=f"peer-{peer.name}-"))
    argv, env = peer.prepare(home, fake)
    screen = PeerScreen(argv, env)
    try:
        wait_shown(screen, peer.ready, 0, 90)
        time.sleep(2.0)  # let start-up work (model lists, update checks) settle
        screen.read(0.01)
        fake.stream_ended_at = None
        run = type_during_reply(
            screen, fake, tokens=tokens, rate=rate, every=every, send=peer.send, give_up_s=give_up_s, partial=True
        )
        if run.unfinished:  # how far the app had drawn the reply: its last section on screen
            screen.read(0.01)
            drawn = [int(n) for n in re.findall(r"Section (\d+):", screen.screen)]
            total = len(re.findall(r"## Section \d+:", "".join(markdown_tokens(tokens))))
            print(f"{peer.name}: unfinished after {give_up_s:.0f} s at section {max(drawn, default=-1)} of {total - 1}")
        ended = fake.stream_ended_at or run.last_word
        return run, [echo for at, echo in run.echoes if at <= ended]
    finally:
        screen.close()
        shutil.rmtree(home, ignore_errors=True)
        if "TUI_AGENT_VAULT" in env:  # made by make_vault in a folder of its own
            shutil.rmtree(Path(env["TUI_AGENT_VAULT"]).parent, ignore_errors=True)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def table(results: dict[str, list[dict[str, float]]], versions: dict[str, str]) -> str:
    rows = [
        "| app | runs | keys echoed | missed | median ms | p90 ms | first third ms | middle third ms "
        "| last third ms | median while the server streams ms | reply on screen s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, runs in results.items():
        if not runs:
            continue

        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        rows.append(
            f"| {name} {versions[name]} | {len(runs)} | {sum(int(r['keys']) for r in runs)} "
            f"| {sum(int(r['missed']) for r in runs)} | {med('median_ms'):.0f} | {med('p90_ms'):.0f} "
            f"| {med('first_third_ms'):.0f} | {med('middle_third_ms'):.0f} | {med('last_third_ms'):.0f} | {med('while_streaming_ms'):.0f} "
            f"| {med('reply_s'):.1f}{' (unfinished)' if any(r['unfinished'] for r in runs) else ''} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=8000)
    parser.add_argument("--rate", type=float, default=400.0)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--give-up", type=float, default=180.0, help="s after the first words: the keys so far, the run unfinished"
    )
    parser.add_argument("--elia", type=Path, default=Path("/tmp/peer-elia"), help="elia's venv")
    parser.add_argument("--oterm", type=Path, default=Path("/tmp/peer-oterm"), help="oterm's venv")
    parser.add_argument("--only", default="", help="comma-separated app names (default: all)")
    args = parser.parse_args()
    head = subprocess.run(
        ["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    peers = [
        Peer("tui-agent", tui_agent, READY, b"go\r", f"({head.stdout.strip()})"),
        Peer("elia", elia(args.elia), b"Send message", b"go\n", version(args.elia, "elia-chat")),
        Peer("oterm", oterm(args.oterm), b"chat #1", b"go\r", version(args.oterm, "oterm")),
    ]
    if args.only:
        peers = [p for p in peers if p.name in args.only.split(",")]
    versions = {p.name: p.version for p in peers}
    results: dict[str, list[dict[str, float]]] = {p.name: [] for p in peers}
    print("load average at start:", load(), flush=True)
    fake = FakeOllama().start()
    try:
        for run in range(args.runs):
            for peer in peers if run % 2 == 0 else peers[::-1]:  # interleaved, the order alternating
                try:
                    echo, streaming = measure(
                        peer, fake, tokens=args.tokens, rate=args.rate, every=args.every, give_up_s=args.give_up
                    )
                except TimeoutError as error:
                    print(peer.name, "failed:", str(error)[:600], flush=True)
                    continue
                summary = {
                    **echo.summary(),
                    "while_streaming_ms": statistics.median(streaming) * 1000 if streaming else float("nan"),
                    "unfinished": float(echo.unfinished),
                }
                results[peer.name].append(summary)
                print(
                    peer.name,
                    f"run {run + 1}",
                    {k: round(v, 1) for k, v in summary.items()},
                    "load",
                    load(),
                    flush=True,
                )
    finally:
        fake.stop()
    print("load average at end:", load(), flush=True)
    print(table(results, versions))


if __name__ == "__main__":
    main()
