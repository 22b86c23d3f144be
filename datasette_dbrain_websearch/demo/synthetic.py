"""The synthetic bench brain (``datasette dbrain-demo --size N``): N items and N // 2 sources
of sentences drawn from the curated topics' words, written in chunks to keep memory flat.

Its own module beside the curated demo (``builder``, whose ``build_demo_brain(size=N)`` calls
``synthetic_brain``); both make their rows with ``rows.Builder``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from ..schema import SOURCE_COLUMNS
from ..urls import note_path, source_key
from .rows import (
    GITHUB_VIEWER,
    SAFARI_DEVICE,
    SUMMARY_MODEL,
    BrainData,
    Builder,
    blank_row,
    compact_json,
    sha256_hex,
    short_id,
    stable_uuid,
    stamp,
    tag_list,
)
from .topics import TOPICS, Topic

_FILLER_WORDS = (
    "the and with for this that from into when then more less each every most some after "
    "before while about also only just very still often usually better faster simple small "
    "large first last next good new old time way part setup notes guide example problem "
    "change result value level point test start week day year people work home plan idea "
    "question answer reason detail option choice cost price review list summary"
).split()
_CHUNK_ROWS = 5_000
_SOURCE_TYPES = ("web", "web", "web", "web", "github", "youtube", "pdf")
_ITEM_KINDS = (
    "x_bookmark",
    "x_bookmark",
    "apple_note",
    "github_star",
    "feed_entry",
    "youtube",
    "safari_tab",
    "manual",
)


def _topic_words(topic: Topic) -> list[str]:
    """The topic's distinctive words, most frequent first (ties in order of appearance)."""
    counts: dict[str, int] = {}
    text = " ".join((*topic.facts, *(page[1] for page in topic.pages), *topic.tags))
    for word in re.findall(r"[a-z][a-z0-9]+", text.lower()):
        if len(word) > 2 and word not in _FILLER_WORDS:
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda word: -counts[word])


def _sentence_pools(rng: random.Random) -> list[list[str]]:
    """Per topic, a pool of sentences mixing Zipf-weighted topic words with filler words."""
    pools = []
    for topic in TOPICS:
        words = _topic_words(topic)
        vocabulary = words + _FILLER_WORDS
        weights = [1.0 / (rank + 1) for rank in range(len(words))]
        weights += [0.08] * len(_FILLER_WORDS)
        cumulative = []
        total = 0.0
        for weight in weights:
            total += weight
            cumulative.append(total)
        pool = []
        for _ in range(500):
            chosen = rng.choices(vocabulary, cum_weights=cumulative, k=rng.randint(7, 16))
            pool.append(" ".join(chosen).capitalize() + ".")
        pools.append(pool)
    return pools


