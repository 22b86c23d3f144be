"""Helpers the tests share: a small, purpose-built dbrain brain and Datasette instances over it.

The brain is written the way dbrain writes one (schema v20 from ``schema.py``, FTS rows synced
by rowid with ``fts_rows.py``, a fresh source with no FTS row), with rows chosen so each
retrieval path has a case. It is built once per process and copied for each test that asks for one.
"""

from __future__ import annotations

import hashlib
import html
import inspect
import json
import re
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache
from datasette import hookimpl
from datasette.app import Datasette
from datasette.plugins import pm

from datasette_dbrain_websearch import runs_db
from datasette_dbrain_websearch.brain import Facts
from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.excerpts import Excerpt
from datasette_dbrain_websearch.fts_rows import sync_item_fts, sync_source_fts
from datasette_dbrain_websearch.pack_rows import BrainRow, Retrieval, WebRow
from datasette_dbrain_websearch.schema import create_brain_schema
from datasette_dbrain_websearch.urls import normalize_url

# The test folders sit one level below tests/; these name what they read, wherever they are.
TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"

NOW = "2026-07-18T00:00:00Z"
SOURCE_URLS = {
    "src_fts5": "https://sqlite.org/fts5.html",
    "src_espresso": "https://www.example.com/espresso-guide/",
    "src_pending": "https://example.org/pending-article",
    "src_plugins": "https://datasette.io/plugins",
}
DATASETTE_1 = "config" in inspect.signature(Datasette.__init__).parameters


def add_item(conn: sqlite3.Connection, source_key: str, source_type: str, **cols: Any) -> int:
    """Insert an item the way dbrain does (all NOT NULL columns set) and sync its FTS row."""
    summary = cols.pop("enrichment_summary", "")
    values = {
        "source_key": source_key,
        "source_type": source_type,
        "external_id": cols.pop("external_id", source_key.split(":", 1)[-1]),
        "canonical_url": cols.pop("canonical_url", ""),
        "content_hash": hashlib.sha256(source_key.encode()).hexdigest(),
        "raw_json": "{}",
        "imported_at": NOW,
        "updated_at": NOW,
        "last_seen_at": NOW,
        **cols,
    }
    names = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    item_id = conn.execute(f"insert into items ({names}) values ({marks})", list(values.values()))
    item_id = item_id.lastrowid
    if summary:
        conn.execute(
            "insert into item_enrichments (item_id, role, status, text, created_at, updated_at) "
            "values (?, 'summary', 'ok', ?, ?, ?)",
            [item_id, summary, NOW, NOW],
        )
    sync_item_fts(conn, item_id)
    return item_id


def add_source(conn: sqlite3.Connection, url: str, fts: bool = True, **cols: Any) -> int:
    """Insert a source as ``dbrain link add`` + extraction would, optionally without FTS."""
    n = normalize_url(url)
    values = {
        "source_key": n.source_key,
        "canonical_url": n.canonical_url,
        "normalized_url": n.normalized_url,
        "source_type": n.source_type,
        "domain": n.domain,
        "note_path": n.note_path,
        "created_at": cols.pop("created_at", NOW),
        "updated_at": NOW,
        **cols,
    }
    names = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    source_id = conn.execute(
        f"insert into sources ({names}) values ({marks})", list(values.values())
    ).lastrowid
    if fts:
        sync_source_fts(conn, source_id)
    return source_id


_BUILT: dict[str, tuple[Path, dict[str, Any]]] = {}


def empty_brain(path: Path) -> None:
    """An empty brain with dbrain's schema at ``path``: the schema is written once per process
    and its file copied (a test brain costs a file copy, not ~140 DDL statements)."""
    if "empty" not in _BUILT:
        template = Path(tempfile.mkdtemp(prefix="dbrain-schema-")) / "empty.db"
        conn = sqlite3.connect(template)
        create_brain_schema(conn)
        conn.close()
        _BUILT["empty"] = (template, {})
    shutil.copyfile(_BUILT["empty"][0], path)


def build_fixture_brain(path: Path) -> dict[str, Any]:
    """The test brain at ``path``; returns the ids and keys tests refer to. Built once per
    process, then copied."""
    if "fixture" not in _BUILT:
        template = Path(tempfile.mkdtemp(prefix="dbrain-fixture-")) / "brain.db"
        _BUILT["fixture"] = (template, _write_fixture_brain(template))
    template, ids = _BUILT["fixture"]
    shutil.copyfile(template, path)
    return dict(ids)


