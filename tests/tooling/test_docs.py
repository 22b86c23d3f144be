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


def test_every_module_says_what_it_is_for_the_module_map():
    """docs/development.md's map (a cog block: ``make lint`` checks it is current) gives each
    module its docstring's first sentence: a module without one would be a blank row."""
    module_map = load_script("module_map")
    page = (DOCS / "development.md").read_text()
    for name, what in module_map.modules():
        assert what, f"{name} has no docstring saying what it is"
        assert f"| `{name}` |" in page, "run make docs"


def test_every_page_with_generated_parts_is_checked_by_make_lint():
    """A cog block ``make lint`` does not check could drift unseen."""
    makefile = (PACKAGE.parent / "Makefile").read_text()
    checked = set(re.search(r"^GENERATED_DOCS := (.+)$", makefile, re.M).group(1).split())
    assert "cog --check -I scripts $(GENERATED_DOCS)" in makefile
    pages = [README, *sorted(DOCS.glob("*.md"))]
    with_cog = {
        p.relative_to(PACKAGE.parent).as_posix() for p in pages if "[[[cog" in p.read_text()
    }
    assert len(with_cog) >= 4 and with_cog <= checked, with_cog - checked


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


def documented_form(pattern: str) -> str:
    """A route's regex as the docs write it: ``/<database>/-/research``, ``.json`` left off."""
    path = re.sub(r"\(\?P<format>[^)]*\)\??", "", pattern.strip("^$"))
    return re.sub(r"\(\?P<(\w+)>(?:[^()]|\([^()]*\))*\)", r"<\1>", path)


def test_every_route_is_documented():
    from datasette_dbrain_websearch import register_routes

    routes = [documented_form(pattern) for pattern, _ in register_routes(None)]
    assert "/-/research/runs/<run_id>/feedback" in routes  # the patterns were read
    pages = "".join(p.read_text() for p in [README, *sorted(DOCS.glob("*.md"))])
    missing = [route for route in routes if route not in pages]
    assert not missing, f"routes no page names: {missing}"
