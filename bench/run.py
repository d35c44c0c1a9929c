"""Run every benchmark and write bench/RESULTS.md: `python bench/run.py [--runs N] [--turns N]`.

`--only session` (or rounds, instructions, context, huge, scroll, gc, search; comma-separated) runs just those groups of figures and
updates their rows in the existing RESULTS.md, e.g. `python bench/run.py --only session --turns 500`.

Each figure is measured in a real 120x40 pty against a loopback server streaming as fast as it
can, interleaved with a bare Textual app (Header, TextArea, Footer) in the same run; reported as
the median and min-max of the runs, and as a ratio to the bare app's median. Not a test: no
thresholds (the goals are listed next to the figures for reading)."""

from __future__ import annotations

import argparse
import compileall
import importlib.util
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
import history_scale  # noqa: E402
import instructions  # noqa: E402
import scenarios as sc  # noqa: E402
from pty_app import PtyApp, make_vault  # noqa: E402
from results_file import AB_HEADING, NOTES_HEADING, merge  # noqa: E402

NO_SPEEDUPS = {"TEXTUAL_SPEEDUPS": "0"}
# The A/B runs only where textual-speedups is installed: otherwise both sides run the same code.
SPEEDUPS = importlib.util.find_spec("textual_speedups") is not None
AB_LABELS = (("", {}), (" no-speedups", NO_SPEEDUPS)) if SPEEDUPS else (("", {}),)
# Groups of figures: the interleaved rounds (everything measured --runs times, next to the bare
# app), then single measurements.
GROUPS = ("rounds", "instructions", "context", "huge", "scroll", "session", "gc", "search")
SCROLL_MESSAGES = 5_000
GC_TURNS = 60  # replies with a second's pause after each, with the idle collector on and off


def fmt(values: list[float], unit: str = "s") -> str:
    if not values:
        return "failed"
    if unit == "MB":
        return f"{statistics.median(values):.0f} MB ({min(values):.0f}–{max(values):.0f})"
    if unit == "×":
        return f"{statistics.median(values):.2f}× ({min(values):.2f}–{max(values):.2f})"
    return f"{statistics.median(values):.3f} s ({min(values):.3f}–{max(values):.3f})"


FAILED: list[str] = []


def attempt(label: str, fn, *args, **kwargs):
    """Run one measurement; a timeout is recorded as a failure instead of ending the run."""
    try:
        return fn(*args, **kwargs)
    except TimeoutError as exc:
        FAILED.append(f"{label}: {str(exc)[:120]}")
        print("failed:", label, str(exc), sep="\n", flush=True)  # all of it, with the app's log
        return None