def _write_fixture_brain(path: Path) -> dict[str, Any]:
    empty_brain(path)
    conn = sqlite3.connect(path)
    ids: dict[str, Any] = {}
    with conn:
        ids["note_espresso"] = add_item(
            conn,
            "apple-note:espresso-1",
            "apple_note",
            title="Espresso grinder notes",
            text="Flat burrs versus conical burrs. The grinder matters more than the machine.",
            user_tags="espresso,coffee",
            note_path="notes/espresso-grinder-notes.md",
            published_at="2026-03-01T10:00:00Z",
        )
        ids["x_tokio"] = add_item(
            conn,
            "x:1790000000000000001",
            "x",
            external_id="1790000000000000001",
            title="Tokio's work-stealing scheduler explained",
            text="How the tokio runtime schedules async tasks across worker threads.",
            user_tags="rust, async",
            author_handle="rustacean",
            published_at="2025-11-02T08:00:00Z",
        )
        ids["star_datasette"] = add_item(
            conn,
            "gh-star:simonw/datasette",
            "github_star",
            external_id="simonw/datasette",
            title="simonw/datasette",
            canonical_url="https://github.com/simonw/datasette",
            text="An open source multi-tool for exploring and publishing data with SQLite.",
            user_tags="sqlite,datasette",
            published_at="2024-05-05T00:00:00Z",
        )
        ids["evil"] = add_item(
            conn,
            "manual:evil",
            "manual",
            title="<script>alert('owned')</script> payload notes",
            text="A row whose title tries to inject markup: malicious payload <b>bold</b>.",
        )
        ids["sourdough"] = add_item(
            conn,
            "apple-note:sourdough",
            "apple_note",
            title="Bread log",
            text="Fed it twice today.",
            enrichment_summary="Sourdough starter hydration at 100 percent with rye flour.",
            user_tags="baking",
        )
        ids["src_fts5"] = add_source(
            conn,
            SOURCE_URLS["src_fts5"],
            title="SQLite FTS5 Extension",
            extracted_text="FTS5 is an SQLite virtual table module. The bm25() function ranks "
            "results; the porter tokenizer stems English words.",
            summary_text="Reference for FTS5 full-text search, bm25 ranking and tokenizers.",
            user_tags="sqlite,search",
            extract_status="ok",
        )
        ids["src_espresso"] = add_source(
            conn,
            SOURCE_URLS["src_espresso"],
            title="A home espresso guide",
            extracted_text="Dial in espresso by adjusting the grinder. Burr grinders give even "
            "particles. " + "Pull shots and taste them. " * 40,
            user_tags="espresso",
            extract_status="ok",
            created_at="2026-05-10T09:00:00Z",
        )
        ids["src_plugins"] = add_source(
            conn,
            SOURCE_URLS["src_plugins"],
            title="Plugins for simonw/datasette",
            extracted_text="The simonw/datasette plugin directory: simonw/datasette plugins.",
            extract_status="ok",
        )
        ids["src_pending"] = add_source(
            conn, SOURCE_URLS["src_pending"], fts=False, title="Pending espresso"
        )
    conn.close()
    for name, url in SOURCE_URLS.items():
        ids[name + "_key"] = normalize_url(url).source_key
    return ids


class SharedTemplateCode(jinja2.BytecodeCache):
    """Compiled templates shared by every Datasette a test makes: each instance would compile
    each template again, a fifth of a short test's time. A bucket carries its source's
    checksum, so an edited template is compiled anew."""

    def __init__(self) -> None:
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key in self.code:
            bucket.bytecode_from_string(self.code[bucket.key])

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


TEMPLATE_CODE = SharedTemplateCode()


