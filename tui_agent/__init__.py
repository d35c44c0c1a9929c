"""tui-agent: a full-screen terminal chat agent."""

__version__ = "0.1.0"
