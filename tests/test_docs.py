"""The docs (README.md and docs/) document every code a refusal or a warning can carry (a new
code without a line there fails here, read from the package's source, so nothing is listed
twice by hand), every page the README links exists, and the module map is the package's tree."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import datasette_dbrain_websearch

PACKAGE = Path(datasette_dbrain_websearch.__file__).parent
README = PACKAGE.parent / "README.md"
DOCS = PACKAGE.parent / "docs"
ERRORS = {"ResearchError": 2, "ProviderError": 0}  # the code's position among the arguments
CODE = re.compile(r"[a-z][a-z0-9_]+")


def constants(tree: ast.AST) -> dict[str, str]:
    """Module-level ``NAME = "a_code"`` assignments (ProviderError codes are named so)."""
    return {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }


def codes_in_source() -> dict[str, str]:
    """Every code a ResearchError, a ProviderError or a ``{"code": ...}`` dict is given."""
    trees = {p: ast.parse(p.read_text()) for p in PACKAGE.rglob("*.py") if "demo" not in p.parts}
    names = {k: v for tree in trees.values() for k, v in constants(tree).items()}
    found: dict[str, str] = {}

    def value(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return names.get(node.id) if isinstance(node, ast.Name) else None

    for path, tree in trees.items():
        for node in ast.walk(tree):
            candidates: list[ast.AST] = []
            if isinstance(node, ast.Call):
                called = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if called in ERRORS:
                    position = ERRORS[called]
                    candidates += node.args[position : position + 1]
                    candidates += [k.value for k in node.keywords if k.arg in ("code", "status")]
            elif isinstance(node, ast.Dict):
                candidates += [
                    v
                    for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant) and k.value == "code"
                ]
            for candidate in candidates:
                code = value(candidate)
                if code and CODE.fullmatch(code):
                    found.setdefault(code, path.name)
    return found


def test_every_error_and_warning_code_is_in_the_readme():
    codes = codes_in_source()
    assert len(codes) > 60  # the reader found them (a broken reader must not pass)
    pages = [README, *sorted(DOCS.glob("*.md"))]
    documented = set(re.findall(r"`([a-z0-9_]+)`", "".join(p.read_text() for p in pages)))
    missing = {code: where for code, where in codes.items() if code not in documented}
    assert not missing, f"codes with no line in the docs: {missing}"


def load_script(name: str):
    """One of the docs generators in scripts/ (not part of the package), imported as running it
    imports it: with its folder on the path."""
    folder = PACKAGE.parent / "scripts"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def test_the_commands_help_is_what_they_print():
    cli_help = load_script("cli_help")
    page = (DOCS / "cli.md").read_text()
    assert cli_help.with_block(page) == page, "run make docs"
    assert "### `datasette dbrain-websearch token`" in page


def test_the_module_map_is_the_tree():
    """Every module is in docs/development.md's map, in its docstring's words (``make docs``)."""
    module_map = load_script("module_map")
    page = (DOCS / "development.md").read_text()
    assert module_map.with_table(page) == page, "run make docs"
    for name, what in module_map.modules():
        assert what, f"{name} has no docstring saying what it is"


def test_every_link_between_the_docs_leads_somewhere():
    """Links from the README to docs/ and between pages name files and headings that exist."""
    pages = [README, *sorted(DOCS.glob("*.md"))]
    assert len(pages) > 10
    broken = []
    for page in pages:
        for target, anchor in re.findall(
            r"\]\(((?:\.\./|docs/)?[\w-]+\.md)(?:#([\w-]+))?\)", page.read_text()
        ):
            path = (page.parent / target).resolve()
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and anchor not in headings(path):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []


def headings(path: Path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings."""
    found = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found
