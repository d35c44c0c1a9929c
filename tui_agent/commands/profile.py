"""``tui-agent profile list | show | create | use | set | fields``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tui_agent.core import profiles
from tui_agent.core.session import open_session
from tui_agent.core.store.models import Profile
from tui_agent.core.textsafe import visible


def _say(text: str, file: Any = None) -> None:
    """Profiles can come from a vault someone else made: their text is shown, never acted on."""
    print(visible(text), file=file)


def run_profile(vault_arg: str | None, args: argparse.Namespace) -> int:
    open_session(vault_arg)
    try:
        return _dispatch(args)
    except profiles.ProfileError as exc:
        _say(f"error: {exc}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.action == "list":
        active = profiles.active_profile().name
        for profile in Profile.select().order_by(Profile.name):
            mark = "*" if profile.name == active else " "
            _say(f"{mark} {profile.name}\t{profile.base_url}\t{profile.chat_model}")
        return 0
    if args.action == "show":
        name = args.name or getattr(args, "profile", None)  # `tui-agent --profile NAME profile show`
        profile = profiles.get_profile(name) if name else profiles.active_profile()
        _say(f"name: {profile.name}")
        for name in profiles.FIELD_NAMES:
            _say(f"{name}: {profiles.field_as_text(profile, name)}")
        return 0
    if args.action == "create":
        values = None
        if args.source:
            source = profiles.get_profile(args.source)
            values = {name: getattr(source, name) for name in profiles.FIELD_NAMES}
        # Copied from the store: approved here only where the source's values were (core.approvals).
        profile = profiles.create_profile(args.name, values, approve=values is None)
        _say(f"created profile {profile.name}")
        return 0
    if args.action == "use":
        profiles.use_profile(args.name)
        _say(f"active profile: {args.name}")
        return 0
    if args.action == "set":
        profile = profiles.get_profile(args.profile) if args.profile else profiles.active_profile()
        profiles.set_field(profile, args.key, args.value)
        _say(f"{profile.name}.{args.key} = {profiles.field_as_text(profile, args.key)}")
        return 0
    for spec in profiles.FIELDS:
        _say(f"{spec.name}: {spec.help}")
    return 0
