"""The command line: ``datasette dbrain-research``, ``datasette dbrain-demo`` and the ``datasette
dbrain-websearch`` group (``commands``), its ``eval`` commands (``eval_commands``) and a pack as
the terminal shows it (``render``).

Like the web surfaces, the commands reach research through ``service.research``.
"""
