"""The curated demo brain's rows: each topic of ``topics`` saved as dbrain saves it (web pages,
X bookmarks, GitHub stars, YouTube likes, feed entries, Apple Notes, Safari tabs and a page never
extracted), and the notes and items outside the topics.

The rows are drawn with the caller's seeded ``random.Random`` and ``rows.Builder``'s fixed clock,
so two builds hold the same rows; ``builder.build_demo_brain`` writes them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from datetime import timedelta

from ..urls import normalize_url
from .rows import (
    GITHUB_VIEWER,
    SAFARI_DEVICE,
    BrainData,
    Builder,
    compact_json,
    note_slug,
    sha256_hex,
    short_id,
    stable_uuid,
    stamp,
    tag_list,
)
from .topics import BOOK_NOTE, MANUAL_ITEMS, MISC_NOTES, TOPICS, X_AUTHORS, Topic


def curated_brain(rng: random.Random) -> BrainData:
    builder = Builder(rng)
    x_ids = iter(range(1_912_340_000_000_000_000, 1_999_999_999_999_999_999, 7_919_000_003))
    for topic in TOPICS:
        _curated_topic(builder, topic, x_ids)
    _curated_misc(builder)
    return builder.data


def _paragraph(rng: random.Random, facts: Sequence[str], count: int) -> str:
    return " ".join(rng.sample(list(facts), min(count, len(facts))))


def _curated_topic(builder: Builder, topic: Topic, x_ids: Iterator[int]) -> None:
    rng = builder.rng
    facts = topic.facts

    def page_text(title: str, description: str) -> str:
        paragraphs = [f"{title}. {description}"]
        paragraphs += [_paragraph(rng, facts, rng.randint(3, 4)) for _ in range(rng.randint(2, 3))]
        return "\n\n".join(paragraphs)

    def page_summary() -> str:
        return _paragraph(rng, facts, 2)

    pages = []
    for url, title, site, description in topic.pages:
        pages.append(
            builder.source(
                url,
                builder.moment(),
                title=title,
                description=description,
                site_name=site,
                text=page_text(title, description),
                summary=page_summary() if rng.random() < 0.8 else "",
                tags=tag_list(rng, topic.tags) if rng.random() < 0.5 else "",
            )
        )

    # X bookmarks that point at the topic's pages, some with tracking parameters.
    for index in range(12):
        handle, name = X_AUTHORS[rng.randrange(len(X_AUTHORS))]
        page = pages[index % len(pages)]
        shared_url = page["canonical_url"]
        if rng.random() < 0.5:
            shared_url += ("&" if "?" in shared_url else "?") + "utm_source=twitter"
        fact = rng.choice(facts)
        tweet_id = str(next(x_ids))
        saved = builder.moment()
        text = f"{fact} Good write-up: {shared_url}"
        item = builder.item(
            saved,
            source_key=f"x:{tweet_id}",
            source_type="x_bookmark",
            external_id=tweet_id,
            canonical_url=f"https://x.com/{handle}/status/{tweet_id}",
            title=text[:80],
            author_handle=handle,
            author_name=name,
            published_at=stamp(saved - timedelta(hours=rng.randint(1, 72))),
            language="en",
            text=text,
            x_post_text=text,
            x_post_lang="en",
            x_post_status="ok",
            x_post_fetched_at=stamp(saved + timedelta(hours=1)),
            x_post_json=compact_json({"id": tweet_id, "lang": "en"}),
            primary_category=topic.category,
            primary_domain=page["domain"],
            domains=page["domain"],
            links_json=compact_json([shared_url]),
            like_count=rng.randint(3, 4000),
            repost_count=rng.randint(0, 600),
            reply_count=rng.randint(0, 120),
            quote_count=rng.randint(0, 40),
            bookmark_count=rng.randint(1, 900),
            note_path=f"items/x/{saved.year:04d}/{tweet_id}.md",
            raw_json=compact_json({"handle": handle, "id": tweet_id}),
            user_tags=tag_list(rng, topic.tags) if rng.random() < 0.7 else "",
        )
        if index == 0:
            builder.enrich(item, "ocr", f"Screenshot text: {rng.choice(facts)}", saved)
        if index == 1 and topic.key in ("rust", "espresso"):
            transcript = f"Video transcript. {_paragraph(rng, facts, 3)}"
            builder.enrich(item, "x_media_transcript", transcript, saved + timedelta(hours=2))
        if rng.random() < 0.4:
            builder.enrich(item, "summary", _paragraph(rng, facts, 2), saved + timedelta(hours=3))
        builder.link(item, page["id"], shared_url)

    # GitHub stars, each with the repository as a github source.
    for full_name, description in topic.repos:
        saved = builder.moment()
        owner = full_name.split("/")[0]
        repo_url = f"https://github.com/{full_name}"
        text = f"{description} Starred for the {topic.tags[0]} notes."
        item = builder.item(
            saved,
            source_key=f"gh-star:{GITHUB_VIEWER}:{full_name.lower()}",
            source_type="github_star",
            external_id=str(int(sha256_hex(full_name)[:8], 16)),
            canonical_url=repo_url,
            title=full_name,
            author_handle=owner,
            published_at=stamp(saved - timedelta(days=rng.randint(200, 3000))),
            text=text,
            primary_category="star",
            primary_domain="github.com",
            categories=", ".join(topic.tags[:2]),
            domains="github.com",
            github_urls=repo_url,
            links_json=compact_json([repo_url]),
            note_path=f"items/github/{saved.year:04d}/{full_name.replace('/', '__')}.md",
            raw_json=compact_json({"full_name": full_name, "viewer": GITHUB_VIEWER}),
            user_tags=tag_list(rng, topic.tags) if rng.random() < 0.6 else "",
        )
        repo = builder.source(
            repo_url,
            saved,
            title=f"GitHub - {full_name}: {description}",
            description=description,
            site_name="GitHub",
            text=f"{full_name}\n\n{description}\n\n{_paragraph(rng, facts, 3)}",
            summary=description if rng.random() < 0.5 else "",
        )
        builder.link(item, repo["id"], repo_url)

    # YouTube likes, each with a youtube source.
    for title, channel in topic.videos:
        saved = builder.moment()
        video_id = short_id(title)
        watch_url = f"https://www.youtube.com/watch?v={video_id}"
        description = _paragraph(rng, facts, 2)
        item = builder.item(
            saved,
            source_key=f"yt:liked:{video_id}",
            source_type="youtube",
            external_id=video_id,
            canonical_url=watch_url,
            title=title,
            author_handle="@" + re.sub(r"[^a-z0-9]", "", channel.lower()),
            author_name=channel,
            published_at=stamp(saved - timedelta(days=rng.randint(1, 90))),
            text=description,
            primary_category=topic.category,
            primary_domain="youtube.com",
            domains="youtube.com",
            links_json=compact_json([watch_url]),
            note_path=f"items/youtube/{saved.year:04d}/{video_id}.md",
            raw_json=compact_json({"channel": channel, "video_id": video_id}),
            user_tags=tag_list(rng, topic.tags) if rng.random() < 0.5 else "",
        )
        if rng.random() < 0.6:
            builder.enrich(item, "summary", _paragraph(rng, facts, 2), saved + timedelta(hours=1))
        video = builder.source(
            watch_url + "&feature=share",
            saved,
            title=f"{title} - YouTube",
            description=description,
            site_name="YouTube",
            text=f"{title}\n\n{description}\n\n{_paragraph(rng, facts, 3)}",
        )
        builder.link(item, video["id"], watch_url)

    # Feed entries; the article each one announces becomes a web source.
    for url, title, author, feed in topic.feed_posts:
        saved = builder.moment()
        body = _paragraph(rng, facts, 4)
        item = builder.item(
            saved,
            source_key=f"feed-entry:{sha256_hex(feed, url)[:12]}",
            source_type="feed_entry",
            external_id=url,
            canonical_url=url,
            title=title,
            author_name=author,
            published_at=stamp(saved - timedelta(hours=rng.randint(1, 48))),
            language="en",
            text=body,
            primary_category=topic.category,
            primary_domain=normalize_url(url).domain,
            domains=normalize_url(url).domain,
            links_json=compact_json([url]),
            folder_names=feed,
            note_path=f"items/feeds/{saved.year:04d}/{note_slug(title)}.md",
            raw_json=compact_json({"feed": feed, "link": url}),
            user_tags=tag_list(rng, topic.tags) if rng.random() < 0.5 else "",
        )
        if rng.random() < 0.5:
            builder.enrich(item, "summary", _paragraph(rng, facts, 2), saved + timedelta(hours=2))
        article = builder.source(
            url,
            saved,
            title=title,
            description=body.split(". ")[0] + ".",
            site_name=feed,
            text=page_text(title, body),
            summary=page_summary() if rng.random() < 0.7 else "",
        )
        builder.link(item, article["id"], url)

    # Apple Notes, some with OCR'd photo attachments.
    for index, title in enumerate(topic.notes):
        saved = builder.moment()
        note_id = stable_uuid(f"{topic.key}:{title}")
        links = [pages[(index * 3) % len(pages)]["canonical_url"]] if index % 2 == 0 else []
        body = f"{title}\n\n" + "\n".join(f"- {fact}" for fact in rng.sample(list(facts), 4))
        if links:
            body += f"\n\nSee {links[0]}"
        item = builder.item(
            saved,
            source_key=f"apple-note:{note_id}",
            source_type="apple_note",
            external_id=note_id,
            canonical_url=f"applenotes:note/{note_id}",
            title=title,
            published_at=stamp(saved),
            text=body,
            links_json=compact_json(links),
            folder_names=f"Notes/{topic.category.title()}",
            note_path=f"items/apple-notes/{saved.year:04d}/{note_slug(title)}-{sha256_hex(note_id)[:12]}.md",
            raw_json=compact_json({"account_name": "iCloud", "folder_path": topic.category}),
            user_tags=tag_list(rng, topic.tags),
        )
        if index == 1:
            builder.enrich(
                item,
                "ocr",
                f"Photo of a whiteboard: {rng.choice(facts)}",
                saved + timedelta(hours=1),
            )
        if links:
            builder.link(item, pages[(index * 3) % len(pages)]["id"], links[0])

    # Safari tabs left open on the topic's pages.
    for page in pages[:3]:
        saved = builder.moment(60)
        tab_id = stable_uuid(f"tab:{page['canonical_url']}")
        url = page["canonical_url"]
        tab = builder.item(
            saved,
            source_key=f"safari-tab:{SAFARI_DEVICE}:{tab_id}",
            source_type="safari_tab",
            external_id=tab_id,
            canonical_url=url,
            title=page["title"],
            text=(
                "Safari tab captured from iCloud Tabs.\n\nDevice: Demo MacBook\n"
                f"Title: {page['title']}\nURL: {url}\nLast viewed: {stamp(saved)}"
            ),
            primary_domain=page["domain"],
            links_json=compact_json([url]),
            note_path=(
                f"items/safari-tabs/{saved.year:04d}/{note_slug(page['title'])}-"
                f"{sha256_hex(SAFARI_DEVICE + ':' + tab_id)[:12]}.md"
            ),
            raw_json=compact_json({"device_name": "Demo MacBook", "url": url}),
        )
        builder.link(tab, page["id"], url)

    # A page saved with `dbrain link add` and never extracted: no title, no sources_fts row.
    builder.source(topic.pending, builder.moment(20), status="")


def _apple_note(builder: Builder, title: str, body: str) -> None:
    saved = builder.moment()
    note_id = stable_uuid(f"misc:{title}")
    builder.item(
        saved,
        source_key=f"apple-note:{note_id}",
        source_type="apple_note",
        external_id=note_id,
        canonical_url=f"applenotes:note/{note_id}",
        title=title,
        published_at=stamp(saved),
        text=f"{title}\n\n{body}",
        folder_names="Notes",
        note_path=f"items/apple-notes/{saved.year:04d}/{note_slug(title)}-{sha256_hex(note_id)[:12]}.md",
        raw_json=compact_json({"account_name": "iCloud", "folder_path": "Notes"}),
    )


def _curated_misc(builder: Builder) -> None:
    for title, body in MISC_NOTES:
        _apple_note(builder, title, body)
    for slug, title, body in MANUAL_ITEMS:
        saved = builder.moment()
        builder.item(
            saved,
            source_key=f"manual:{slug}",
            source_type="manual",
            external_id=slug,
            canonical_url="",
            title=title,
            text=body,
            note_path=f"items/manual/{saved.year:04d}/{slug}.md",
            user_tags="reading-list" if "reading" in slug else "",
        )
    # Two extraction failures: like pending sources, they never reach sources_fts.
    for url in (
        "https://retrofitweekly.com/heat-pump-installer-directory",
        "https://datastack.blog/sqlite-wal-mode-explained",
    ):
        builder.source(url, builder.moment(30), status="error")
    # Last, so no earlier row's dates moved: deep research's first hop (the second, where its
    # author bakes, is only on the fake web).
    _apple_note(builder, *BOOK_NOTE)
