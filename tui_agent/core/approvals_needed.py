"""What a profile needs approved before it runs here: its endpoints, its image command and the MCP
servers switched on for it (core.approvals keeps the approvals and is the gate)."""

from __future__ import annotations

from tui_agent.core import approvals
from tui_agent.core.mcp import config as mcp_config
from tui_agent.core.store.models import Profile


def needed(profile: Profile) -> list[approvals.Item]:
    """Every guarded value this profile would use now (a malformed server row is left out: it
    does not start, and says why, wherever it is used)."""
    items = approvals.profile_items(profile)
    for server in mcp_config.enabled_servers(profile):
        if not server.error:
            items.append(mcp_config.approval_item(server))
    return items


def pending_for(profile: Profile) -> list[approvals.Item]:
    """What of ``needed`` this machine has not approved (raises ApprovalsError for an unusable file)."""
    return approvals.pending(needed(profile))


def refusal(items: list[approvals.Item], profile: str = "") -> str:
    """The one line for a run that cannot ask (no terminal); ``profile``: a profile other than the
    active one, named in the command to run."""
    from tui_agent.core.textsafe import visible

    first = items[0].label
    more = f" and {len(items) - 1} more" if len(items) > 1 else ""
    return visible(
        f"not approved on this machine (changed in the shared store, maybe on another machine): {first}{more}; "
        f"review and approve with `tui-agent approve{' --profile ' + profile if profile else ''}` at a terminal"
    )
