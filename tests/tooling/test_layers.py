"""The package's layers, read from its imports: surfaces call the service layer and never
each other, nothing below the surfaces imports one, and each surface imports only what its
allow-list names (never a brain's queries, ``brain_access``, or the stores below the service)."""

from __future__ import annotations

import ast
from pathlib import Path

from ..helpers import REPO

PACKAGE = REPO / "datasette_dbrain_websearch"
SURFACES = {"views", "cli", "tools", "startup"}
CALLERS = SURFACES | {"evals"}  # the evals run research as a surface does; the CLI calls them

# What every caller may use besides the service: the request and its checks, the pack's JSON
# and what is made of it for people, errors, config, permissions and the providers' registry.
COMMON = {
    "service",
    "options",
    "pack_json",
    "errors",
    "config",
    "config_keys",
    "permissions",
    "providers",
    "display",
    "citations",
    "exports",
}
ALLOWED = {
    "views": COMMON
    | {
        "compare",
        "feedback",
        "judge",
        "pack",
        "pipeline",
        "promotion_request",
        "promotions",
        "requesters",
        "saved_runs",
        "traces",
        "urls",
        "usage_report",
        "web_gate",
    },
    "tools": COMMON
    | {
        "admission",
        "brain",
        "promotion_request",
        "promotions",
        "requesters",
        "row_texts",
        "traces",
    },
    "cli": COMMON
    | {
        "config_reference",
        "demo",
        "embeddings",
        "evals",
        "pipeline",
        "runs_db",
        "semantic_index",
        "tokens",
    },
    "evals": COMMON | {"brain", "judge", "pack", "pipeline", "query_plan", "runs_db", "urls"},
    "startup": COMMON | {"compat", "embeddings", "runs_db"},
}


def imported_modules(path: Path) -> set[str]:
    """The package's own modules a file imports, by their first dotted name (``views``); a
    module of a subpackage importing its sibling imports the subpackage."""
    found: set[str] = set()
    in_subpackage = path.parent.parent == PACKAGE
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            relative = (node.module or "").split(".")
            if in_subpackage and node.level == 1:
                found.add(path.parent.name)
            elif relative[0]:
                found.add(relative[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def layer_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def package_files() -> list[Path]:
    """Every module but the hook implementations, which wire the surfaces in."""
    return [p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py"]


def test_surfaces_never_import_each_other_and_layers_below_import_none():
    wrong = []
    for path in package_files():
        own = layer_of(path)
        reached = imported_modules(path) & (CALLERS if own not in CALLERS else SURFACES)
        wrong += [f"{path.relative_to(PACKAGE)} imports {m}" for m in reached if m != own]
    assert wrong == []


def test_each_caller_imports_only_its_allow_list():
    wrong = []
    for path in package_files():
        own = layer_of(path)
        if own in ALLOWED:
            extra = imported_modules(path) - ALLOWED[own] - {own}
            wrong += [f"{path.relative_to(PACKAGE)} imports {m}" for m in sorted(extra)]
    assert wrong == []


def test_the_check_sees_a_surface_importing_another(tmp_path):
    tools = tmp_path / "tools.py"
    tools.write_text("from .views.common import research\nfrom .service import may\n")
    assert imported_modules(tools) == {"views", "service"}