def synthetic_brain(rng: random.Random, size: int) -> Iterator[BrainData]:
    """Rows for ``size`` items and ``size // 2`` sources, in chunks to keep memory flat."""
    builder = Builder(rng)
    pools = _sentence_pools(rng)
    source_count = size // 2
    # (canonical_url, domain) of every source, for the item links made after they are written.
    source_refs: list[tuple[str, str]] = []
    for index in range(source_count):
        row = _synthetic_source(builder, pools, index)
        source_refs.append((row["canonical_url"], row["domain"]))
        if len(builder.data.sources) >= _CHUNK_ROWS:
            yield builder.drain()

    for index in range(size):
        topic_index = (index * 7 + index // len(TOPICS)) % len(TOPICS)
        topic = TOPICS[topic_index]
        pool = pools[topic_index]
        kind = _ITEM_KINDS[index % len(_ITEM_KINDS)]
        saved = builder.moment(900)
        text = " ".join(rng.choices(pool, k=rng.randint(2, 5)))
        key, canonical, note = _synthetic_item_identity(kind, index, saved.year)
        item = builder.item(
            saved,
            source_key=key,
            source_type=kind,
            external_id=str(index + 1),
            canonical_url=canonical,
            title=" ".join(text.split()[:8]).rstrip("."),
            text=text,
            primary_category=topic.category,
            note_path=note,
            user_tags=tag_list(rng, topic.tags) if index % 2 == 0 else "",
        )
        if source_count and index % 2 == 1:
            source_index = (index * 31 + topic_index) % source_count
            url, domain = source_refs[source_index]
            item["links_json"] = compact_json([url])
            item["primary_domain"] = domain
            builder.link(item, source_index + 1, url)
        if index % 5 == 0:
            builder.enrich(item, "summary", " ".join(rng.choices(pool, k=2)), saved)
        if index % 23 == 0:
            builder.enrich(item, "ocr", rng.choice(pool), saved)
        if len(builder.data.items) >= _CHUNK_ROWS:
            yield builder.drain()
    yield builder.drain()


def _synthetic_source(builder: Builder, pools: list[list[str]], index: int) -> dict[str, Any]:
    """One source; every 50th was never extracted, 60% of the rest are summarized."""
    rng = builder.rng
    topic = TOPICS[index % len(TOPICS)]
    pool = pools[index % len(TOPICS)]
    source_type = _SOURCE_TYPES[index % len(_SOURCE_TYPES)]
    site = f"{topic.key}-{index % 97}.example.com"
    url = _synthetic_url(source_type, site, topic.key, index)
    domain = {"github": "github.com", "youtube": "youtube.com"}.get(source_type, site)
    created = builder.moment(900)
    row = blank_row(SOURCE_COLUMNS)
    row.update(
        id=builder.next_source_id(),
        source_key=source_key(url),
        canonical_url=url,
        normalized_url=url,
        source_type=source_type,
        domain=domain,
        note_path=note_path(source_type, domain, url),
        created_at=stamp(created),
        updated_at=stamp(created),
    )
    if index % 50 != 7:
        text = " ".join(rng.choices(pool, k=rng.randint(16, 30)))
        row.update(
            title=" ".join(rng.choice(pool).split()[:6]).rstrip(".").title(),
            description=rng.choice(pool),
            site_name=topic.key.replace("-", " ").title() + " Weekly",
            extracted_text=text,
            extract_status="ok",
            extracted_at=stamp(created + timedelta(minutes=5)),
            extract_tool="dbrain-extract",
            extract_tool_version="2.1.0",
            content_hash=sha256_hex(text),
            user_tags=tag_list(rng, topic.tags) if index % 3 == 0 else "",
        )
        if index % 10 < 6:
            row.update(
                summary_text=" ".join(rng.choices(pool, k=2)),
                summary_status="ok",
                summary_model=SUMMARY_MODEL,
                summary_content_hash=row["content_hash"],
                summarized_at=stamp(created + timedelta(hours=1)),
            )
    builder.data.sources.append(row)
    return row


def _synthetic_url(source_type: str, domain: str, topic: str, index: int) -> str:
    """Already-canonical URLs, so ``normalize_url`` would return them unchanged."""
    if source_type == "github":
        return f"https://github.com/{topic}-lab/project-{index}"
    if source_type == "youtube":
        return f"https://youtube.com/watch?v={short_id(str(index))}"
    if source_type == "pdf":
        return f"https://{domain}/papers/{topic}-{index}.pdf"
    return f"https://{domain}/posts/{topic}-{index}"


def _synthetic_item_identity(kind: str, index: int, year: int) -> tuple[str, str, str]:
    """(source_key, canonical_url, note_path) with dbrain's prefix for each item kind."""
    number = 1_900_000_000_000_000_000 + index
    if kind == "x_bookmark":
        return (
            f"x:{number}",
            f"https://x.com/user{index % 997}/status/{number}",
            (f"items/x/{year:04d}/{number}.md"),
        )
    if kind == "apple_note":
        note_id = stable_uuid(f"note:{index}")
        return (
            f"apple-note:{note_id}",
            f"applenotes:note/{note_id}",
            (f"items/apple-notes/{year:04d}/note-{index}.md"),
        )
    if kind == "github_star":
        return (
            f"gh-star:{GITHUB_VIEWER}:owner{index % 499}/repo-{index}",
            (f"https://github.com/owner{index % 499}/repo-{index}"),
            f"items/github/{year:04d}/owner{index % 499}__repo-{index}.md",
        )
    if kind == "feed_entry":
        digest = sha256_hex("feed", str(index))[:12]
        return (
            f"feed-entry:{digest}",
            f"https://blog-{index % 211}.example.org/{index}",
            (f"items/feeds/{year:04d}/entry-{index}.md"),
        )
    if kind == "youtube":
        video_id = short_id(f"item:{index}")
        return (
            f"yt:liked:{video_id}",
            f"https://www.youtube.com/watch?v={video_id}",
            (f"items/youtube/{year:04d}/{video_id}.md"),
        )
    if kind == "safari_tab":
        tab_id = stable_uuid(f"tab:{index}")
        return (
            f"safari-tab:{SAFARI_DEVICE}:{tab_id}",
            f"https://site-{index % 389}.example.net/",
            (f"items/safari-tabs/{year:04d}/tab-{index}.md"),
        )
    return f"manual:entry-{index}", "", f"items/manual/{year:04d}/entry-{index}.md"
