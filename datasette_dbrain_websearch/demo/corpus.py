"""The fixed set of web pages the fake Brave/Exa/SearXNG server searches.

Deterministic on purpose: tests and the demo assert on what comes back. The pages overlap the
demo brain's topics (so merging and dedupe have work to do), cover topics the brain lacks (lattice
QCD, very recent news, so the web is worth calling), repeat some brain documents under
non-canonical URLs (``duplicates`` names the brain URL), and include hostile provider data that
the plugin must escape or refuse to link.

Dates are relative to ``NOW``, the fake server's fixed clock (2026-11-30T12:00:00Z).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["NOW", "PAGES", "Page"]

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def _text(raw: str) -> str:
    """Paragraphs separated by blank lines; lines inside a paragraph joined with spaces."""
    paragraphs = [
        " ".join(line.strip() for line in block.splitlines()) for block in raw.split("\n\n")
    ]
    return "\n\n".join(p.strip() for p in paragraphs if p.strip())


@dataclass(frozen=True)
class Page:
    """One web page. ``kind`` drives Exa categories and SearXNG categories.

    ``quirks`` reproduces shapes Brave's LLM Context is documented to send:
    ``no_source`` (a grounding item with no ``sources`` entry) and ``empty_snippets``.
    ``table`` becomes a snippet that is a string holding JSON.
    """

    url: str
    title: str | None
    text: str
    kind: str
    published: str | None = None
    author: str | None = None
    language: str = "en"
    image: str | None = None
    table: dict[str, Any] | None = None
    quirks: frozenset[str] = field(default_factory=frozenset)
    duplicates: str | None = None

    @property
    def published_at(self) -> datetime | None:
        return datetime.fromisoformat(self.published) if self.published else None


_NO_SOURCE = frozenset({"no_source"})
_EMPTY = frozenset({"empty_snippets"})

PAGES: tuple[Page, ...] = (
    # --- SQLite full-text search -------------------------------------------------------------
    Page(
        url="https://www.sqlite.org/fts5.html",
        duplicates="https://sqlite.org/fts5.html",
        title="SQLite FTS5 Extension",
        kind="docs",
        text=_text("""
            FTS5 is an SQLite virtual table module that provides full-text search functionality
            to database applications. A full-text index is created with CREATE VIRTUAL TABLE ...
            USING fts5(...) and queried with the MATCH operator.

            The built-in bm25() auxiliary function returns a real value indicating how well the
            current row matches the full-text query. The better the match, the numerically smaller
            the value, so ORDER BY bm25(tbl) returns the best matches first. Column weights can be
            passed as extra arguments.

            FTS5 ships with the unicode61, ascii, porter and trigram tokenizers. External content
            tables let the index store only the full-text index while the text itself lives in an
            ordinary table, and prefix indexes speed up queries such as MATCH 'sql*'.
        """),
    ),
    Page(
        url="https://searchnotes.dev/posts/bm25-explained/",
        duplicates="https://searchnotes.dev/posts/bm25-explained",
        title="BM25 Explained Without the Hand-Waving",
        kind="blog",
        published="2025-08-14T08:00:00Z",
        author="Mira Okafor",
        image="https://searchnotes.dev/img/bm25-curve.png",
        table={
            "table": {
                "headers": ["Parameter", "Typical value", "Effect"],
                "rows": [
                    ["k1", "1.2", "term frequency saturation"],
                    ["b", "0.75", "document length normalisation"],
                ],
            }
        },
        text=_text("""
            BM25 scores a document by summing, for each query term, the inverse document frequency
            of the term multiplied by a saturating function of how often the term occurs in the
            document. Two parameters control the ranking: k1 and b.

            The k1 parameter caps the benefit of repeating a term, and b controls how strongly long
            documents are penalised. SQLite FTS5 uses k1 = 1.2 and b = 0.75 and does not let you
            change them, but bm25() column weights give you most of the control you need.

            If your corpus is a personal knowledge base with short notes, length normalisation
            matters more than you would expect: a two-line note that mentions a term once can beat
            a long article that mentions it five times.
        """),
    ),
    Page(
        url="https://queryplanner.blog/2026/09/fts5-bm25-column-weights-in-practice",
        title="FTS5 bm25 column weights in practice",
        kind="blog",
        published="2026-09-08T10:30:00Z",
        author="Tomasz Wrona",
        text=_text("""
            Passing weights to bm25() is the cheapest relevance win in SQLite full-text search.
            Weighting the title column 10 and the body 1 moved the right answer to the top for most
            of our test queries.

            Weights are positional: bm25(docs, 10.0, 1.0) applies to the columns in the order they
            were declared in the FTS5 table, including UNINDEXED columns, which take a weight but
            never contribute to the score.
        """),
    ),
    Page(
        url="https://queryplanner.blog/2026/02/choosing-an-fts5-tokenizer",
        title="Choosing an FTS5 tokenizer: unicode61, porter or trigram?",
        kind="blog",
        published="2026-02-10T09:00:00Z",
        text=_text("""
            The default unicode61 tokenizer folds case and, with remove_diacritics 2, strips
            accents, which is what most English and European text needs.

            Wrapping it in porter adds stemming, so "running" matches "run", but it also merges
            words you may want to keep apart. The trigram tokenizer indexes every three-character
            sequence and supports substring search and LIKE queries at the cost of a much larger
            index.
        """),
    ),
    Page(
        url="https://stackoverflow.com/questions/78123456/why-does-sqlite-fts5-bm25-return-negative-scores",
        title="Why does SQLite FTS5 bm25() return negative scores?",
        kind="forum",
        published="2025-03-19T14:12:00Z",
        author="quietquery",
        quirks=_NO_SOURCE,
        text=_text("""
            I am ranking results with ORDER BY bm25(notes) and every score is negative, like -4.2
            and -0.7. Is my FTS5 index broken?

            Accepted answer: nothing is broken. FTS5 multiplies the BM25 score by -1 so that an
            ascending ORDER BY puts the best match first. The more negative the value, the better
            the match. The rank column gives the same value when you use ORDER BY rank.
        """),
    ),
    Page(
        url="https://sqlite.org/releaselog/3_52_0.html",
        title="SQLite Release 3.52.0 On 2026-11-21",
        kind="news",
        published="2026-11-21T00:00:00Z",
        text=_text("""
            SQLite version 3.52.0 is a regular maintenance release. It includes query planner
            improvements for queries that combine FTS5 MATCH with ordinary WHERE constraints.

            The release also adds a new JSON helper function, speeds up VACUUM INTO for large
            databases and fixes a rare problem with the trigram tokenizer and very long tokens.
        """),
    ),
    Page(
        url="https://github.com/wangfenjin/simple",
        title="wangfenjin/simple: SQLite FTS5 tokenizer for Chinese and pinyin",
        kind="github",
        quirks=_EMPTY,
        text=_text("""
            simple is an SQLite3 FTS5 extension that supports Chinese and pinyin full-text search.
            It provides a tokenizer, a simple_query() helper that builds MATCH expressions, and
            highlight functions.
        """),
    ),
    Page(
        url="https://arxiv.org/abs/2608.11111",
        title="Is BM25 Still Enough? Lexical Retrieval over Small Personal Knowledge Bases",
        kind="paper",
        published="2026-08-19T17:00:00Z",
        author="Layla Haddad, Peng Ren",
        text=_text("""
            We compare BM25 with learned sparse and dense retrieval on twelve personal knowledge
            bases of 2,000 to 40,000 notes. On collections this small, a tuned BM25 with field
            weights is within two points of nDCG@10 of the best dense retriever.

            Hybrid retrieval with reciprocal rank fusion gives the best results overall and is
            cheap to run next to an SQLite FTS5 index.
        """),
    ),
    Page(
        url="https://docs.python.org/3/library/sqlite3.html",
        title="sqlite3 — DB-API 2.0 interface for SQLite databases",
        kind="docs",
        text=_text("""
            SQLite is a C library that provides a lightweight disk-based database that does not
            require a separate server process. The sqlite3 module provides an SQL interface
            compliant with the DB-API 2.0 specification.

            Whether FTS5 is available depends on how the underlying SQLite library was compiled;
            most modern Python builds include it.
        """),
    ),
    # --- Datasette plugins -------------------------------------------------------------------
    Page(
        url="http://docs.datasette.io/en/stable/plugin_hooks.html?utm_source=brave",
        duplicates="https://docs.datasette.io/en/stable/plugin_hooks.html",
        title="Plugin hooks - Datasette documentation",
        kind="docs",
        text=_text("""
            Datasette plugins use plugin hooks to customize Datasette's behavior. These hooks are
            powered by the pluggy plugin system. Each plugin can implement one or more hooks using
            the @hookimpl decorator.

            Hooks include prepare_connection, render_cell, extra_template_vars, register_routes,
            register_commands, permission_allowed and startup. A hook can return an awaitable,
            which Datasette will await for you.
        """),
    ),
    Page(
        url="https://datasette.io/news/2026-11-29-datasette-1-0",
        title="Datasette 1.0 is out",
        kind="news",
        published="2026-11-29T18:00:00Z",
        author="Datasette team",
        image="https://datasette.io/static/datasette-1-0-card.png",
        text=_text("""
            Datasette 1.0 is now available. This release stabilises the JSON API, the plugin hooks
            and the permissions system, so plugins written against 1.0 will keep working across
            the 1.x series.

            Plugin authors should check the upgrade guide: a few hooks deprecated during the alpha
            series have been removed, and the new actions-based permission checks replace
            permission_allowed for most plugins.
        """),
    ),
    Page(
        url="https://pluginweekly.dev/issues/70",
        title="Plugin Weekly #70: register_routes tricks and a new enrichments wave",
        kind="news",
        published="2026-11-24T07:00:00Z",
        text=_text("""
            This week: three new Datasette plugins built on register_routes, a round-up of
            enrichments plugins that call external APIs, and a look at how plugins should store
            secrets with the plugin configuration $env syntax.

            Also in this issue: testing plugins with datasette.client and pytest-asyncio.
        """),
    ),
    Page(
        url="https://datastack.blog/2026/11/render-cell-hook-patterns",
        title="Patterns for the render_cell plugin hook",
        kind="blog",
        published="2026-11-05T12:00:00Z",
        author="Priya Natarajan",
        text=_text("""
            render_cell lets a Datasette plugin replace how a single value is displayed. Return
            None to let other plugins or the default rendering handle the cell, or return
            markupsafe.Markup for HTML.

            Always escape values you interpolate into that HTML: render_cell output is not escaped
            again, so a plugin that builds HTML by string formatting is an XSS bug waiting for a
            hostile row.
        """),
    ),
    Page(
        url="https://github.com/datasette/datasette-enrichments",
        title=(
            "datasette/datasette-enrichments: Tools for running enrichments against data stored"
            " in Datasette"
        ),
        kind="github",
        text=_text("""
            datasette-enrichments is a Datasette plugin that provides a mechanism for running
            enrichments, operations that add new data to rows in a table, such as geocoding
            addresses or calling a language model.

            Enrichments are themselves plugins that implement the register_enrichments hook.
        """),
    ),
    Page(
        url="https://docs.datasette.io/en/latest/testing_plugins.html",
        title="Testing plugins - Datasette documentation",
        kind="docs",
        text=_text("""
            The easiest way to test a Datasette plugin is with pytest and datasette.client, which
            makes requests to Datasette in-process without a network connection.

            To test a plugin that makes outbound HTTP calls, point it at a local fake server or
            mock the HTTP client, so the tests never depend on the real internet.
        """),
    ),
    # --- Rust async and tokio ----------------------------------------------------------------
    Page(
        url="https://github.com/tokio-rs/tokio/tree/master/tokio",
        duplicates="https://github.com/tokio-rs/tokio",
        title="tokio/tokio at master · tokio-rs/tokio",
        kind="github",
        text=_text("""
            Tokio is a runtime for writing reliable, asynchronous, and slim applications with the
            Rust programming language. It provides a multithreaded, work-stealing task scheduler,
            a reactor backed by the operating system's event queue, and asynchronous TCP and UDP
            sockets.
        """),
    ),
    Page(
        url="https://docs.rs/tokio/latest/tokio/runtime/index.html",
        duplicates="https://docs.rs/tokio/latest/tokio/runtime/index.html",
        title="tokio::runtime - Rust",
        kind="docs",
        text=_text("""
            The Tokio runtime. Unlike other Rust programs, asynchronous applications require
            runtime support: an I/O event loop, a scheduler for tasks, and a timer.

            Tokio offers two runtime flavors: the multi-thread runtime, which uses a work-stealing
            scheduler across a pool of worker threads, and the current-thread runtime, which runs
            all tasks on the thread that calls block_on. Blocking work should go to
            spawn_blocking so it does not stall the async workers.
        """),
    ),
    Page(
        url="https://ferrous-notes.dev/posts/cancellation-safety-in-select?utm_source=rss&utm_medium=feed",
        duplicates="https://ferrous-notes.dev/posts/cancellation-safety-in-select",
        title="Cancellation safety in tokio::select!",
        kind="blog",
        published="2025-06-02T09:00:00Z",
        author="Jonas Berg",
        text=_text("""
            When tokio::select! completes one branch it drops the futures of all other branches.
            If one of those futures had already done part of its work, that work is lost. A future
            is cancellation safe when dropping it at an await point loses nothing.

            Reading from an mpsc channel with recv() is cancellation safe; read_exact on a socket
            is not. Keep non-cancellation-safe futures outside the select loop and pin them.
        """),
    ),
    Page(
        url="https://tokio.rs/blog/2026-11-tokio-1-50",
        title="Announcing Tokio 1.50",
        kind="news",
        published="2026-11-27T15:00:00Z",
        author="Tokio team",
        image="https://tokio.rs/img/blog/tokio-1-50.png",
        text=_text("""
            Tokio 1.50, the latest release, is out. The headline change is a new cooperative
            scheduling budget that adapts to how long tasks actually run, which cuts tail latency
            for services that mix CPU-heavy and I/O-heavy async tasks.

            The release also stabilises the task dump API for debugging stuck runtimes and
            improves JoinSet performance when thousands of tasks finish at once.
        """),
    ),
    Page(
        url="https://asyncrust.dev/posts/joinset-structured-concurrency",
        title="Structured concurrency with JoinSet and TaskTracker",
        kind="blog",
        published="2026-04-21T08:30:00Z",
        author="Ana Sousa",
        text=_text("""
            A JoinSet owns the tasks it spawns: when the JoinSet is dropped, every task in it is
            aborted. That makes it the closest thing async Rust has to structured concurrency.

            For graceful shutdown, pair a TaskTracker with a CancellationToken from tokio-util, so
            you can tell tasks to stop and then wait until they have.
        """),
    ),
    Page(
        url="https://users.rust-lang.org/t/spawn-blocking-vs-block-in-place/118204",
        title="spawn_blocking vs block_in_place inside a multi-threaded runtime",
        kind="forum",
        published="2025-10-07T19:45:00Z",
        author="rustacean_42",
        quirks=_NO_SOURCE,
        text=_text("""
            Should I use tokio::task::spawn_blocking or block_in_place to call a synchronous
            database driver from async code?

            Reply: prefer spawn_blocking. block_in_place only works on the multi-thread runtime,
            and it turns the current worker into a blocking thread, which can surprise you inside
            select! or when the runtime is small.
        """),
    ),
    Page(
        url="https://arxiv.org/abs/2610.04321",
        title="Work Stealing Revisited: An Empirical Study of Async Rust Schedulers",
        kind="paper",
        published="2026-10-09T16:00:00Z",
        author="Kenji Ito, Marie Laurent",
        text=_text("""
            We measure the tokio, smol and glommio schedulers on eleven network services. Tokio's
            work-stealing scheduler gives the best tail latency under uneven load, while
            thread-per-core designs win on throughput when load is evenly spread.

            The LIFO slot optimisation accounts for most of tokio's advantage on message-passing
            workloads.
        """),
    ),
    Page(
        url="https://blog.rust-lang.org/inside-rust/2026/11/12/async-drop-update.html",
        title="Async drop: where we are",
        kind="news",
        published="2026-11-12T16:00:00Z",
        author="Async Working Group",
        text=_text("""
            Async drop lets a type run asynchronous cleanup when it goes out of scope, for example
            flushing a buffered writer or closing a database connection politely.

            The design is now implemented on nightly Rust. The async working group is collecting
            feedback from runtime authors, including tokio, before proposing stabilisation.
        """),
    ),
    Page(
        url="https://tokio.rs/tokio/topics/shutdown",
        title="Graceful Shutdown | Tokio - An asynchronous Rust runtime",
        kind="docs",
        text=_text("""
            Graceful shutdown has three parts: figuring out when to shut down, telling every part
            of the program to shut down, and waiting for the other parts of the program to shut
            down.

            Use tokio::signal::ctrl_c to detect the signal, a CancellationToken to broadcast it,
            and a TaskTracker to wait for tasks to finish.
        """),
    ),
    # --- Home espresso and grinders ----------------------------------------------------------
    Page(
        url="https://homebarista-notes.com/guides/dialing-in-espresso?fbclid=IwAR2fakeClickId",
        duplicates="https://homebarista-notes.com/guides/dialing-in-espresso",
        title="Dialing in espresso: a practical routine",
        kind="blog",
        published="2025-01-20T07:00:00Z",
        author="Sam Keller",
        text=_text("""
            Start with a fixed dose, 18 grams for a double basket, and a 1:2 brew ratio, 36 grams
            of espresso out. Change only the grind size until the shot runs in 25 to 32 seconds.

            Then taste. Sour and thin means grind finer or raise the ratio; bitter and harsh means
            grind coarser. Keep notes: dialing in a new bag of coffee usually takes three to five
            shots.
        """),
    ),
    Page(
        url="https://grindlab.coffee/blog/flat-vs-conical-2026-blind-test",
        title="Flat vs conical burrs: a 2026 blind tasting",
        kind="blog",
        published="2026-10-14T11:00:00Z",
        author="Grindlab",
        image="https://grindlab.coffee/img/burr-sets.jpg",
        text=_text("""
            We pulled 240 espresso shots from six grinders, three with flat burrs and three with
            conical burrs, and served them blind to twelve tasters.

            Flat burrs scored higher for clarity on light roasts; conical burrs scored higher for
            body on medium-dark roasts. Grinder retention and alignment mattered more than burr
            geometry for shot-to-shot consistency.
        """),
    ),
    Page(
        url="https://espressoscience.org/puck-prep-wdt",
        title="Puck prep and WDT: what the data says",
        kind="blog",
        published="2026-06-30T09:00:00Z",
        text=_text("""
            The Weiss distribution technique, stirring the grounds in the basket with fine
            needles, reduces channeling in espresso. In our refractometer measurements WDT raised
            average extraction yield by 1.1 percentage points and cut shot-to-shot variation by
            a third.

            Tamping pressure made almost no difference once the bed was level.
        """),
    ),
    Page(
        url="https://www.reddit.com/r/espresso/comments/1p3xq7z/single_dose_grinder_under_500/",
        title="Single dose grinder under $500? : r/espresso",
        kind="forum",
        published="2026-11-15T21:30:00Z",
        author="u/crema_curious",
        quirks=_NO_SOURCE,
        text=_text("""
            Looking for a single dose espresso grinder under $500 with low retention. Mostly
            medium roasts, one or two drinks a day.

            Top comment: at that price the flat burr single dosers are great for light roasts, but
            check burr alignment out of the box and budget for an RDT spray bottle to fight
            static.
        """),
    ),
    Page(
        url="https://coffeewire.news/2026/11/grinder-prices-tariffs",
        title="Espresso grinder prices climb as new tariffs land",
        kind="news",
        published="2026-11-20T13:00:00Z",
        author="Dana Whitfield",
        text=_text("""
            Retail prices for imported espresso grinders rose between 8 and 15 percent this month
            as new tariffs took effect, according to three large home coffee retailers.

            Some manufacturers say they will absorb part of the increase until the end of the
            year. Used grinder listings have jumped as buyers look for alternatives.
        """),
    ),
    Page(
        url="https://espressoscience.org/files/extraction-yield-chart.pdf",
        title=None,
        kind="pdf",
        table={
            "table": {
                "headers": ["TDS %", "Extraction yield %", "Verdict"],
                "rows": [["8.0", "18", "under-extracted"], ["9.5", "21", "balanced"]],
            }
        },
        text=_text("""
            Espresso extraction yield chart. Extraction yield is the mass of dissolved coffee
            solids in the cup divided by the dose, computed from refractometer TDS and beverage
            weight.

            Most balanced espresso shots fall between 18 and 22 percent extraction yield.
        """),
    ),
    Page(
        url="https://zürich-kaffee.ch/espresso/mühlen-vergleich",
        title="Espressomühlen im Vergleich: Kegel- oder Scheibenmahlwerk?",
        kind="blog",
        language="de",
        published="2026-03-03T08:00:00Z",
        author="Lukas Brändli",
        text=_text("""
            Welche Espressomühle passt zu Ihnen? Wir haben Mühlen mit Kegelmahlwerk (conical
            burrs) und Scheibenmahlwerk (flat burrs) für Espresso getestet.

            Für helle Röstungen empfehlen wir ein Scheibenmahlwerk; für Milchgetränke mit
            dunkleren Röstungen ist ein Kegelmahlwerk eine gute Wahl. Single dosing mit wenig
            Totraum ist bei beiden wichtig.
        """),
    ),
    # --- Sourdough -----------------------------------------------------------------------------
    Page(
        url="https://crumbandcrust.net/hydration-explained#bakers-math",
        duplicates="https://crumbandcrust.net/hydration-explained",
        title="Hydration explained",
        kind="blog",
        published="2024-09-10T10:00:00Z",
        author="Nora Lind",
        text=_text("""
            Hydration is the weight of water divided by the weight of flour, written as a baker's
            percentage. A sourdough loaf with 500 g flour and 375 g water is at 75 percent
            hydration.

            Do not forget the starter: a 100 percent hydration starter adds equal weights of flour
            and water, which nudges the dough's true hydration up.
        """),
    ),
    Page(
        url="https://breadlab-notes.org/2026/11/winter-starter-care",
        title="Keeping a sourdough starter lively in winter",
        kind="blog",
        published="2026-11-18T08:00:00Z",
        author="Breadlab",
        text=_text("""
            A cold kitchen slows a sourdough starter down: at 18 °C it can take twice as long to
            peak as at 24 °C. Use warm water, around 30 °C, when you feed it.

            A proofing box or an oven with only the light on keeps the starter in its comfort
            zone. Feeding at a higher ratio, such as 1:5:5, also stops it from turning too sour
            while it rises slowly.
        """),
    ),
    Page(
        url="https://levainlab.org/tools/starter-feeding-ratios",
        title="Starter feeding ratios (1:1:1 to 1:5:5) with timing table",
        kind="docs",
        published="2025-12-01T12:00:00Z",
        table={
            "table": {
                "headers": ["Ratio (starter:flour:water)", "Peak at 24 °C"],
                "rows": [["1:1:1", "4-6 h"], ["1:2:2", "6-8 h"], ["1:5:5", "10-12 h"]],
            }
        },
        text=_text("""
            The feeding ratio of a sourdough starter is the weight of old starter to fresh flour
            to water. Higher ratios dilute the acidity and push the peak later, which suits
            overnight feeds.

            Match the ratio to your schedule rather than the other way round: a 1:1:1 feed peaks
            in the afternoon, a 1:5:5 feed at breakfast the next day.
        """),
    ),
    Page(
        url="https://flourandfire.kitchen/sourdough-discard-crackers",
        title="Sourdough discard crackers",
        kind="blog",
        published="2025-05-05T15:00:00Z",
        author="Maya Cole",
        image="https://flourandfire.kitchen/images/discard-crackers.jpg",
        text=_text("""
            Sourdough discard crackers are the best use for the starter you pour off before a
            feed. Mix 200 g discard with 100 g flour, 40 g olive oil and salt.

            Roll thin, score into squares and bake at 175 °C for 20 to 25 minutes until golden.
        """),
    ),
    Page(
        url="https://www.reddit.com/r/Sourdough/comments/1oz8k2m/starter_smells_like_nail_polish/",
        title="Starter smells like nail polish remover? : r/Sourdough",
        kind="forum",
        published="2026-11-02T06:15:00Z",
        author="u/levain_learner",
        quirks=_NO_SOURCE,
        text=_text("""
            My sourdough starter smells like acetone every morning. Is it dead?

            Top comment: it is hungry, not dead. The acetone smell means the yeast and bacteria
            ran out of food. Feed it more often or at a higher ratio and the smell goes away in a
            couple of days.
        """),
    ),
    Page(
        url="https://breadlab-notes.org/2026/11/rye-flour-shortage",
        title="Rye flour shortage hits small bakeries",
        kind="news",
        published="2026-11-27T09:00:00Z",
        text=_text("""
            A poor rye harvest in northern Europe has left small bakeries short of whole rye
            flour. Several mills have rationed deliveries until the new year.

            Home bakers who keep a rye sourdough starter can switch it to whole wheat flour for a
            few weeks without harming it.
        """),
    ),
    # --- Kubernetes networking ---------------------------------------------------------------
    Page(
        url="https://kubernetes.io/docs/concepts/services-networking/network-policies/",
        duplicates="https://kubernetes.io/docs/concepts/services-networking/network-policies",
        title="Network Policies | Kubernetes",
        kind="docs",
        text=_text("""
            If you want to control traffic flow at the IP address or port level for TCP, UDP and
            SCTP protocols, you might consider using Kubernetes NetworkPolicies for particular
            applications in your cluster.

            Network policies are implemented by the network plugin. To use them you must be using
            a networking solution which supports NetworkPolicy, such as Cilium or Calico. A pod is
            isolated for ingress once any policy selects it.
        """),
    ),
    Page(
        url="https://kubernetes.io/blog/2026/11/25/kubernetes-v1-38-sneak-peek-networking/",
        title="Kubernetes v1.38 sneak peek: networking changes",
        kind="news",
        published="2026-11-25T00:00:00Z",
        author="Kubernetes Release Team",
        image="https://kubernetes.io/images/blog/v1-38-sneak-peek.png",
        text=_text("""
            Kubernetes v1.38 is due next month. On the networking side, the nftables mode of
            kube-proxy becomes the default on new clusters, and the iptables mode starts its
            deprecation period.

            Multi-network support for pods moves to beta, and Service traffic distribution gains
            a prefer-same-node option for latency-sensitive workloads.
        """),
    ),
    Page(
        url="https://docs.cilium.io/en/stable/network/concepts/ipam/",
        title="IP Address Management (IPAM) — Cilium documentation",
        kind="docs",
        text=_text("""
            IP Address Management (IPAM) is responsible for the allocation and management of IP
            addresses used by network endpoints (containers and others) managed by Cilium.

            Cilium supports cluster-scope, Kubernetes host-scope, multi-pool and cloud-provider
            IPAM modes. Changing the IPAM mode of a live Kubernetes cluster is not supported.
        """),
    ),
    Page(
        url="https://packetpath.dev/2026/11/kube-proxy-nftables-mode",
        title="kube-proxy's nftables mode under load",
        kind="blog",
        published="2026-11-12T10:00:00Z",
        author="Iris Mendes",
        text=_text("""
            We moved a 2,000-node Kubernetes cluster from the iptables kube-proxy mode to nftables.
            Service rule sync time dropped from 40 seconds to under 2, and first-packet latency
            for Services stopped growing with the number of Services.

            Watch out for tools that parse iptables-save output; they see nothing once kube-proxy
            uses nftables.
        """),
    ),
    Page(
        url="https://clusterops.blog/coredns-ndots-and-dns-latency",
        title="CoreDNS, ndots:5 and the DNS latency you did not know you had",
        kind="blog",
        published="2025-11-18T09:00:00Z",
        text=_text("""
            Kubernetes pods default to ndots:5, so a lookup for api.example.com first tries the
            cluster search domains. That can mean four wasted queries to CoreDNS per external name.

            Use fully qualified names with a trailing dot, or lower ndots in the pod dnsConfig, and
            consider NodeLocal DNSCache for busy clusters.
        """),
    ),
    Page(
        url="https://github.com/kubernetes-sigs/gateway-api",
        title=(
            "kubernetes-sigs/gateway-api: Repository for the next iteration of composite service"
            " (e.g. Ingress) and load balancing APIs"
        ),
        kind="github",
        quirks=_EMPTY,
        text=_text("""
            Gateway API is an official Kubernetes project focused on L4 and L7 routing in
            Kubernetes. It represents the next generation of Kubernetes Ingress, load balancing and
            service mesh APIs.
        """),
    ),
    Page(
        url="https://www.cncf.io/blog/2026/11/19/ebpf-networking-survey-2026/",
        title="CNCF survey: eBPF dataplanes now run in most production clusters",
        kind="news",
        published="2026-11-19T14:00:00Z",
        author="CNCF",
        text=_text("""
            For the first time, a majority of surveyed organisations run an eBPF-based Kubernetes
            networking dataplane, such as Cilium, in production.

            Respondents cited NetworkPolicy performance, observability with flow logs and the
            removal of kube-proxy as the main reasons to switch.
        """),
    ),
    # --- Cold-climate heat pumps -------------------------------------------------------------
    Page(
        url="https://www.energy.gov/energysaver/heat-pump-systems",
        duplicates="https://energy.gov/energysaver/heat-pump-systems",
        title="Heat Pump Systems | Department of Energy",
        kind="docs",
        text=_text("""
            For climates with moderate heating and cooling needs, heat pumps offer an
            energy-efficient alternative to furnaces and air conditioners. Like your refrigerator,
            heat pumps use electricity to move heat from a cool space to a warm space.

            Cold-climate air-source heat pumps can now provide efficient heating at outdoor
            temperatures well below freezing, and ductless mini-split models suit homes without
            ductwork.
        """),
    ),
    Page(
        url="https://coldclimatehp.org/2026/11/field-data-minus-30",
        title="Field data: cold-climate heat pumps at \u221230 °C",
        kind="news",
        published="2026-11-22T16:00:00Z",
        author="Cold Climate HP Project",
        text=_text("""
            During last week's cold snap, 41 monitored cold-climate heat pumps kept homes warm at
            outdoor temperatures down to -30 °C. Average COP at -25 °C was 1.7, still well ahead
            of electric resistance backup heat.

            Two units iced up after repeated defrost cycles in freezing fog; both recovered once
            their outdoor units were raised off the ground.
        """),
    ),
    Page(
        url="https://homeenergynotes.ca/blog/balance-point-explained",
        title="Balance point and backup heat, explained",
        kind="blog",
        published="2025-02-12T08:00:00Z",
        author="Claire Dubois",
        text=_text("""
            The balance point is the outdoor temperature below which a heat pump can no longer
            cover the heat loss of your home on its own. Below it, backup heat makes up the
            difference.

            A room-by-room heat loss calculation, not the old furnace size, is the right starting
            point for sizing a cold-climate heat pump.
        """),
    ),
    Page(
        url="https://retrofitweekly.com/2026/11/heat-pump-sales-record",
        title="Heat pumps outsell furnaces for a third straight year",
        kind="news",
        published="2026-11-28T10:00:00Z",
        image="https://retrofitweekly.com/media/heat-pump-sales-2026.png",
        text=_text("""
            Heat pump shipments in North America outpaced gas furnaces again this year, with
            cold-climate models making up a growing share of sales in Canada and the northern US.

            Installers report that rebate programmes and rising gas prices drove most retrofit
            decisions.
        """),
    ),
    Page(
        url="https://ashp-data.org/cold-climate-product-list",
        title="Cold-climate air-source heat pump product list",
        kind="docs",
        published="2026-10-01T00:00:00Z",
        table={
            "table": {
                "headers": ["Model class", "COP at -15 °C", "Capacity retained at -15 °C"],
                "rows": [["Ducted", "2.1", "78%"], ["Ductless", "2.4", "85%"]],
            }
        },
        text=_text("""
            This list includes air-source heat pumps that meet the cold-climate specification: a
            COP of at least 1.75 at -15 °C and at least 70 percent of rated capacity at that
            temperature.

            Filter by ducted or ductless configuration and by minimum operating temperature.
        """),
    ),
    Page(
        url="https://arxiv.org/abs/2607.09876",
        title="Seasonal performance of cold-climate air-source heat pumps in 120 Canadian homes",
        kind="paper",
        published="2026-07-15T17:00:00Z",
        author="Marc Tremblay, Aisha Noor",
        text=_text("""
            We report two heating seasons of metered data from 120 homes with cold-climate
            air-source heat pumps. The median seasonal COP was 2.6, and backup heat supplied 9
            percent of annual heating energy.

            Oversized units cycled more and performed worse in shoulder seasons.
        """),
    ),
    Page(
        url="https://www.reddit.com/r/heatpumps/comments/1q0abcd/defrost_cycles_at_minus_20/",
        title="Defrost cycles every 40 minutes at -20, normal? : r/heatpumps",
        kind="forum",
        published="2026-11-29T20:00:00Z",
        author="u/northern_retrofit",
        quirks=_NO_SOURCE,
        text=_text("""
            My cold-climate heat pump runs a defrost cycle every 40 minutes when it is -20 °C and
            humid outside. Is that normal?

            Top comment: yes, in humid cold air the outdoor coil frosts fast. Make sure the unit is
            raised and the drain path is clear so meltwater does not refreeze.
        """),
    ),
    # --- Lattice QCD (the demo brain has nothing on this) ------------------------------------
    Page(
        url="https://arxiv.org/abs/2611.01234",
        title=(
            "Lattice QCD calculation of the hadronic vacuum polarization contribution to the muon"
            " g-2 at physical pion mass"
        ),
        kind="paper",
        published="2026-11-03T17:00:00Z",
        author="Rukayat Adeyemi, Jan Fischer, Hiro Tanaka",
        text=_text("""
            We present a lattice QCD calculation of the leading-order hadronic vacuum polarization
            contribution to the anomalous magnetic moment of the muon, using 2+1+1 flavours of
            staggered quarks at physical pion mass and six lattice spacings.

            Our result agrees with the data-driven estimate based on recent e+e- measurements and
            reduces the lattice uncertainty to 0.4 percent.
        """),
    ),
    Page(
        url="https://en.wikipedia.org/wiki/Lattice_QCD",
        title="Lattice QCD - Wikipedia",
        kind="wiki",
        text=_text("""
            Lattice QCD is a well-established non-perturbative approach to solving the quantum
            chromodynamics (QCD) theory of quarks and gluons. It is a lattice gauge theory
            formulated on a grid or lattice of points in space and time.

            Analytic or perturbative solutions in low-energy QCD are hard or impossible to obtain
            due to the highly nonlinear nature of the strong force. Lattice QCD calculations use
            Monte Carlo methods on supercomputers, and results are extrapolated to zero lattice
            spacing, the continuum limit.
        """),
    ),
    Page(
        url="https://quarkmatter.blog/what-is-lattice-qcd",
        title="What is lattice QCD, and why does it need supercomputers?",
        kind="blog",
        published="2025-09-14T12:00:00Z",
        author="Elena Marsh",
        text=_text("""
            Quantum chromodynamics describes how quarks and gluons bind into protons and neutrons.
            At low energies the strong force is too strong for perturbation theory, so physicists
            put spacetime on a four-dimensional lattice and compute numerically.

            The cost comes from the quarks: every gauge configuration needs many solves of a huge
            sparse linear system, which is why lattice QCD is among the largest users of
            supercomputer time.
        """),
    ),
    Page(
        url="https://latticeqcd.org/tutorials/wilson-vs-staggered-fermions",
        title="Wilson, staggered and domain-wall fermions: a practical comparison",
        kind="docs",
        published="2024-05-02T00:00:00Z",
        text=_text("""
            Putting fermions on a lattice runs into the doubling problem. Wilson fermions remove
            the doublers by adding a term that breaks chiral symmetry; staggered fermions spread
            spinor components across lattice sites and keep a remnant of it.

            Domain-wall and overlap fermions preserve chiral symmetry almost exactly, at five to
            twenty times the computational cost.
        """),
    ),
    Page(
        url="https://arxiv.org/abs/2609.05678",
        title="Continuum limit of the QCD equation of state from 2+1+1 flavour lattice simulations",
        kind="paper",
        published="2026-09-22T17:00:00Z",
        author="S. Borsanyi-Kovacs, T. Weber",
        text=_text("""
            We determine the QCD equation of state at zero baryon density in the temperature range
            120 to 600 MeV from lattice simulations with four flavours of dynamical quarks.

            The continuum extrapolation uses five lattice spacings; the pseudo-critical
            temperature of the chiral crossover is 156.5 MeV.
        """),
    ),
    Page(
        url="https://physicsweekly.news/2026/11/exascale-lattice-qcd-run",
        title="Exascale run pins down proton mass decomposition with lattice QCD",
        kind="news",
        published="2026-11-26T11:00:00Z",
        author="Physics Weekly",
        image="https://physicsweekly.news/img/lattice-qcd-exascale.jpg",
        text=_text("""
            An international collaboration used two exascale supercomputers for a record lattice
            QCD calculation of how the proton's mass splits between quark masses, quark and gluon
            energy, and the trace anomaly.

            The latest results, announced this week, put the gluon contribution at roughly a third
            of the total, with uncertainties half the size of previous calculations.
        """),
    ),
    Page(
        url="https://github.com/usqcd-software/chroma",
        title="usqcd-software/chroma: The Chroma Lattice QCD software system",
        kind="github",
        text=_text("""
            Chroma is a software system for lattice QCD calculations. It builds on QDP++ and
            supports Wilson, clover, staggered and domain-wall fermion actions, with GPU solvers
            through QUDA.
        """),
    ),
    Page(
        url="https://physics.stackexchange.com/questions/812345/why-does-lattice-qcd-use-euclidean-time",
        title="Why does lattice QCD use Euclidean time?",
        kind="forum",
        published="2024-12-01T10:00:00Z",
        author="gluon_field",
        text=_text("""
            Why do lattice QCD simulations work in Euclidean rather than Minkowski spacetime?

            Answer: after a Wick rotation the path integral weight becomes a real, positive
            exponential, so it can be sampled with Monte Carlo importance sampling. In Minkowski
            time the weight oscillates and the sign problem makes sampling hopeless.
        """),
    ),
    # --- Other recent news -------------------------------------------------------------------
    Page(
        url="https://news.ycombinator.com/item?id=46012345",
        title="Show HN: A personal knowledge base you can query with SQLite FTS5",
        kind="news",
        published="2026-11-30T08:00:00Z",
        author="dbrain_fan",
        quirks=_NO_SOURCE,
        text=_text("""
            Show HN: I keep every article, video and note I save in one SQLite database and search
            it with FTS5 and bm25. A Datasette plugin gives me a research page that also asks a web
            search API when my own notes are thin.

            Comments discuss URL normalisation, deduplicating web results against saved sources,
            and keeping API keys out of traces.
        """),
    ),
    Page(
        url="https://github.com/asg017/sqlite-vec/releases/tag/v0.3.0",
        title="Release v0.3.0 · asg017/sqlite-vec",
        kind="news",
        published="2026-11-10T18:00:00Z",
        author="asg017",
        text=_text("""
            sqlite-vec v0.3.0 adds metadata filtering in vec0 virtual tables and faster KNN queries
            for binary vectors, and documents hybrid search with FTS5 using reciprocal rank fusion.
        """),
    ),
    # --- Hostile provider data: the plugin must escape or refuse it --------------------------
    Page(
        url="https://evil-snippets.example/fts5-tricks",
        title="<script>alert(1)</script> FTS5 ranking tricks",
        kind="blog",
        published="2026-06-01T00:00:00Z",
        text=_text("""
            Five SQLite FTS5 ranking tricks: weight the title column in bm25(), add a prefix index,
            use the trigram tokenizer for substrings, rank with ORDER BY rank, and keep snippets
            short.
        """),
    ),
    Page(
        url="https://xss-lab.example/datasette-plugin-hooks",
        title="Datasette plugin hooks cheat sheet",
        kind="blog",
        published="2026-05-01T00:00:00Z",
        text=_text("""
            Datasette plugin hooks at a glance <img src=x onerror=alert(1)> with one example per
            hook: render_cell, register_routes and extra_template_vars.
        """),
    ),
    Page(
        url="javascript:alert(document.cookie)//datasette-plugins",
        title="Datasette plugins directory (mirror)",
        kind="blog",
        text=_text("""
            A mirror of the Datasette plugins directory: every Datasette plugin with its hooks,
            install command and latest release.
        """),
    ),
    Page(
        url="https://clusterops.blog/2026/08/complete-guide-to-kubernetes-networking",
        title=(
            "The Complete, Exhaustive, Definitive and Frankly Far Too Long Guide to Kubernetes"
            " Networking: Services, kube-proxy, iptables, IPVS, nftables, eBPF, Cilium, Calico,"
            " CoreDNS, NetworkPolicy, Gateway API, Ingress, MTU, Dual-Stack, Multus and"
            " Everything Else You Will Ever Need to Know Before Your Next Production Incident"
            " (2026 Edition, Updated Weekly, Now With Even More Diagrams)"
        ),
        kind="blog",
        published="2026-08-04T09:00:00Z",
        text=_text("""
            Kubernetes networking rests on three rules: every pod gets its own IP address, pods can
            reach each other without NAT, and Services give a stable virtual IP in front of a set
            of pods.

            Everything else, from kube-proxy modes to network policies and the Gateway API, is
            machinery for implementing or restricting those three rules.
        """),
    ),
    # --- Deep research's second hop: a person the demo brain names but says nothing about ----
    Page(
        url="https://crumbandcrust.news/profiles/ingrid-halvorsen",
        title="Ingrid Halvorsen",
        kind="article",
        published="2026-09-14T08:00:00Z",
        text=_text("""
            Ingrid Halvorsen lives in Bergen, Norway, the city where she opened Halvorsen
            Bakehouse in 2019. Every dough there ferments for at least eighteen hours.

            Before Bergen she spent six years at bakeries in Copenhagen and Lyon.
        """),
    ),
)
