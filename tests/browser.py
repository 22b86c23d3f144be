"""Helpers for the real-browser tests: a real ``datasette serve`` in a subprocess, screenshots
and layout checks. The ``browser`` fixture lives in conftest.py.

Browser test modules use sync Playwright only: keep async tests out of them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from datasette.app import Datasette

from datasette_dbrain_websearch.demo.fakeweb import FakeWeb

from .helpers import BRAVE_KEY, DATASETTE_1, EXA_KEY

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"
SECRET = "browser-test-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, process: subprocess.Popen, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited {process.returncode}:\n{log.read_text()}")
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} not answering after {timeout}s:\n{log.read_text()}")


# The pages under test, without other plugins' scripts: datasette-agent 0.4a0 (installed on the
# 1.0 line for the agent tool tests) writes ``<script>None</script>`` into every page for actors
# it does not serve, a console error that is not ours. 0.65 ignores this variable.
PAGE_PLUGINS = {
    "DATASETTE_LOAD_PLUGINS": "datasette-dbrain-websearch,datasette-llm,datasette-secrets"
}


@contextmanager
def serve(
    brain: Path,
    tmp: Path,
    config: dict[str, Any],
    env: dict[str, str] | None = None,
    plugins_dir: Path | None = None,
) -> Iterator[dict[str, Any]]:
    """``datasette serve BRAIN`` on a free loopback port with ``config`` (given as ``-c`` on
    1.0a, ``-m`` on 0.65); yields ``{"url", "brain", "log"}``."""
    config_file = tmp / "config.json"
    config_file.write_text(json.dumps(config))
    port = free_port()
    log = tmp / "server.log"
    args = [sys.executable, "-m", "datasette", "serve", str(brain), "-h", "127.0.0.1"]
    args += ["-p", str(port), "--secret", SECRET, "-c" if DATASETTE_1 else "-m", str(config_file)]
    if plugins_dir is not None:
        args += ["--plugins-dir", str(plugins_dir)]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + "/-/versions.json", process, log)
        yield {"url": url, "brain": brain, "log": log}
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def serve_with_fake_web(
    brain: Path,
    tmp: Path,
    web: dict[str, Any] | Callable[[FakeWeb], dict[str, Any]],
    plugin: dict[str, Any] | None = None,
    permissions: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    plugins_dir: Path | None = None,
    **fake: Any,
) -> Iterator[dict[str, Any]]:
    """``serve`` the brain with web search on a fake Brave and Exa (``FakeWeb(**fake)``):
    ``web`` is the ``external_search`` block less the providers' keys and addresses, which this
    adds (or a function making it from the running fake, for the fake's own addresses);
    ``plugin`` the plugin's other settings; ``permissions`` 1.0a's grants (0.65 keeps its
    defaults). Yields ``serve``'s dict with the ``fake`` server."""
    with FakeWeb(brave_keys=(BRAVE_KEY,), exa_keys=(EXA_KEY,), **fake) as running_fake:
        block = {
            "enabled": True,
            "brave": {
                "api_key": {"$env": "TEST_BRAVE_KEY"},
                "base_url": running_fake.brave_base_url,
            },
            "exa": {"api_key": {"$env": "TEST_EXA_KEY"}, "base_url": running_fake.exa_base_url},
            **(web(running_fake) if callable(web) else web),
        }
        config: dict[str, Any] = {
            "plugins": {"datasette-dbrain-websearch": {**(plugin or {}), "external_search": block}}
        }
        if DATASETTE_1 and permissions:
            config["permissions"] = permissions
        keys = {"TEST_BRAVE_KEY": BRAVE_KEY, "TEST_EXA_KEY": EXA_KEY, **PAGE_PLUGINS}
        with serve(brain, tmp, config, {**keys, **(env or {})}, plugins_dir) as running:
            yield {**running, "fake": running_fake}


def root_page(browser: Any, server: dict[str, Any], width: int = 1280, height: int = 900) -> Any:
    """A page signed in as root that records console errors in ``page.console_errors``."""
    context = browser.new_context(viewport={"width": width, "height": height})
    root = Datasette([], secret=SECRET).sign({"a": {"id": "root"}}, "actor")
    context.add_cookies([{"name": "ds_actor", "value": root, "url": server["url"]}])
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.console_errors = errors
    return page


def shot(page: Any, name: str, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), full_page=full_page)
    assert path.read_bytes()[:4] == b"\x89PNG"
    return path


def no_horizontal_overflow(page: Any) -> None:
    scroll, client = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= client, f"horizontal overflow: {scroll}px of content in {client}px"


# Every visible control whose target is under 24 x 24 CSS px (WCAG 2.2, 2.5.8), as
# "tag.class 'text' WxH". A checkbox or radio is measured with the label holding it (the label
# takes its clicks); a link inside a sentence is exempt, as WCAG allows; so is the site's own
# header and footer, which are Datasette's.
_SMALL_TARGETS = r"""
() => {
  const controls = 'a[href], button, input:not([type=hidden]), select, textarea, summary';
  const inSentence = e => {
    const block = e.tagName === 'A' && e.closest('p, li, dd, figcaption');
    return !!block && block.textContent.trim().length > e.textContent.trim().length + 2;
  };
  const small = [];
  for (const e of document.querySelectorAll(controls)) {
    if (e.closest('header, footer') || inSentence(e)) continue;
    const boxed = e.matches('input[type=checkbox], input[type=radio]') && e.closest('label') || e;
    const r = boxed.getBoundingClientRect();
    if (!r.width || !r.height || getComputedStyle(e).visibility === 'hidden') continue;
    if (r.width < 24 || r.height < 24) {
      const text = (e.textContent || e.value || e.name || '').trim().slice(0, 30);
      const size = `${Math.round(r.width)}x${Math.round(r.height)}`;
      small.push(`${e.tagName.toLowerCase()}.${e.className} '${text}' ${size}`);
    }
  }
  return small;
}
"""


def small_targets(page: Any) -> list[str]:
    """The page's controls smaller than 24 x 24 px (see ``_SMALL_TARGETS``)."""
    return page.evaluate(_SMALL_TARGETS)