def make_datasette(
    files: list[str],
    plugin_config: dict | None = None,
    permissions: dict | None = None,
    databases: dict | None = None,
    other_plugins: dict | None = None,
    **kwargs: Any,
) -> Datasette:
    """Datasette with plugin config and permission blocks, on either Datasette line.

    1.0a reads permissions and ``allow`` blocks from ``config=``; 0.65 from ``metadata=``.
    ``other_plugins`` configures other plugins (``{"datasette-llm": {...}}``).
    """
    block: dict[str, Any] = {}
    if plugin_config is not None or other_plugins:
        block["plugins"] = dict(other_plugins or {})
    if plugin_config is not None:
        block["plugins"]["datasette-dbrain-websearch"] = plugin_config
    if databases:
        block["databases"] = databases
    if DATASETTE_1:
        if permissions:
            block["permissions"] = permissions
        datasette = Datasette(files, config=block, **kwargs)
    else:
        datasette = Datasette(files, metadata=block, **kwargs)
    jinja = getattr(datasette, "jinja_env", None) or datasette._jinja_env
    jinja.bytecode_cache = TEMPLATE_CODE
    return datasette


def actor_cookies(datasette: Datasette, actor_id: str) -> dict[str, str]:
    return {"ds_actor": datasette.sign({"a": {"id": actor_id}}, "actor")}