def groups(text: str) -> set[str]:
    chosen = {g.strip() for g in text.split(",") if g.strip()}
    if unknown := chosen - set(GROUPS):
        raise argparse.ArgumentTypeError(f"unknown group(s) {', '.join(sorted(unknown))}; choose from {GROUPS}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=500, help="turns in the long-session run (0 skips it)")
    parser.add_argument("--huge-lines", type=int, default=100_000)
    parser.add_argument("--only", type=groups, default=None, help=f"comma-separated groups of figures: {GROUPS}")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument(
        "--search-sizes", default="5000,100000,1000000", help="history sizes (messages) of the search group"
    )
    parser.add_argument(
        "--search-pg-sizes",
        default="5000,100000,1000000",
        help="of those, the sizes also measured on PostgreSQL (a throwaway cluster; empty: none)",
    )
    args = parser.parse_args()
    only: set[str] = args.only or set(GROUPS)
    # As installed (pip compiles the bytecode): without it every start compiles tui-agent's ~100
    # modules again, which the bare app (all in site-packages) never pays for.
    compileall.compile_dir(HERE.parent / "tui_agent", quiet=1)
    fake = sc.FakeOpenAI().start()
    r: dict[str, list[float]] = defaultdict(list)
    if "rounds" in only:
        rounds(r, fake, args.runs)
    single: dict[str, object] = {}
    if "instructions" in only:
        if instructions.available():
            single["instructions"] = counted(fake)
        else:
            FAILED.append("instructions: valgrind is not installed (apt-get install valgrind)")
    if "context" in only:
        print("context build", flush=True)
        single["context"] = context_build.measure()
    if "huge" in only:
        print("huge reply", flush=True)
        vault = make_vault(fake.base_url)
        single["huge"] = attempt("huge reply", sc.huge_reply, vault, fake, args.huge_lines, {})
        shutil.rmtree(vault.parent)
    if "scroll" in only:
        vault = make_vault(fake.base_url)
        sc.fill(vault, SCROLL_MESSAGES)
        for label, burst in (("scroll", 0), ("scroll bursts", 10)):
            print(f"{label}: PageUp through {SCROLL_MESSAGES:,} messages", flush=True)
            single[label] = attempt(label, sc.scroll_up, vault, SCROLL_MESSAGES, burst=burst)
        shutil.rmtree(vault.parent)
    if "session" in only and args.turns:
        print(f"{args.turns}-turn session", flush=True)
        vault = make_vault(fake.base_url)
        single["session"] = session = attempt("session", sc.session, vault, fake, args.turns, {})
        shutil.rmtree(vault.parent)
        if session is not None:  # the trend, for reading (not in the table)
            turn_s = session["turn_s"]
            print("RSS after turn n:", ", ".join(f"{n}: {mb:.0f} MB" for n, mb in session["rss_by_turn"].items()))
            print(
                "median turn per 50:",
                ", ".join(f"{statistics.median(turn_s[i : i + 50]):.2f}" for i in range(0, len(turn_s), 50)),
            )
            cpu_s = session["cpu_s"]
            print(
                "the app's CPU time per turn, mean per 50:",
                ", ".join(f"{statistics.mean(cpu_s[i : i + 50]):.3f}" for i in range(0, len(cpu_s), 50)),
            )
            print("Enters pressed again (sent before the turn was over):", session["refused"], flush=True)
    if "gc" in only:
        for label, env in (("on", {}), ("off", {"TUI_AGENT_GC_IDLE": "0"})):
            print(f"full collections, idle collector {label}", flush=True)
            vault = make_vault(fake.base_url)
            single[f"gc {label}"] = gc_run = attempt(f"gc {label}", sc.gc_pauses, vault, fake, GC_TURNS, env)
            shutil.rmtree(vault.parent)
            if gc_run is not None:
                print(f"  during replies: {gc_run['during_ms']} ms; between replies: {gc_run['between']}", flush=True)
    if "search" in only:
        sizes = tuple(int(n) for n in args.search_sizes.split(","))
        runs = min(args.runs, 3)
        pg_sizes = tuple(int(n) for n in args.search_pg_sizes.split(",") if n)
        single["search"] = attempt("search", history_scale.measure, fake.base_url, runs, sizes, pg_sizes)
    fake.stop()
    report = render(r, single, args)
    old = args.out.read_text() if args.out.exists() else ""
    old, _, notes = old.partition(NOTES_HEADING)
    if args.only and old:
        report = merge(old, report, args.only, GROUPS, command(args), FAILED)
    if notes:  # written by hand: kept whatever was measured again
        report = report.rstrip("\n") + "\n\n" + NOTES_HEADING + notes
    args.out.write_text(report)
    print(report)


def counted(fake: sc.FakeOpenAI) -> dict[str, float]:
    vaults: dict[str, Path] = {}
    for name, messages in (("empty", 0), ("500", 500), ("5000", 5000)):
        vaults[name] = make_vault(fake.base_url)
        if messages:
            sc.fill(vaults[name], messages)
    try:
        return instructions.measure(vaults)
    finally:
        for vault in vaults.values():
            shutil.rmtree(vault.parent)


def rounds(r: dict[str, list[float]], fake: sc.FakeOpenAI, runs: int) -> None:
    vaults: dict[str, Path] = {}
    for name, messages, images in (("empty", 0, 0), ("500", 500, 0), ("5000", 5000, 0), ("images", 12, 1)):
        vaults[name] = make_vault(fake.base_url)
        if messages:
            sc.fill(vaults[name], messages, images_every=images)
    for run in range(runs):
        print(f"round {run + 1}/{runs}", flush=True)
        # Interleaved: every round measures the bare app and then each case once.
        paint, rss = sc.paint(PtyApp.bare())
        r["bare paint"].append(paint)
        r["bare rss"].append(rss)
        r["bare echo"].append(sc.echo(PtyApp.bare()))
        for name in ("empty", "500", "5000", "images"):
            # The bare app again right before each case: measured back to back, the host's speed of
            # the moment (it moves by a third from one minute to the next) cancels out of the ratio.
            before, _ = sc.paint(PtyApp.bare())
            r["bare paint"].append(before)
            paint, rss = sc.paint(PtyApp.agent(vaults[name]))
            r[f"paint {name}"].append(paint)
            r[f"paint ratio {name}"].append(paint / before)
            r[f"rss {name}"].append(rss)
        r["echo"].append(sc.echo(PtyApp.agent(vaults["empty"])))
        for label, env in AB_LABELS if SPEEDUPS else ():
            paint, _ = sc.paint(PtyApp.agent(vaults["empty"], env))
            r[f"paint empty{label} (A/B)"].append(paint)
            paint, _ = sc.paint(PtyApp.agent(vaults["5000"], env))
            r[f"paint 5000{label} (A/B)"].append(paint)
        fresh = make_vault(fake.base_url)
        if (sent := attempt("send at once", sc.send_at_once, fresh, fake, {})) is not None:
            r["send at once"].append(sent)
        # The same first send once the app has idled (its warm-up done), in a vault of its own: the
        # send at once is read as a ratio to it (issue 39 item 2), per round.
        idle_vault = make_vault(fake.base_url)
        if (idle := attempt("send idle", sc.send_idle, idle_vault, fake, {})) is not None:
            r["send idle"].append(idle)
            if sent is not None:
                r["send ratio"].append(sent / idle)
        shutil.rmtree(idle_vault.parent)
        this_round: dict[int, float] = {}
        for tokens in (2000, 20000):
            for label, env in AB_LABELS:
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
                if not label:
                    this_round[tokens] = total
                shutil.rmtree(vault.parent)
        if len(this_round) == 2:  # measured back to back: the host's speed of the moment cancels out
            r["stream ratio"].append(this_round[20000] / this_round[2000])
        shutil.rmtree(fresh.parent)
    for vault in vaults.values():
        shutil.rmtree(vault.parent)


def render(r: dict[str, list[float]], single: dict[str, object], args: argparse.Namespace) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout
    lines = [
        "# Benchmark results",
        "",
        f"`{command(args)}` at {commit.strip()},"
        f" {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python {platform.python_version()},"
        " 120x40 pty, loopback server streaming as fast as it can. Median (min–max) of the runs;"
        " ratios are to the bare Textual app (Header, TextArea, Footer) measured in the same rounds;"
        " a first paint's ratio is per round, to the bare app started right before it.",
        "",
        "| figure | tui-agent | ratio to bare | goal |",
        "|---|---|---|---|",
    ]
    bare = statistics.median(r["bare paint"]) if r["bare paint"] else None
    if bare is not None:
        lines += round_rows(r, bare)
    lines += single_rows(single, args, bare)
    if FAILED:
        lines += ["", "Measurements that timed out (not counted): " + "; ".join(FAILED)]
    if bare is not None and not SPEEDUPS:
        lines += ["", AB_HEADING + " (same rounds)", "", NO_SPEEDUPS_NOTE]
    elif bare is not None:
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
        ]
    lines.append("")
    return "\n".join(lines)


