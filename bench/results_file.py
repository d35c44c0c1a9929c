"""RESULTS.md, rewritten by a partial run (``--only``): which group each figure of the table belongs
to, and the merge that replaces only the rows of the groups just measured (the rest, the A/B table
and the hand-written notes stay)."""

from __future__ import annotations

import re

# Which group a figure of the main table, or a timed-out measurement (by its label), belongs to.
ROW_MARKS = {
    "instructions": "| instructions to the first paint",
    "context": "| context build",
    "huge": "-line reply: ",
    "scroll": "messages, PageUp",
    "session": "-turn session: ",
    "gc": "full collections during",
    "search": "| history of ",
}
FAILED_PREFIX = "Measurements that timed out (not counted): "
FAILED_SPLIT = re.compile(
    r"; (?=(?:send at once|send idle|stream \d+[a-z -]*|huge reply|scroll(?: bursts)?|session|gc o[nf]+|instructions|search): )"
)
AB_HEADING = "## textual-speedups A/B"
NOTES_HEADING = "## Notes (written by hand)"


def row_group(row: str) -> str:
    figure = row.split(" | ")[0]
    return next((group for group, mark in ROW_MARKS.items() if mark in figure), "rounds")


def failed_group(entry: str) -> str:
    label = entry.split(":")[0]
    if label.startswith("gc "):
        return "gc"
    if label.startswith("scroll"):
        return "scroll"
    known = {"huge reply": "huge", "session": "session", "instructions": "instructions", "search": "search"}
    return known.get(label, "rounds")


def merge(old: str, new: str, only: set[str], groups: tuple[str, ...], command: str, timed_out: list[str]) -> str:
    """``--only``: the existing results, with the rows of the groups just measured replaced.
    ``groups``: every group, in order; ``command``: the command that measured ``new``;
    ``timed_out``: this run's measurements that timed out."""
    new_lines = new.splitlines()
    new_rows = [
        ln for ln in new.partition(AB_HEADING)[0].splitlines() if ln.startswith("| ") and not ln.startswith("| figure")
    ]
    fresh = {g: [ln for ln in new_rows if row_group(ln) == g] for g in groups}
    old_main, _, old_ab = old.partition(AB_HEADING)
    if "rounds" in only:  # the A/B figures are measured in the rounds
        old_ab = new.partition(AB_HEADING)[2]
    note = f"`{command}` at {new_lines[2].split('` at ', 1)[1].split(', Python')[0]}"
    note += f" updated the {', '.join(g for g in groups if g in only)} figures."
    head: list[str] = []
    rows: list[str] = []
    failed: list[str] = []
    placed: set[str] = set()
    for line in old_main.splitlines():
        if line.startswith(FAILED_PREFIX):
            entries = FAILED_SPLIT.split(line.removeprefix(FAILED_PREFIX))
            failed += [e for e in entries if failed_group(e) not in only]
        elif line.startswith("| ") and not line.startswith("| figure"):
            group = row_group(line)
            if group not in only:
                rows.append(line)
            elif group not in placed:
                rows += fresh[group]
                placed.add(group)
        elif line.startswith("`python bench/run.py --only ") and line.endswith(
            f" updated the {note.rsplit(' the ', 1)[1]}"
        ):
            continue  # an earlier partial run of the same groups
        elif line or (head and head[-1]):
            head.append(line)
    rows += [ln for g in groups if g in only and g not in placed for ln in fresh[g]]
    failed += timed_out
    table = head.index("| figure | tui-agent | ratio to bare | goal |")
    out = [*head[:table], note, "", *head[table : table + 2], *rows]
    if failed:
        out += ["", FAILED_PREFIX + "; ".join(failed)]
    out += ["", AB_HEADING + old_ab.rstrip("\n"), ""] if old_ab else [""]
    return "\n".join(out)
