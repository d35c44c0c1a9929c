"""MCP servers as tools: configuration, connections, and their tools in the one registry."""