def command(args: argparse.Namespace) -> str:
    only = f" --only {','.join(g for g in GROUPS if g in args.only)}" if args.only else ""
    return f"python bench/run.py{only} --runs {args.runs} --turns {args.turns}"


def round_rows(r: dict[str, list[float]], bare: float) -> list[str]:
    bare_echo = statistics.median(r["bare echo"])

    def ratio(key: str, base: float = bare) -> str:
        if not r[key]:
            return "—"
        return f"{statistics.median(r[key]) / base:.2f}×"

    def paired(name: str) -> str:
        """The ratio to the bare app started right before, per round: median (min–max)."""
        return fmt(r[f"paint ratio {name}"], "×") if r[f"paint ratio {name}"] else ratio(f"paint {name}")

    return [
        f"| bare app: start → first paint | {fmt(r['bare paint'])} | 1.00× | — |",
        f"| first paint, empty vault | {fmt(r['paint empty'])} | {paired('empty')} | ≤ 1.25× |",
        f"| first paint, 500-message conversation | {fmt(r['paint 500'])} | {paired('500')} | ≤ 1.5× |",
        f"| first paint, 5,000-message conversation | {fmt(r['paint 5000'])} | {paired('5000')} | ≤ 1.5× |",
        f"| first paint, images on the first page | {fmt(r['paint images'])} | {paired('images')} | text first |",
        f"| keystroke echo (bare: {statistics.median(r['bare echo']) * 1000:.0f} ms) | {fmt(r['echo'])}"
        f" | {ratio('echo', bare_echo)} | ≤ 50 ms |",
        f"| Enter (100 ms after paint) → first reply token on screen | {fmt(r['send at once'])}"
        f" | {fmt(r['send ratio'], '×') if r['send ratio'] else '—'} the idle send of the same round | ≤ 0.5 s, ≤ 1.5× |",
        f"| Enter (3 s after paint, the app idle) → first reply token on screen | {fmt(r['send idle'])} | — | — |",
        f"| 2,000 tokens: Enter → last token on screen | {fmt(r['stream 2000 enter'])} | — | — |",
        f"| 2,000 tokens: server's last byte → on screen | {fmt(r['stream 2000 after'])} | — | ≤ 1.0 s |",
        f"| 20,000 tokens: Enter → last token on screen | {fmt(r['stream 20000 enter'])}"
        f" | {fmt(r['stream ratio'], '×')} the 2,000 of the same round | ≤ 10× |",
        f"| 20,000 tokens: server's last byte → on screen | {fmt(r['stream 20000 after'])} | — | — |",
        f"| RSS after first paint, empty / 5,000 messages (bare {statistics.median(r['bare rss']):.0f} MB)"
        f" | {statistics.median(r['rss empty']):.0f} / {statistics.median(r['rss 5000']):.0f} MB | — | — |",
        f"| peak RSS, 2,000 / 20,000-token reply | {fmt(r['stream 2000 peak'], 'MB')} /"
        f" {fmt(r['stream 20000 peak'], 'MB')} | — | — |",
    ]


