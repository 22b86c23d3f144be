"""The web surfaces, one module per surface: ``research`` (the page, its JSON and the live
stream; what its form shows is ``research_form``, its links on Datasette's pages ``menu``),
``runs`` (saved runs), ``actions`` (promotion and feedback on a run) and ``usage`` (the provider
ledger); ``common`` holds what they share and ``guards`` the ASGI guards around them. The agent
tools (``tools``) and the command line (``cli``) reach research through
``service.research`` too."""
