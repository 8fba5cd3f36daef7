"""Ways in for agents and people: the CLI (and the MCP server). They use only the public API."""