def single_rows(single: dict[str, object], args: argparse.Namespace, bare: float | None) -> list[str]:
    lines = []
    counts = single.get("instructions")
    if isinstance(counts, dict):
        base = counts["bare"]
        lines.append(
            f"| instructions to the first paint (callgrind), bare {base:.2f} G: empty / 500 / 5,000 messages"
            f" | {counts['empty']:.2f} / {counts['500']:.2f} / {counts['5000']:.2f} G"
            f" | {counts['empty'] / base:.2f}× / {counts['500'] / base:.2f}× / {counts['5000'] / base:.2f}×"
            " | ≤ 1.25× / ≤ 1.5× |"
        )
    context = single.get("context")
    if isinstance(context, dict):
        lines.append(
            f"| context build, 400 messages with 50 images (~0.5 MB each, {context['images']} sent as pixels):"
            " first / again"
            f" | {context['first_s'] * 1000:.0f} ms / {context['again_s'] * 1000:.1f} ms | — | again ≤ 20 ms |"
        )
    huge = single.get("huge")
    if isinstance(huge, dict):
        reopen_ratio = f"{huge['reopen_paint_s'] / bare:.2f}×" if bare else "—"
        lines += [
            f"| {args.huge_lines:,}-line reply: Esc → 'cancelled' shown | {huge['esc_s']:.3f} s | — | immediate |",
            f"| {args.huge_lines:,}-line reply: reopen → first paint | {huge['reopen_paint_s']:.3f} s"
            f" | {reopen_ratio} | fast |",
            f"| {args.huge_lines:,}-line reply: keystroke echo after reopening | {huge['echo_after_reopen_s'] * 1000:.0f} ms"
            " | — | no lag |",
        ]
    for label, how in (("scroll", "held down"), ("scroll bursts", "10 at a time, a second's pause after each 10")):
        run = single.get(label)
        if not isinstance(run, dict):
            continue
        lines.append(
            f"| {SCROLL_MESSAGES:,} messages, PageUp from the end to the first message ({run['keys']} keys, {how}):"
            " each key's answer median / p95 / max; keys answered after 100 ms"
            f" | {run['median_s'] * 1000:.0f} / {run['p95_s'] * 1000:.0f} / {run['max_s'] * 1000:.0f} ms;"
            f" {run['over_100ms']} | — | no visible stall |"
        )
        lines.append(
            f"| {SCROLL_MESSAGES:,} messages, PageUp ({how}): full collections meanwhile (longest); RSS at the end"
            f" / at the top | {run['collections']} ({run['collection_max_ms']:.0f} ms);"
            f" {run['rss_start']:.0f} / {run['rss_top']:.0f} MB | — | — |"
        )
    session = single.get("session")
    if isinstance(session, dict):
        turns = session["turns"]
        lines += [
            f"| {turns}-turn session: keystroke echo, start / after {turns} turns"
            f" | {session['first_echo'] * 1000:.0f} / {session['last_echo'] * 1000:.0f} ms | — | ≤ 50 ms |",
            f"| {turns}-turn session: RSS at the end | {session['rss_mb']:.0f} MB | — | ≤ 150 MB |",
            f"| {turns}-turn session: median turn (Enter → last word), first 50 / last 50"
            f" | {session['first_turns_s']:.2f} / {session['last_turns_s']:.2f} s | — | flat |",
            f"| {turns}-turn session: the app's CPU time per turn (mean), first 50 / last 50"
            f" | {session['first_cpu_s']:.3f} / {session['last_cpu_s']:.3f} s | — | flat |",
        ]
    if isinstance(single.get("search"), dict):
        lines += history_scale.rows(single["search"])  # type: ignore[arg-type]
    on, off = single.get("gc on"), single.get("gc off")
    if isinstance(on, dict) and isinstance(off, dict):
        longest = max(off["during_ms"], default=0.0)
        lines.append(
            f"| {on['turns']} replies, a second's pause after each: full collections during / between replies"
            f" | {on['during']} / {on['between']} (idle collector off: {off['during']} / {off['between']},"
            f" up to {longest:.0f} ms each) | — | none during |"
        )
    return lines


NO_SPEEDUPS_NOTE = (
    "textual-speedups is not installed here, so nothing was compared. Measured once by hand"
    " (2026-11-24, instructions to the first paint under callgrind, textual-speedups 0.2.1):"
    " empty vault 1.404 → 1.405 G, 500 messages 1.740 → 1.730 G. It does not help the first paint,"
    " so it is not a dependency."
)


if __name__ == "__main__":
    main()
