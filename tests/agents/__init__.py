"""The research tools as agents reach them: datasette-agent and MCP."""