def db_rows(path: Path | str, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    """The rows of one query against a SQLite file (a brain or the plugin's runs database)."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


BRAVE_KEY = "brave-SECRET-4c1f9e2d"
EXA_KEY = "exa-SECRET-77aa10b3"


def web_config(fake: FakeWeb, **external: Any) -> dict[str, Any]:
    block = {
        "enabled": True,
        "default_mode": "never",
        "providers": ["brave"],
        "timeout": 15,
        "cache_ttl": 0,
        "allow": {"id": "root"},
        "brave": {"api_key": {"$env": "TEST_BRAVE_KEY"}, "base_url": fake.brave_base_url},
        "exa": {"api_key": {"$env": "TEST_EXA_KEY"}, "base_url": fake.exa_base_url},
        "searxng": {"base_url": fake.searxng_base_url},
    }
    for key, value in external.items():
        if isinstance(value, dict) and isinstance(block.get(key), dict):
            block[key] = {**block[key], **value}
        else:
            block[key] = value
    # These configs test the web: no semantic lane (its warnings would join every pack's;
    # tests/research/test_semantic.py tests them).
    return {"external_search": block, "semantic": {"model": ""}}


async def web_datasette(brain: tuple[Path, Any], fake: FakeWeb, **external: Any) -> Datasette:
    """A started Datasette over the fixture brain with web search on the fake providers."""
    datasette = make_datasette([str(brain[0])], plugin_config=web_config(fake, **external))
    await datasette.invoke_startup()
    return datasette


async def web_pack(ds: Datasette, question: str, actor: str = "root", **params: str) -> dict:
    """A run of ``question`` that searches the web (and answers), as ``actor``."""
    response = await ds.client.get(
        "/-/research.json",
        params={"q": question, "external": "always", **params},
        cookies=actor_cookies(ds, actor),
    )
    assert response.status_code == 200, response.text
    return response.json()


class ProviderPlugin:
    """A throwaway Datasette plugin that registers one provider through the plugin's hook."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.__name__ = f"{provider.name}_test_plugin"

    @hookimpl
    def register_dbrain_websearch_providers(self, datasette: Any) -> list:
        return [self.provider]


@contextmanager
def registered(provider: Any) -> Iterator[Any]:
    """Register a provider for the duration of a test, as another plugin would."""
    plugin = ProviderPlugin(provider)
    pm.register(plugin, name=plugin.__name__)
    try:
        yield provider
    finally:
        pm.unregister(name=plugin.__name__)


GRANT_PROMOTE = {"dbrain-promote": {"id": "root"}}


async def promoting_ds(brain, fake, **external):
    ds = make_datasette(
        [str(brain[0])], plugin_config=web_config(fake, **external), permissions=GRANT_PROMOTE
    )
    await ds.invoke_startup()
    return ds


async def csrf(ds, cookies):
    """Cookies and headers a JSON POST needs: 0.65 wants the ds_csrftoken double submit."""
    page = await ds.client.get("/-/research", cookies=cookies)
    token = page.cookies.get("ds_csrftoken")
    if not token:
        return cookies, {}, ""
    return {**cookies, "ds_csrftoken": token}, {"x-csrftoken": token}, token


async def web_run(ds, q="lattice qcd", **params):
    root = actor_cookies(ds, "root")
    response = await ds.client.get(
        "/-/research.json", params={"q": q, "external": "always", **params}, cookies=root
    )
    return response.json()


async def post_json(ds, body, actor="root"):
    cookies, headers, _ = await csrf(ds, actor_cookies(ds, actor) if actor else {})
    return await ds.client.post("/-/research/promote", json=body, cookies=cookies, headers=headers)


ARTICLE = b"""<!doctype html><html><head><title>Lattice gauge theory, explained</title>
<meta name="description" content="A gentle introduction."></head><body><nav>Home | About</nav>
<article><h1>Lattice gauge theory, explained</h1>
<p>Lattice QCD puts quarks and gluons on a four-dimensional grid of spacetime points so that
the strong force can be computed numerically on supercomputers.</p>
<p>The continuum limit is reached by shrinking the lattice spacing and extrapolating.</p>
</article><footer>Copyright</footer></body></html>"""


@contextmanager
def serve_article() -> Iterator[str]:
    """The article on a loopback HTTP server, for as long as the block runs; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(ARTICLE)))
            self.end_headers()
            self.wfile.write(ARTICLE)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/lattice-article"
    finally:
        server.shutdown()


async def web_ds(brain, fake, **external) -> Datasette:
    ds = make_datasette([str(brain[0])], plugin_config=web_config(fake, **external))
    await ds.invoke_startup()
    return ds


async def ask(ds, actor="root", **params) -> tuple[int, dict]:
    cookies = actor_cookies(ds, actor) if actor else {}
    response = await ds.client.get("/-/research.json", params=params, cookies=cookies)
    assert BRAVE_KEY not in response.text and EXA_KEY not in response.text
    return response.status_code, response.json()


def provider_requests(fake, provider=None):
    return [r for r in fake.requests if provider is None or r.provider == provider]


def attr(page: str, pattern: str) -> str:
    return html.unescape(re.search(pattern, page).group(1))


INSERT_RUN = (
    f"insert into {runs_db.RUNS_TABLE} values (?, ?, ?, 'json', 'brain', 'q', '', 'never', 0, 0, "
    "'', 'no_evidence', 0, 0, '', 1, '{}')"
)


def typed_brain_row(
    key: str,
    matched: Sequence[str] = (),
    missing: Sequence[str] = (),
    *,
    exact: bool = False,
    score: float = 0.0,
    url: str = "",
    published_at: str = "",
    saved_at: str = "",
) -> BrainRow:
    """A brain row as research builds it, with only what a unit test sets."""
    facts = Facts("item", key, url, "", [], "", published_at, saved_at)
    lanes = [{"name": "exact_lookup"}] if exact else [{"name": "lexical"}]
    return BrainRow(
        source_key=key,
        facts=facts,
        excerpt=Excerpt("", "", "", "", ()),
        row_url="",
        retrieval=Retrieval(score, score, lanes, [], list(matched), list(missing)),
    )


def typed_web_row(
    key: str, matched: Sequence[str] = (), *, score: float = 0.0, url: str = ""
) -> WebRow:
    """A web row as research builds it, with only what a unit test sets."""
    return WebRow(
        source_key=key,
        canonical_url=url,
        provider_url=url,
        title=key,
        domain="",
        excerpt=Excerpt("", "", "", "", ()),
        text="",
        published_at="",
        author="",
        depth="snippet",
        providers=["brave"],
        retrieval=Retrieval(score, score, [], [], list(matched), []),
    )


def add_lattice_rows(path: Path) -> None:
    """Two general lattice rows, one a note of the person's: what led an answer about the
    muon's g-2 anomaly before the sentence that answers (issue 33)."""
    conn = sqlite3.connect(path)
    add_item(
        conn,
        "apple-note:LATTICE",
        "apple-note",
        title="Lattice QCD",
        text="Lattice QCD puts quarks and gluons on a grid of points in space and time. A "
        "finer lattice spacing costs far more computing time.",
    )
    add_source(
        conn,
        "https://physics.example.org/lattice-intro",
        title="Why lattice gauge theory",
        extracted_text="Lattice gauge theory makes the strong force computable on "
        "supercomputers. The lattice spacing is taken to zero at the end of a lattice "
        "calculation.",
        extract_status="ok",
    )
    conn.commit()
    conn.close()
