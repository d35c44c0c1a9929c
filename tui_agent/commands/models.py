"""``tui-agent models``: the server's models, the window each really runs with, what each can do."""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    models = sub.add_parser(
        "models",
        parents=[common],
        help="the server's models: real context window, vision/tools/thinking, which the profile uses",
    )
    models.add_argument("--profile", metavar="NAME", help="profile whose endpoint to ask (default: the active one)")
    models.add_argument("--json", action="store_true", help="print the models as JSON")


def run_models(vault_arg: str | None, args: argparse.Namespace) -> int:
    from tui_agent.core.models import catalog, listing
    from tui_agent.core.profiles import ProfileError
    from tui_agent.core.session import open_session
    from tui_agent.core.textsafe import visible

    session = open_session(vault_arg)
    try:
        profile = session.profile(args.profile)
    except ProfileError as exc:
        print(f"error: profile {visible(str(exc))}", file=sys.stderr)
        return 2
    found = catalog.refresh(profile, session.vault, asked=True)
    if found.error is not None:
        print(f"error: {visible(found.error)}", file=sys.stderr)
        if not found.models:
            return 1
        print("(what the server said before, from the cache)", file=sys.stderr)
    if args.json:
        out = {
            "server": found.server,
            "base_url": found.base_url,
            "chat_model": profile.chat_model,
            "vision_model": profile.vision_model,
            "models": [{**m.to_json(), "used_for": listing.used_for(profile, m.id, found)} for m in found.models],
        }
        print(json.dumps(out, indent=2))
        return 0
    table = listing.rows(profile, found)
    print(listing.heading(found))
    if not table:
        print("  (no models)")
    width = max([len("MODEL"), *(len(r.model) for r in table)])
    print(f"  {'MODEL':<{width}}  {'WINDOW':>9}  {'CAN':<25}  USED FOR")
    for row in table:
        print(f"  {row.model:<{width}}  {row.window:>9}  {row.can:<25}  {row.used_for}".rstrip())
    sources: dict[str, list[str]] = {}
    for row in table:
        if row.source:
            sources.setdefault(row.source, []).append(row.model)
    for source, names in sources.items():
        print(f"  window of {', '.join(names)}: {source}")
    for warning in listing.warnings(profile, found):
        print(f"warning: {warning}", file=sys.stderr)
    print("set one: tui-agent profile set chat_model NAME (or vision_model); in the app: the palette's Choose a model")
    return 0
