"""Run every benchmark and write bench/RESULTS.md: `python bench/run.py [--runs N] [--turns N]`.

Each figure is measured in a real 120x40 pty against a loopback server streaming as fast as it
can, interleaved with a bare Textual app (Header, TextArea, Footer) in the same run; reported as
the median and min-max of the runs, and as a ratio to the bare app's median. Not a test: no
thresholds (the goals are listed next to the figures for reading)."""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import context_build  # noqa: E402
import scenarios as sc  # noqa: E402
from pty_app import PtyApp, make_vault  # noqa: E402

NO_SPEEDUPS = {"TEXTUAL_SPEEDUPS": "0"}


def fmt(values: list[float], unit: str = "s") -> str:
    if not values:
        return "failed"
    if unit == "MB":
        return f"{statistics.median(values):.0f} MB ({min(values):.0f}–{max(values):.0f})"
    return f"{statistics.median(values):.3f} s ({min(values):.3f}–{max(values):.3f})"


FAILED: list[str] = []


def attempt(label: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Run one measurement; a timeout is recorded as a failure instead of ending the run."""
    try:
        return fn(*args, **kwargs)
    except TimeoutError as exc:
        FAILED.append(f"{label}: {str(exc)[:120]}")
        print("failed:", label, flush=True)
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=500, help="turns in the long-session run (0 skips it)")
    parser.add_argument("--huge-lines", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args()
    fake = sc.FakeOpenAI().start()
    vaults: dict[str, Path] = {}
    for name, messages, images in (("empty", 0, 0), ("500", 500, 0), ("5000", 5000, 0), ("images", 12, 1)):
        vaults[name] = make_vault(fake.base_url)
        if messages:
            sc.fill(vaults[name], messages, images_every=images)
    r: dict[str, list[float]] = defaultdict(list)
    for run in range(args.runs):
        print(f"round {run + 1}/{args.runs}", flush=True)
        # Interleaved: every round measures the bare app and then each case once.
        paint, rss = sc.paint(PtyApp.bare())
        r["bare paint"].append(paint)
        r["bare rss"].append(rss)
        r["bare echo"].append(sc.echo(PtyApp.bare()))
        for name in ("empty", "500", "5000"):
            paint, rss = sc.paint(PtyApp.agent(vaults[name]))
            r[f"paint {name}"].append(paint)
            r[f"rss {name}"].append(rss)
        r["paint images"].append(sc.paint(PtyApp.agent(vaults["images"]))[0])
        r["echo"].append(sc.echo(PtyApp.agent(vaults["empty"])))
        for label, env in (("", {}), (" no-speedups", NO_SPEEDUPS)):
            paint, _ = sc.paint(PtyApp.agent(vaults["empty"], env))
            r[f"paint empty{label} (A/B)"].append(paint)
            paint, _ = sc.paint(PtyApp.agent(vaults["5000"], env))
            r[f"paint 5000{label} (A/B)"].append(paint)
        fresh = make_vault(fake.base_url)
        if (sent := attempt("send at once", sc.send_at_once, fresh, fake, {})) is not None:
            r["send at once"].append(sent)
        for tokens in (2000, 20000):
            for label, env in (("", {}), (" no-speedups", NO_SPEEDUPS)):
                if label and tokens == 20000:
                    continue
                vault = make_vault(fake.base_url)
                measured = attempt(f"stream {tokens}{label}", sc.stream, vault, fake, tokens, env)
                if measured is None:
                    continue
                total, after, peak = measured
                r[f"stream {tokens}{label} enter"].append(total)
                r[f"stream {tokens}{label} after"].append(after)
                r[f"stream {tokens}{label} peak"].append(peak)
                shutil.rmtree(vault.parent)
        shutil.rmtree(fresh.parent)
    single: dict[str, object] = {}
    print("context build", flush=True)
    single["context"] = context_build.measure()
    print("huge reply", flush=True)
    vault = make_vault(fake.base_url)
    single["huge"] = attempt("huge reply", sc.huge_reply, vault, fake, args.huge_lines, {})
    shutil.rmtree(vault.parent)
    if args.turns:
        print(f"{args.turns}-turn session", flush=True)
        vault = make_vault(fake.base_url)
        single["session"] = attempt("session", sc.session, vault, fake, args.turns, {})
        shutil.rmtree(vault.parent)
    fake.stop()
    for vault in vaults.values():
        shutil.rmtree(vault.parent)
    report = render(r, single, args)
    args.out.write_text(report)
    print(report)


def render(r: dict[str, list[float]], single: dict[str, object], args: argparse.Namespace) -> str:
    bare = statistics.median(r["bare paint"])
    bare_echo = statistics.median(r["bare echo"])

    def ratio(key: str, base: float = bare) -> str:
        if not r[key]:
            return "—"
        return f"{statistics.median(r[key]) / base:.2f}×"

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout
    lines = [
        "# Benchmark results",
        "",
        f"`python bench/run.py --runs {args.runs} --turns {args.turns}` at {commit.strip()},"
        f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python {platform.python_version()},"
        " 120x40 pty, loopback server streaming as fast as it can. Median (min–max) of the runs;"
        " ratios are to the bare Textual app (Header, TextArea, Footer) measured in the same rounds.",
        "",
        "| figure | tui-agent | ratio to bare | goal |",
        "|---|---|---|---|",
        f"| bare app: start → first paint | {fmt(r['bare paint'])} | 1.00× | — |",
        f"| first paint, empty vault | {fmt(r['paint empty'])} | {ratio('paint empty')} | ≤ 1.25× |",
        f"| first paint, 500-message conversation | {fmt(r['paint 500'])} | {ratio('paint 500')} | ≤ 1.5× |",
        f"| first paint, 5,000-message conversation | {fmt(r['paint 5000'])} | {ratio('paint 5000')} | ≤ 1.5× |",
        f"| first paint, images on the first page | {fmt(r['paint images'])} | {ratio('paint images')} | text first |",
        f"| keystroke echo (bare: {statistics.median(r['bare echo']) * 1000:.0f} ms) | {fmt(r['echo'])}"
        f" | {ratio('echo', bare_echo)} | ≤ 50 ms |",
        f"| Enter (100 ms after paint) → first reply token on screen | {fmt(r['send at once'])} | — | ≤ 0.5 s |",
        f"| 2,000 tokens: Enter → last token on screen | {fmt(r['stream 2000 enter'])} | — | — |",
        f"| 2,000 tokens: server's last byte → on screen | {fmt(r['stream 2000 after'])} | — | ≤ 1.0 s |",
        f"| 20,000 tokens: Enter → last token on screen | {fmt(r['stream 20000 enter'])}"
        f" | {ratio('stream 20000 enter', statistics.median(r['stream 2000 enter'] or [1]))} the 2,000"
        " | ≤ 10× |",
        f"| 20,000 tokens: server's last byte → on screen | {fmt(r['stream 20000 after'])} | — | — |",
        f"| RSS after first paint, empty / 5,000 messages (bare {statistics.median(r['bare rss']):.0f} MB)"
        f" | {statistics.median(r['rss empty']):.0f} / {statistics.median(r['rss 5000']):.0f} MB | — | — |",
        f"| peak RSS, 2,000 / 20,000-token reply | {fmt(r['stream 2000 peak'], 'MB')} /"
        f" {fmt(r['stream 20000 peak'], 'MB')} | — | — |",
    ]
    context = single.get("context")
    if isinstance(context, dict):
        lines.append(
            f"| context build, 400 messages with 50 images (~0.5 MB each): first / again"
            f" | {context['first_s'] * 1000:.0f} ms / {context['again_s'] * 1000:.1f} ms | — | again ≤ 20 ms |"
        )
    huge = single.get("huge")
    if isinstance(huge, dict):
        lines += [
            f"| {args.huge_lines:,}-line reply: Esc → 'cancelled' shown | {huge['esc_s']:.3f} s | — | immediate |",
            f"| {args.huge_lines:,}-line reply: reopen → first paint | {huge['reopen_paint_s']:.3f} s"
            f" | {huge['reopen_paint_s'] / bare:.2f}× | fast |",
            f"| {args.huge_lines:,}-line reply: keystroke echo after reopening | {huge['echo_after_reopen_s'] * 1000:.0f} ms"
            " | — | no lag |",
        ]
    session = single.get("session")
    if isinstance(session, dict):
        lines += [
            f"| {session['turns']}-turn session: keystroke echo, start / end"
            f" | {session['first_echo'] * 1000:.0f} / {session['last_echo'] * 1000:.0f} ms | — | ≤ 50 ms |",
            f"| {session['turns']}-turn session: RSS at the end | {session['rss_mb']:.0f} MB | — | ≤ 150 MB |",
            f"| {session['turns']}-turn session: median turn, first 50 / last 50"
            f" | {session['first_turns_s']:.2f} / {session['last_turns_s']:.2f} s | — | flat |",
        ]
    if FAILED:
        lines += ["", "Measurements that timed out (not counted): " + "; ".join(FAILED)]
    lines += [
        "",
        "## textual-speedups A/B (same rounds)",
        "",
        "| figure | with | without (TEXTUAL_SPEEDUPS=0) |",
        "|---|---|---|",
        f"| first paint, empty vault | {fmt(r['paint empty (A/B)'])} | {fmt(r['paint empty no-speedups (A/B)'])} |",
        f"| first paint, 5,000 messages | {fmt(r['paint 5000 (A/B)'])} | {fmt(r['paint 5000 no-speedups (A/B)'])} |",
        f"| 2,000 tokens: Enter → on screen | {fmt(r['stream 2000 enter'])}"
        f" | {fmt(r['stream 2000 no-speedups enter'])} |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
