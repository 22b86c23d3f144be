"""Benchmark: known-item recall of /-/research.json beside a dbrain-style order.

Builds a synthetic brain with bench_research's builder (``datasette dbrain-demo --size``), then
gives every linked page the words of the items that link to it (the first item's title as the
page's title, each item's text ahead of the page's own text), as a bookmark and its page share
words in a real brain. For ``--items`` saved items that link to a page it asks:

- three of the item's own words;
- the same three plus one word of the brain the item lacks;

and reports recall@10, the share of questions whose item is among the first ten rows, of:

- plugin:        GET /-/research.json?q=... (a row is the item when its source_key is the item's)
- dbrain-style:  computed in the same run directly in SQLite, as dbrain's ``Store.Search``
                 orders rows (``internal/store/search.go``): items by bm25 of the AND query,
                 then sources; when AND finds nothing, the OR query over sources, then items,
                 keeping the rows dbrain's ``matchesRelaxedTerms`` keeps.

Target: the plugin at least as good as the dbrain-style order on both. Prints; never fails.

    python bench/bench_known_item.py [--size 20000] [--items 300] [--seed 11]
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import statistics
import tempfile
from pathlib import Path

import httpx

# Run as a script, so this folder is on sys.path and the sibling benchmark's helpers import.
from bench_research import build, pct, served

from datasette_dbrain_websearch.fts_rows import sync_source_fts
from datasette_dbrain_websearch.query_plan import plan_query, quote_term

TOP = 10
DEPTH = 40  # dbrain's searchLimit for ten rows: max(limit * 4, 12)
WORD = re.compile(r"[a-z][a-z0-9]{3,}")
# dbrain's search snippet (internal/store/search.go), and the texts matchesRelaxedTerms reads.
SNIPPET = {
    "items": "coalesce(nullif(t.summary_text, ''), nullif(t.ocr_text, ''), "
    "nullif(t.article_text, ''), t.text)",
    "sources": "coalesce(nullif(t.summary_text, ''), t.extracted_text)",
}
RELAXED_TEXTS = (
    "t.source_key || ' ' || t.title || ' ' || {author} || ' ' || t.canonical_url || ' ' || "
    "{domain} || ' ' || t.note_path || ' ' || t.user_tags || ' ' || "
    "substr(trim(replace({snippet}, char(10), ' ')), 1, 200)"
)
AUTHOR = {"items": "t.author_handle || ' ' || t.author_name", "sources": "''"}
DOMAIN = {"items": "t.primary_domain", "sources": "t.domain"}


def share_words(path: Path) -> int:
    """Each linked, extracted page takes the title of the first item linking to it, and the
    text of every item linking to it ahead of its own; returns how many pages changed."""
    conn = sqlite3.connect(path)
    pages = conn.execute(
        "select l.source_id, group_concat(i.title, char(10)), group_concat(i.text, char(10)) "
        "from (select * from item_source_links order by item_id) l "
        "join items i on i.id = l.item_id join sources s on s.id = l.source_id "
        "where s.extract_status = 'ok' group by l.source_id"
    ).fetchall()
    with conn:
        for source_id, titles, texts in pages:
            conn.execute(
                "update sources set title = ?, extracted_text = ? || char(10) || char(10) || "
                "extracted_text where id = ?",
                [titles.split("\n")[0], texts, source_id],
            )
            sync_source_fts(conn, source_id)
    conn.close()
    return len(pages)


def searchable(word: str) -> bool:
    """A word the plugin searches as it is (not a stop word or a current-state word)."""
    return plan_query(word).query_terms == (word,)


def questions(conn: sqlite3.Connection, count: int, seed: int) -> list[tuple[str, str, str]]:
    """(item key, three of its words, the three plus a word it lacks), for items with a page."""
    rng = random.Random(seed)
    items = conn.execute(
        "select distinct i.source_key, i.title || ' ' || i.text || ' ' || i.summary_text "
        "|| ' ' || i.ocr_text from items i join item_source_links l on l.item_id = i.id "
        "order by i.id"
    ).fetchall()
    vocabulary = sorted(
        {w for _, text in items[:: max(1, len(items) // 500)] for w in WORD.findall(text.lower())}
    )
    vocabulary = [w for w in vocabulary if searchable(w)]
    chosen: list[tuple[str, str, str]] = []
    for key, text in rng.sample(items, len(items)):
        if len(chosen) == count:
            break
        own = {w for w in WORD.findall(text.lower())}
        words = sorted(w for w in own if searchable(w))
        if len(words) < 3:
            continue
        three = rng.sample(words, 3)
        # Lacking a word means no word of the item starts with it (the search is by prefix).
        lacking = [w for w in vocabulary if not any(o.startswith(w) for o in own)]
        chosen.append((key, " ".join(three), " ".join([*three, rng.choice(lacking)])))
    return chosen


def ranked(conn: sqlite3.Connection, table: str, match: str) -> list[tuple[str, str]]:
    """(key, the texts dbrain's relaxed rule reads) of one table's bm25 order, as dbrain
    orders it (``bm25``, then the newest)."""
    newest = "last_seen_at" if table == "items" else "updated_at"
    texts = RELAXED_TEXTS.format(snippet=SNIPPET[table], author=AUTHOR[table], domain=DOMAIN[table])
    return conn.execute(
        f"select t.source_key, lower({texts}) from {table}_fts f join {table} t "
        f"on t.id = f.rowid where {table}_fts match ? "
        f"order by bm25({table}_fts), t.{newest} desc limit {DEPTH}",
        [match],
    ).fetchall()


def holds_enough(terms: list[str], text: str) -> bool:
    """dbrain's ``matchesRelaxedTerms``: at least two of the 3+ letter terms appear in the text
    (one when the question has only one)."""
    wanted = [t for t in terms if len(t) >= 3]
    return sum(1 for t in wanted if t in text) >= (1 if len(wanted) <= 1 else 2)


def dbrain_style(conn: sqlite3.Connection, question: str) -> list[str]:
    """The first ten keys as dbrain's ``Store.Search`` orders them: items, then sources (the OR
    fallback: sources, then items)."""
    terms = list(plan_query(question).query_terms)
    strict = " AND ".join(quote_term(t) for t in terms)
    rows = ranked(conn, "items", strict) + ranked(conn, "sources", strict)
    if not rows:
        relaxed = " OR ".join(quote_term(t) for t in terms)
        rows = [
            row
            for table in ("sources", "items")
            for row in ranked(conn, table, relaxed)
            if holds_enough(terms, row[1])
        ]
    return [key for key, _ in rows[:TOP]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000, help="items (sources = size/2)")
    parser.add_argument("--items", type=int, default=300, help="known items to look for")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "known.db"
        build(path, args.size, rebuild=True)
        pages = share_words(path)
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        asked = questions(conn, args.items, args.seed)
        found = {"three": [0, 0], "lacking": [0, 0]}  # plugin, dbrain-style
        latencies: list[float] = []
        with (
            served(path) as port,
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client,
        ):
            for key, three, four in asked:
                for name, question in (("three", three), ("lacking", four)):
                    response = client.get("/-/research.json", params={"q": question, "limit": TOP})
                    response.raise_for_status()
                    latencies.append(response.elapsed.total_seconds() * 1000)
                    rows = [r["source_key"] for r in response.json()["evidence"][:TOP]]
                    found[name][0] += key in rows
                    found[name][1] += key in dbrain_style(conn, question)
        conn.close()
    report(args, pages, len(asked), found, latencies)


def report(
    args, pages: int, asked: int, found: dict[str, list[int]], latencies: list[float]
) -> None:
    print()
    print(
        f"brain: {args.size:,} items + {args.size // 2:,} sources; {pages:,} linked pages "
        f"share their item's words; {asked} known items, two questions each"
    )
    print(f"{'recall@10':34}{'plugin':>8}{'dbrain-style':>14}")
    for name, label in (
        ("three", "three of the item's words"),
        ("lacking", "the three + a word it lacks"),
    ):
        plugin, dbrain = (n / asked for n in found[name])
        verdict = "OK" if plugin >= dbrain else "MISSED"
        print(f"{label:34}{plugin:>8.3f}{dbrain:>14.3f}   plugin >= dbrain-style: {verdict}")
    print(
        f"research.json p50 {statistics.median(latencies):.1f} ms, "
        f"p95 {pct(latencies, 0.95):.1f} ms"
    )


if __name__ == "__main__":
    main()
