"""The package's layers, read from its imports: surfaces call the service layer and never
each other, and nothing below the surfaces imports one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "datasette_dbrain_websearch"
SURFACES = {"views", "cli", "tools"}


def imported_modules(path: Path) -> set[str]:
    """The package's own modules a file imports, by their first dotted name (``views``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            relative = (node.module or "").split(".")
            inside_views = path.parent.name == "views" and node.level == 1
            if inside_views:
                found.add("views")
            elif relative[0]:
                found.add(relative[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def surface_of(path: Path) -> str | None:
    relative = path.relative_to(PACKAGE)
    name = relative.parts[0].removesuffix(".py")
    return name if name in SURFACES else None


def test_surfaces_never_import_each_other_and_layers_below_import_none():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py" and path.parent == PACKAGE:
            continue  # the hook implementations wire the surfaces in
        own = surface_of(path)
        for module in imported_modules(path) & SURFACES:
            if module != own:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert wrong == []


def test_the_check_sees_a_surface_importing_another(tmp_path):
    tools = tmp_path / "tools.py"
    tools.write_text("from .views.common import run_research\nfrom .service import may\n")
    assert imported_modules(tools) == {"views", "service"}
