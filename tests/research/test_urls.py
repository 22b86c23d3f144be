"""dbrain's URL normalization (``internal/linkextract/normalize.go``), as ``urls.py`` has it."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_dbrain_websearch.urls import (
    NormalizedURL,
    UnsupportedURL,
    normalize_url,
    note_path,
    slugify,
    source_key,
    try_normalize_url,
)

# (input, canonical URL, source type, domain). The first five are dbrain's own test vectors
# (normalize_test.go) and the two examples of the reference table.
CANONICAL = [
    (
        "http://www.Example.com/path/../post?utm_source=x&keep=1#frag",
        "https://example.com/post?keep=1",
        "web",
        "example.com",
    ),
    (
        "https://github.com/darron/dbrain/issues/1?tab=readme",
        "https://github.com/darron/dbrain",
        "github",
        "github.com",
    ),
    (
        "https://youtu.be/abc123?t=30&si=tracking&list=playlist",
        "https://youtu.be/abc123?list=playlist",
        "youtube",
        "youtu.be",
    ),
    ("https://twitter.com/i/article/123", "https://x.com/i/article/123", "x_article", "x.com"),
    ("https://x.com/i/article/987?s=20", "https://x.com/i/article/987?s=20", "x_article", "x.com"),
    # Host: lowercased, one www. then one m. stripped, mobile twitter mapped to x.com.
    ("https://M.Example.COM/a", "https://example.com/a", "web", "example.com"),
    ("https://www.m.example.com/a", "https://example.com/a", "web", "example.com"),
    ("https://m.www.example.com/a", "https://www.example.com/a", "web", "www.example.com"),
    ("https://mobile.twitter.com/i/article/5", "https://x.com/i/article/5", "x_article", "x.com"),
    ("https://www.twitter.com/i/article/6", "https://x.com/i/article/6", "x_article", "x.com"),
    # Scheme: forced to https, except for localhost and IP addresses.
    ("HTTP://example.com/", "https://example.com/", "web", "example.com"),
    ("//example.com/x", "https://example.com/x", "web", "example.com"),
    ("http://localhost:8080/a/b/", "http://localhost:8080/a/b", "web", "localhost"),
    ("https://localhost/", "https://localhost/", "web", "localhost"),
    ("http://127.0.0.1/x", "http://127.0.0.1/x", "web", "127.0.0.1"),
    ("http://192.168.1.10:3000", "http://192.168.1.10:3000/", "web", "192.168.1.10"),
    ("http://010.0.0.1/", "https://010.0.0.1/", "web", "010.0.0.1"),  # not an IP for Go
    # An IPv6 host keeps http and, as in dbrain, loses its brackets (in normalized_url only).
    ("http://[::1]:8080/x", "http://::1:8080/x", "web", "::1"),
    ("http://[fe80::1%25en0]/", "https://fe80::1%25en0/", "web", "fe80::1%en0"),
    # Ports are kept, even default ones; the domain never has one.
    ("https://example.com:443/a", "https://example.com:443/a", "web", "example.com"),
    ("http://example.com:/a", "https://example.com/a", "web", "example.com"),
    # Path: path.Clean of the escaped path.
    ("https://example.com", "https://example.com/", "web", "example.com"),
    ("https://example.com/a/b/", "https://example.com/a/b", "web", "example.com"),
    ("https://example.com//a//b//", "https://example.com/a/b", "web", "example.com"),
    ("https://example.com/a/./b/../c", "https://example.com/a/c", "web", "example.com"),
    ("https://example.com/../../a", "https://example.com/a", "web", "example.com"),
    ("https://example.com/a/..", "https://example.com/", "web", "example.com"),
    ("https://example.com/%2E%2E/a", "https://example.com/%252E%252E/a", "web", "example.com"),
    # ...which Go's URL.String escapes a second time: dbrain stores these doubled escapes.
    ("https://example.com/caf%C3%A9", "https://example.com/caf%25C3%25A9", "web", "example.com"),
    ("https://example.com/café", "https://example.com/caf%25C3%25A9", "web", "example.com"),
    ("https://example.com/a b", "https://example.com/a%2520b", "web", "example.com"),
    ("https://example.com/a!b(c)", "https://example.com/a%21b%28c%29", "web", "example.com"),
    (
        "https://example.com/a:b@c+d$e,f;g=h",
        "https://example.com/a:b@c+d$e,f;g=h",
        "web",
        "example.com",
    ),
    # Non-ASCII hosts are escaped in the URL; the domain keeps the lowercased characters.
    ("https://Bücher.de/", "https://b%C3%BCcher.de/", "web", "bücher.de"),
    ("https://İstanbul.example/", "https://istanbul.example/", "web", "istanbul.example"),
    # Source types.
    ("https://example.com/paper.PDF", "https://example.com/paper.PDF", "pdf", "example.com"),
    ("https://example.com/paper.pdf/", "https://example.com/paper.pdf", "web", "example.com"),
    ("https://example.com/paper%2Epdf", "https://example.com/paper%252Epdf", "pdf", "example.com"),
    (
        "https://www.youtube.com/watch?v=abc&feature=share",
        "https://youtube.com/watch?v=abc",
        "youtube",
        "youtube.com",
    ),
    (
        "https://m.youtube.com/watch?v=abc&t=10&start=3",
        "https://youtube.com/watch?v=abc",
        "youtube",
        "youtube.com",
    ),
    (
        "https://music.youtube.com/watch?v=abc&t=10",
        "https://music.youtube.com/watch?t=10&v=abc",
        "web",
        "music.youtube.com",
    ),
    ("https://x.com/i/article/../status/1", "https://x.com/i/status/1", "x_article", "x.com"),
    # GitHub: cut to owner/repo without query; shorter paths keep their query.
    (
        "https://github.com/Owner/Repo/tree/main/src?x=1#L5",
        "https://github.com/Owner/Repo",
        "github",
        "github.com",
    ),
    ("https://www.github.com/owner/repo/", "https://github.com/owner/repo", "github", "github.com"),
    (
        "https://github.com/owner?tab=repositories",
        "https://github.com/owner?tab=repositories",
        "github",
        "github.com",
    ),
    ("https://github.com:8443/a/b/c", "https://github.com:8443/a/b", "github", "github.com"),
    # Userinfo is dropped.
    ("https://user:pa%20ss@example.com/a", "https://example.com/a", "web", "example.com"),
    # Whitespace Go trims.
    ("  \t https://example.com/a \n", "https://example.com/a", "web", "example.com"),
    ("\u3000https://example.com/a\u00a0", "https://example.com/a", "web", "example.com"),
    # Control characters after the fragment are never checked: the fragment is dropped.
    ("https://example.com/a#x\x00y", "https://example.com/a", "web", "example.com"),
    # A host that strips to nothing.
    ("http://www./", "https:///", "web", ""),
]


@pytest.mark.parametrize(("raw", "canonical", "source_type", "domain"), CANONICAL)
def test_normalizes_like_dbrain(raw, canonical, source_type, domain):
    result = normalize_url(raw)
    assert result.normalized_url == canonical
    if ":" not in domain:
        assert result.canonical_url == canonical
    assert result.source_type == source_type
    assert result.domain == domain
    assert result.source_key == source_key(canonical)
    assert result.note_path == note_path(source_type, domain, canonical)


# Query strings: url.Values.Encode after dropping tracking parameters.
QUERIES = [
    ("b=2&a=1&c=3", "a=1&b=2&c=3"),  # keys sorted
    ("b=2&a=1&b=1&a=0", "a=1&a=0&b=2&b=1"),  # values keep their order per key
    ("B=1&a=1&_=1&Z=1", "B=1&Z=1&_=1&a=1"),  # sorted by bytes: upper case before lower
    ("q=a+b", "q=a+b"),  # + is a space, encoded back as +
    ("q=a%20b", "q=a+b"),
    ("q=-_.~", "q=-_.~"),  # unreserved characters stay
    ("q=*'()!", "q=%2A%27%28%29%21"),  # everything else is %XX, upper case
    ("q=%e2%82%ac", "q=%E2%82%AC"),
    ("q=€", "q=%E2%82%AC"),
    ("q=a/b?c:d@e", "q=a%2Fb%3Fc%3Ad%40e"),
    ("flag", "flag="),  # a key without = gets an empty value
    ("=x", "=x"),  # an empty key is kept
    ("a=1&&b=2&", "a=1&b=2"),  # empty pairs skipped
    ("a=1;b=2&c=3", "c=3"),  # a pair with a raw semicolon is dropped
    ("a=%zz&b=2", "b=2"),  # a pair with a bad escape is dropped
    ("a=1?b=2", "a=1%3Fb%3D2"),  # only the first ? starts the query
    ("utm_source=x&UTM_Medium=y&utm_=z&keep=1", "keep=1"),
    ("fbclid=1&gclid=2&igshid=3&ref_src=4&si=5&SI=6&keep=1", "keep=1"),
    ("utmost=1", "utmost=1"),
    ("t=30&start=5&feature=x", "feature=x&start=5&t=30"),  # only YouTube drops these
    ("İgshid=1&keep=1", "keep=1"),  # Go lowercases İ to i
    ("", ""),
]


@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_query_is_filtered_and_encoded_like_values_encode(query, expected):
    canonical = normalize_url(f"https://example.com/p?{query}").canonical_url
    assert canonical == "https://example.com/p" + (f"?{expected}" if expected else "")


def test_go_caps_a_query_at_ten_thousand_parameters():
    kept = "&".join(f"k{i}=v" for i in range(10_000))
    assert "?" in normalize_url(f"https://example.com/?{kept}").canonical_url
    assert normalize_url(f"https://example.com/?{kept}&x=1").canonical_url == (
        "https://example.com/"
    )


def test_trailing_question_mark_is_dropped():
    assert normalize_url("https://example.com/a?").canonical_url == "https://example.com/a"
    assert normalize_url("https://example.com/a?utm_source=x").canonical_url == (
        "https://example.com/a"
    )


REJECTED = [
    "",
    "   ",
    "example.com/path",
    "localhost:8080/x",
    "/relative/path",
    "mailto:someone@example.com",
    "ftp://example.com/file",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "https:example.com",
    "https:///path-only",
    "https://",
    "https://@/",
    "://example.com",
    "https://t.co/abc",
    "https://pbs.twimg.com/media/x.jpg",
    "https://video.twimg.com/v.mp4",
    "https://x.com/example/status/123",
    "https://twitter.com/example/status/123",
    "https://mobile.twitter.com/example",
    "https://www.x.com/home",
    "https://x.com/i/articles/1",
    "http://[::1",
    "http://::1/",
    "http://[1.2.3.4]/",
    "http://[::1]x/",
    "http://evil.com[::1]/",
    "http://[fe80::1%en0]/",
    "http://localhost:80:80/",
    "http://example.com:port/",
    "http://exa mple.com/",
    "http://exa%41mple.com/",
    "http://example.com/a%zz",
    "http://example.com/a#%zz",
    "http://example.com/\x00",
    "http://example.com/\x7f",
    "http://example.com/a\tb",
    "\x1chttps://example.com/",
    "http://us er@example.com/",
    "http://user%zz@example.com/",
    "https://example.com\ud800/",
]


@pytest.mark.parametrize("raw", REJECTED)
def test_rejections_raise_unsupported_url(raw):
    with pytest.raises(UnsupportedURL, match=r"^unsupported or invalid URL$"):
        normalize_url(raw)
    assert try_normalize_url(raw) is None


def test_unsupported_url_is_a_value_error():
    assert issubclass(UnsupportedURL, ValueError)
    with pytest.raises(ValueError):
        normalize_url(42)  # type: ignore[arg-type]


def test_source_key_and_note_path_are_computed_from_the_canonical_url():
    result = normalize_url("http://www.Example.com/path/../post?utm_source=x&keep=1#frag")
    digest = hashlib.sha256(b"https://example.com/post?keep=1").hexdigest()
    assert result == NormalizedURL(
        canonical_url="https://example.com/post?keep=1",
        normalized_url="https://example.com/post?keep=1",
        source_type="web",
        domain="example.com",
        source_key="src:" + digest[:12],
        note_path=f"sources/web/example-com-{digest[:12]}.md",
    )
    assert re.fullmatch(r"src:[0-9a-f]{12}", result.source_key)


@pytest.mark.parametrize(
    ("raw", "link", "normalized"),
    [
        ("http://[::1]:8080/x", "http://[::1]:8080/x", "http://::1:8080/x"),
        ("http://[2606:4700::1111]/a?b=2#f", "http://[2606:4700::1111]/a?b=2", None),
        ("https://[2001:DB8::1]/", "https://[2001:db8::1]/", "https://2001:db8::1/"),
        ("http://[fe80::1%25en0]/", "https://[fe80::1%25en0]/", "https://fe80::1%25en0/"),
        ("https://[2001:db8::1]:8443/o/r/x", "https://[2001:db8::1]:8443/o/r/x", None),
    ],
)
def test_an_ipv6_link_keeps_its_brackets_while_dedupe_stays_dbrains(raw, link, normalized):
    """The link shown, fetched and written is a URL a browser opens; the key, note path and
    normalized_url are dbrain's own strings, so dbrain and this plugin still find each other's
    row for the same page."""
    result = normalize_url(raw)
    normalized = normalized or link.replace("[", "").replace("]", "")
    assert result.canonical_url == link
    assert result.normalized_url == normalized
    assert result.source_key == source_key(normalized)
    assert result.note_path == note_path("web", result.domain, normalized)
    assert normalize_url(result.canonical_url) == result


def test_note_path_uses_the_source_type_when_the_domain_is_empty():
    result = normalize_url("http://www./")
    digest = hashlib.sha256(b"https:///").hexdigest()[:12]
    assert result.note_path == f"sources/web/web-{digest}.md"
    # With no source type either, the slug is the bare hash; only the directory defaults.
    assert note_path("", "", "x") == "sources/web/" + source_key("x")[4:] + ".md"


def test_note_path_for_each_source_type():
    assert normalize_url("https://github.com/a/b").note_path.startswith(
        "sources/github/github-com-"
    )
    assert normalize_url("https://youtu.be/x").note_path.startswith("sources/youtube/youtu-be-")
    assert normalize_url("https://a.org/x.pdf").note_path.startswith("sources/pdf/a-org-")
    assert normalize_url("https://x.com/i/article/1").note_path.startswith(
        "sources/x_article/x-com-"
    )
    assert normalize_url("http://[::1]:8/").note_path.startswith("sources/web/1-")


@pytest.mark.parametrize(
    ("value", "slug"),
    [
        ("Example.COM-abc123", "example-com-abc123"),
        ("--a__b--", "a-b"),
        ("  spaced out  ", "spaced-out"),
        ("bücher.de-1", "b-cher-de-1"),
        ("İstanbul", "istanbul"),
        ("***", "source"),
        ("", "source"),
        ("a" * 100, "a" * 80),
        ("a" * 79 + "-b", "a" * 79),  # cut at 80, then trailing - trimmed again
        ("a" * 78 + "..bcd", "a" * 78 + "-b"),
    ],
)
def test_slugify_matches_dbrain(value, slug):
    assert slugify(value) == slug
    assert len(slugify(value)) <= 80


# -----------------------------------------------------------------------------------------------
# Properties.

URL_CHARS = st.sampled_from([
    *"abcdefghijklmnopqrstuvwxyzABC0189:/?#[]@!$&'()*+,;=%-._~ ",
    "%2", "%41", "%e2%82%ac", "www.", "m.", "..", "//", "http://", "https://", "[::1]", "é",
    "\x00", "\ud7ff", "\U0001f600", "\u0130", "\ufffd", "\x7f", "\u3000",
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), st.lists(URL_CHARS, max_size=40).map("".join)))
def test_never_raises_anything_but_unsupported_url(raw):
    try:
        result = normalize_url(raw)
    except UnsupportedURL:
        assert try_normalize_url(raw) is None
        return
    assert result.canonical_url.isascii()
    assert result.canonical_url.startswith(("https://", "http://"))
    assert result.normalized_url == result.canonical_url
    assert "#" not in result.canonical_url
    assert re.fullmatch(r"src:[0-9a-f]{12}", result.source_key)
    assert re.fullmatch(
        r"sources/(web|github|youtube|pdf|x_article)/[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?\.md",
        result.note_path,
    )


@pytest.mark.parametrize("prefix", ["http://example.com/", "https://x.com/i/article/1?", "//a.b/"])
def test_huge_and_hostile_inputs(prefix):
    assert len(normalize_url(prefix + "a" * 10_000).canonical_url) > 10_000
    assert normalize_url(prefix + "é/" * 5_000).canonical_url.isascii()
    for raw in (prefix + "\x00" * 10_000, "[" * 10_000, "http://" + "[" * 10_000):
        with pytest.raises(UnsupportedURL):
            normalize_url(raw)
    assert try_normalize_url(prefix + "?" + "&" * 20_000) is not None


LABEL = st.text("abcdefghijkl0123456789", min_size=1, max_size=8)
SEGMENT = st.text("abcdefghijklmnopqrstuvwxyzABC0123456789._-", min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["http", "https", "HTTP"]),
    st.lists(LABEL, min_size=1, max_size=3),
    st.lists(SEGMENT, max_size=4),
    st.lists(st.tuples(LABEL, LABEL), max_size=4),
    st.booleans(),
)
def test_plain_urls_normalize_idempotently(scheme, labels, segments, pairs, trailing_slash):
    host = ".".join(labels) + ".org"
    query = "&".join(f"{k}={v}" for k, v in pairs)
    raw = f"{scheme}://{host}/{'/'.join(segments)}{'/' if trailing_slash else ''}"
    raw += f"?{query}" if query else ""
    first = normalize_url(raw)
    assert normalize_url(first.canonical_url) == first
    assert first.canonical_url.startswith(f"https://{host}/")
    assert not first.canonical_url.endswith("/") or first.canonical_url == f"https://{host}/"
