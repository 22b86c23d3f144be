"""Research as tools for agents: MCP clients (datasette-mcp, ``mcp.py``) and Datasette's own
agent (datasette-agent, ``agent.py``), over what both share: the calls (``calls.py``), their
schemas and descriptions (``schemas.py``) and what they return (``shapes.py``).

Every tool takes the path the research page takes (``service.research``: the same checks,
evidence, verdict, answer verifier and saved run, recorded with surface ``mcp`` or ``agent``)
and the same permission checks, made per call for the caller's actor. Two rules are stricter
than on the page: a tool call that asks for the web while its actor may not search it (or the
config turned web search off) is refused with the reason, rather than quietly answered from
the brain alone, so an agent never mistakes "the web found nothing" for "the web was not
asked"; and every row an agent sees carries its origin in words (``provenance``) besides the
pack's ``origin``, so a web page is never passed off as the user's own note.

Neither integration is a dependency: ``mcp`` and ``datasette_agent`` are imported only inside
the functions their hooks call.
"""
