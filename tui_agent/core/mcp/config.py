"""MCP server configuration: stored in the vault database, validated, errors name the field.

Servers are global; each is on or off globally and a profile may override that. Secrets are
never stored: a header value (and an env value, when it should be secret) names an environment
variable, as ``NAME`` or ``... ${NAME} ...``, and is read when the server starts.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from tui_agent.core.store.models import McpServer, McpServerProfile, Profile
from tui_agent.core.store.rows import upsert

if TYPE_CHECKING:
    from tui_agent.core.approvals import Item

SERVER_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PLACEHOLDER_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
POLICIES = ("ask", "auto")
TRANSPORTS = ("stdio", "http")


class McpConfigError(ValueError):
    """An MCP server setting is invalid; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


@dataclass
class ServerConfig:
    """One server as the runtime uses it (decoded from its row)."""

    name: str
    transport: str
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    policy: str = "ask"
    tool_policies: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    enabled: bool = True
    error: str = ""  # the stored row is malformed (a peer wrote it by hand): it never starts

    def policy_for(self, tool: str) -> str:
        return self.tool_policies.get(tool, self.policy)

    def describe(self) -> str:
        if self.error:
            return self.error
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])


def validate(config: ServerConfig) -> ServerConfig:
    """Check every field; raise McpConfigError naming the first bad one."""
    if not SERVER_NAME_RE.match(config.name or ""):
        raise McpConfigError(
            "name", f"must start with a letter and hold 1-32 letters, digits, '_' or '-', got {config.name!r}"
        )
    if "__" in config.name:
        raise McpConfigError("name", "must not contain '__' (it separates server and tool names)")
    if config.transport not in TRANSPORTS:
        raise McpConfigError("transport", f"must be stdio or http, got {config.transport!r}")
    if config.transport == "stdio":
        if not config.command.strip():
            raise McpConfigError("command", "required for a stdio server (the program to run)")
        if config.url:
            raise McpConfigError("url", "only for http servers")
        if config.headers:
            raise McpConfigError("headers", "only for http servers")
    else:
        parsed = urlparse(config.url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise McpConfigError("url", f"must be an http(s) URL, got {config.url!r}")
        if config.command or config.args or config.env or config.cwd:
            raise McpConfigError("command", "only for stdio servers (an http server has a url)")
    if not all(isinstance(a, str) for a in config.args):
        raise McpConfigError("args", "must be a list of strings")
    for key, value in config.env.items():
        if not ENV_NAME_RE.match(key):
            raise McpConfigError("env", f"{key!r} is not a valid environment variable name")
        if not isinstance(value, str):
            raise McpConfigError("env", f"{key}: the value must be a string")
    for key, value in config.headers.items():
        if not re.match(r"^[A-Za-z0-9-]+$", key):
            raise McpConfigError("headers", f"{key!r} is not a valid header name")
        if not (ENV_NAME_RE.match(value) or PLACEHOLDER_RE.search(value)):
            raise McpConfigError(
                "headers",
                f"{key}: the value must NAME an environment variable (GITHUB_TOKEN) or hold one as "
                "'Bearer ${GITHUB_TOKEN}'; secrets are never stored",
            )
    if config.policy not in POLICIES:
        raise McpConfigError("policy", f"must be ask or auto, got {config.policy!r}")
    for tool, policy in config.tool_policies.items():
        if policy not in POLICIES:
            raise McpConfigError("tool_policies", f"{tool}: must be ask or auto, got {policy!r}")
    if config.timeout_s is not None and not 1 <= config.timeout_s <= 3600:
        raise McpConfigError("timeout_s", f"must be between 1 and 3600 seconds, got {config.timeout_s:g}")
    return config


def parse_pairs(field_name: str, items: list[str], separator: str = "=") -> dict[str, str]:
    """``["K=V", ...]`` (or ``K:V`` for headers) to a dict; errors name the field."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition(separator)
        if not sep or not key.strip():
            raise McpConfigError(field_name, f"expected KEY{separator}VALUE, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def expand(value: str, environ: dict[str, str] | None = None, *, whole_name: bool = False) -> str:
    """Fill ``${NAME}`` from the environment; a bare NAME is the variable itself when ``whole_name``."""
    env = os.environ if environ is None else environ

    def lookup(name: str) -> str:
        if name not in env:
            raise McpConfigError("env", f"environment variable {name} is not set")
        return env[name]

    if whole_name and ENV_NAME_RE.match(value):
        return lookup(value)
    return PLACEHOLDER_RE.sub(lambda match: lookup(match.group(1)), value)


# ------------------------------------------------------------------ storage
def _decoded(row: McpServer, column: str, kind: type) -> Any:
    """A JSON column of the row, of the shape it must have; McpConfigError naming it otherwise."""
    raw = getattr(row, column)
    try:
        value: Any = json.loads(raw) if raw else kind()
    except (ValueError, TypeError, RecursionError):
        raise McpConfigError(column, "the stored value is not JSON") from None
    if not isinstance(value, kind):
        raise McpConfigError(column, f"the stored value must be a JSON {'list' if kind is list else 'object'}")
    items: list[Any] = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
    if not all(isinstance(item, str) for item in items):
        raise McpConfigError(column, "the stored values must be strings")
    return value


def _from_row(row: McpServer, enabled: bool | None = None) -> ServerConfig:
    """The row as the runtime uses it. A row another writer made malformed (``args`` not a list of
    strings...) comes back with ``error`` set and never starts; the other servers are not affected."""
    name = str(row.name)
    on = bool(row.enabled) if enabled is None else enabled
    try:
        config = ServerConfig(
            name=name,
            transport=str(row.transport),
            command=str(row.command or ""),
            args=_decoded(row, "args", list),
            env=_decoded(row, "env", dict),
            cwd=str(row.cwd or ""),
            url=str(row.url or ""),
            headers=_decoded(row, "headers", dict),
            policy=str(row.policy),
            tool_policies=_decoded(row, "tool_policies", dict),
            timeout_s=row.timeout_s,
            enabled=on,
        )
        return validate(config)
    except McpConfigError as exc:
        from tui_agent.core.textsafe import visible

        error = visible(
            f"MCP server {name}: the stored setting is malformed ({exc}); fix it with `tui-agent mcp "
            f"remove {name}` and `mcp add` again"
        )
        return ServerConfig(name=name, transport=str(row.transport), enabled=on, error=error)


def _row(name: str) -> McpServer:
    row = McpServer.get_or_none(McpServer.name == name)
    if row is None:
        names = ", ".join(r.name for r in McpServer.select(McpServer.name).order_by(McpServer.name))
        raise McpConfigError("name", f"no MCP server named {name!r} (servers: {names or 'none'})")
    return row


def add_server(config: ServerConfig) -> ServerConfig:
    validate(config)
    if McpServer.get_or_none(McpServer.name == config.name) is not None:
        raise McpConfigError("name", f"an MCP server named {config.name!r} already exists")
    McpServer.create(
        name=config.name,
        transport=config.transport,
        command=config.command,
        args=json.dumps(config.args),
        env=json.dumps(config.env),
        cwd=config.cwd,
        url=config.url,
        headers=json.dumps(config.headers),
        policy=config.policy,
        tool_policies=json.dumps(config.tool_policies),
        timeout_s=config.timeout_s,
        enabled=config.enabled,
    )
    from tui_agent.core import approvals

    approvals.approve_written([approval_item(config)])  # added on this machine: approved here
    return config


def approval_item(config: ServerConfig) -> Item:
    """The server as core.approvals guards it: what runs, or where it connects, and with what."""
    from tui_agent.core import approvals

    value: dict[str, object] = {
        "transport": config.transport,
        "command": config.command,
        "args": config.args,
        "env": config.env,
        "cwd": config.cwd,
        "url": config.url,
        "headers": config.headers,
    }
    return approvals.mcp_server(config.name, value, config.describe())


def remove_server(name: str) -> None:
    _row(name).delete_instance()


def get_server(name: str, profile: Profile | None = None) -> ServerConfig:
    """One server; a malformed stored row raises McpConfigError (one line)."""
    row = _row(name)
    config = _from_row(row, _enabled_for(row, profile))
    if config.error:
        raise McpConfigError("", config.error)
    return config


def list_servers(profile: Profile | None = None) -> list[ServerConfig]:
    """Every server; ``enabled`` is the profile's choice when one is given."""
    return [_from_row(row, _enabled_for(row, profile)) for row in McpServer.select().order_by(McpServer.name)]


def enabled_servers(profile: Profile) -> list[ServerConfig]:
    return [config for config in list_servers(profile) if config.enabled]


def set_enabled(name: str, enabled: bool, profile: Profile | None = None) -> None:
    """Globally, or for one profile only (overriding the global choice)."""
    row = _row(name)
    if profile is None:
        row.enabled = enabled
        row.save()
        return
    upsert(McpServerProfile, server=row.id, profile=profile.id, enabled=enabled)


def set_policy(name: str, policy: str, tool: str | None = None) -> None:
    row = _row(name)
    config = _from_row(row)
    if config.error:
        raise McpConfigError("", config.error)
    if tool is None:
        config.policy = policy
    else:
        config.tool_policies[tool] = policy
    validate(config)
    row.policy = config.policy
    row.tool_policies = json.dumps(config.tool_policies)
    row.save()


def _enabled_for(row: McpServer, profile: Profile | None) -> bool:
    if profile is not None:
        override = McpServerProfile.get_or_none(
            (McpServerProfile.server == row.id) & (McpServerProfile.profile == profile.id)
        )
        if override is not None:
            return bool(override.enabled)
    return bool(row.enabled)


def as_dict(config: ServerConfig) -> dict[str, Any]:
    return {
        "name": config.name,
        "transport": config.transport,
        "target": config.describe(),
        "policy": config.policy,
        "tool_policies": config.tool_policies,
        "enabled": config.enabled,
    }
