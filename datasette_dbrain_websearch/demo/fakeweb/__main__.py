"""``python -m datasette_dbrain_websearch.demo.fakeweb --port N``."""

from .server import main

raise SystemExit(main())
