"""Fixtures: the test brain, Datasette over it, the fake provider server and the browser;
hooks that run the benchmarks' smoke runs beside the suite (``bench_runs``).

Plain helpers (building rows, configs, cookies) live in ``helpers.py``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from datasette.app import Datasette
from datasette.plugins import pm

from datasette_dbrain_websearch.dbrain_env import DBRAIN_VARIABLES
from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.providers.brave import clear_plan_memo

from . import bench_runs
from .helpers import BRAVE_KEY, EXA_KEY, build_fixture_brain, make_datasette


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "bench(name): the test reads that benchmark script's smoke run (bench_runs)"
    )


def benchmark_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("bench")
    return marker.args[0] if marker else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that read a benchmark's smoke run go last: the runs happen in the background
    meanwhile (``bench_runs``), so the tests find them done rather than wait. A run whose data
    is not on this machine is skipped, saying where it was looked for."""
    items.sort(key=lambda item: benchmark_of(item) is not None)
    for item in items:
        name = benchmark_of(item)
        if name is not None and (why := bench_runs.missing(name)):
            item.add_marker(pytest.mark.skip(reason=why))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the smoke runs the selected tests read, and only those that can run here."""
    bench_runs.start(
        [
            name
            for item in session.items
            if (name := benchmark_of(item)) and not bench_runs.missing(name)
        ]
    )


def pytest_sessionfinish() -> None:
    bench_runs.stop()


@pytest.fixture
def smoke(request: pytest.FixtureRequest) -> subprocess.CompletedProcess:
    """The smoke run of the benchmark the test is marked with (``@pytest.mark.bench``)."""
    name = benchmark_of(request.node)
    if name is None:
        pytest.fail("a test that reads a smoke run names it: @pytest.mark.bench(name)")
    return bench_runs.finished(name)


@pytest.fixture(autouse=True, scope="session")
def plugin_list_read_once():
    """Datasette lists its plugins (reading each one's package metadata and folders: ~17 ms on
    1.0a41) twice for every instance; tests make a thousand. The list only changes when a test
    registers a plugin, so it is read again only then."""
    import copy

    import datasette.app
    import datasette.plugins

    read = datasette.plugins.get_plugins
    memo: dict[frozenset[tuple[int, str | None]], list[dict]] = {}

    def get_plugins() -> list[dict]:
        key = frozenset((id(plugin), pm.get_name(plugin)) for plugin in pm.get_plugins())
        if key not in memo:
            memo[key] = read()
        return copy.deepcopy(memo[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasette.app, "get_plugins", get_plugins)
        yield


@pytest.fixture(autouse=True, scope="session")
def without_mcp_server():
    """datasette-mcp builds an MCP server for every Datasette instance (a pydantic model per
    tool: ~50 ms, a minute over the suite). Tests made in-process do without it; the MCP tests
    talk to a real ``datasette serve``, and ``with_mcp`` brings it back for one test."""
    plugin = pm.get_plugin("mcp")
    if plugin is not None:
        pm.unregister(name="mcp")
    yield
    if plugin is not None:
        pm.register(plugin, name="mcp")


@pytest.fixture
def with_mcp():
    """datasette-mcp's routes on the Datasette instances this test makes."""
    import datasette_mcp

    pm.register(datasette_mcp, name="mcp")
    yield
    pm.unregister(name="mcp")


@pytest.fixture
def brain(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "brain.db"
    return path, build_fixture_brain(path)


@pytest_asyncio.fixture
async def ds(brain: tuple[Path, dict[str, Any]]) -> Datasette:
    datasette = make_datasette([str(brain[0])])
    await datasette.invoke_startup()
    return datasette


@pytest.fixture(scope="module")
def fakeweb():
    """The offline provider server, on loopback, for a whole test module."""
    with FakeWeb(brave_keys=(BRAVE_KEY,), exa_keys=(EXA_KEY,)) as server:
        yield server


@pytest.fixture
def fake(fakeweb, monkeypatch):
    monkeypatch.setenv("TEST_BRAVE_KEY", BRAVE_KEY)
    monkeypatch.setenv("TEST_EXA_KEY", EXA_KEY)
    fakeweb.reset()
    clear_plan_memo()  # a Brave plan without LLM Context is remembered per process
    yield fakeweb
    fakeweb.reset()
    clear_plan_memo()


@pytest.fixture(autouse=True)
def llm_user_dir(tmp_path_factory, monkeypatch):
    """Every test runs with an empty llm directory: no real keys, no logs, no default model."""
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path_factory.getbasetemp() / "llm-user"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def no_dbrain_variables(monkeypatch):
    """No test reads provider keys or dbrain's external search settings from the machine's
    environment (dbrain's names are read when the config sets none); tests that want them set
    them."""
    for variable in DBRAIN_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright (``make browser-deps`` installs it).

    One per module: sync Playwright keeps an event loop running while it is open, and the
    async tests of later modules need theirs."""
    import os
    import shutil

    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        message = f"{chromium} not found: run `make browser-deps`"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, server):
    """A browser page signed in as root, on the ``server`` fixture of the browser module."""
    from .browser import root_page

    pg = root_page(browser, server)
    yield pg
    pg.context.close()
