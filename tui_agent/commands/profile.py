"""``tui-agent profile list | show | create | use | set | fields``."""

from __future__ import annotations

import argparse
import sys

from tui_agent.core import profiles
from tui_agent.core.session import open_session
from tui_agent.core.store.models import Profile


def run_profile(vault_arg: str | None, args: argparse.Namespace) -> int:
    open_session(vault_arg)
    try:
        return _dispatch(args)
    except profiles.ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.action == "list":
        active = profiles.active_profile().name
        for profile in Profile.select().order_by(Profile.name):
            mark = "*" if profile.name == active else " "
            print(f"{mark} {profile.name}\t{profile.base_url}\t{profile.chat_model}")
        return 0
    if args.action == "show":
        name = args.name or getattr(args, "profile", None)  # `tui-agent --profile NAME profile show`
        profile = profiles.get_profile(name) if name else profiles.active_profile()
        print(f"name: {profile.name}")
        for name in profiles.FIELD_NAMES:
            print(f"{name}: {profiles.field_as_text(profile, name)}")
        return 0
    if args.action == "create":
        values = None
        if args.source:
            source = profiles.get_profile(args.source)
            values = {name: getattr(source, name) for name in profiles.FIELD_NAMES}
        profile = profiles.create_profile(args.name, values)
        print(f"created profile {profile.name}")
        return 0
    if args.action == "use":
        profiles.use_profile(args.name)
        print(f"active profile: {args.name}")
        return 0
    if args.action == "set":
        profile = profiles.get_profile(args.profile) if args.profile else profiles.active_profile()
        profiles.set_field(profile, args.key, args.value)
        print(f"{profile.name}.{args.key} = {profiles.field_as_text(profile, args.key)}")
        return 0
    for spec in profiles.FIELDS:
        print(f"{spec.name}: {spec.help}")
    return 0
