"""dbrain's URL normalization, reproduced byte for byte.

dbrain dedupes sources by string equality on ``sources.normalized_url`` and derives
``source_key`` and ``note_path`` from that string (``NormalizeCandidate`` in
``internal/linkextract/normalize.go``). Anything this plugin looks up or writes must therefore
produce exactly the string dbrain's Go code would, quirks included. The Go code leans on
``net/url`` and ``path.Clean``; ``go_stdlib`` ports the parts it uses, on bytes as Go does, with
the defaults of Go 1.26 (the toolchain dbrain's ``go.mod`` names), and this module keeps Go's
cap of 10,000 query parameters.

Quirks kept on purpose because dbrain has them:

- the path is escaped twice: ``path.Clean`` runs on the *escaped* path, which is then stored in
  ``URL.Path`` and escaped again by ``URL.String``, so ``/caf%C3%A9`` becomes ``/caf%25C3%25A9``;
- an IPv6 host loses its brackets (``http://[::1]:8080/`` becomes ``http://::1:8080/``) in
  ``normalized_url``, and so in ``source_key`` and ``note_path``;
- an explicit port is kept even when it is the default one.

One departure: ``canonical_url`` (the link shown, fetched and written as ``sources.canonical_url``)
keeps an IPv6 host's brackets, because dbrain's form is not a URL any browser or fetcher can open.
Only IPv6 literals differ; dedupe still runs on ``normalized_url``, which is dbrain's string.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .go_stdlib import (
    HOST,
    PATH,
    QUERY,
    ParseError,
    clean_path,
    escape,
    escaped_path,
    go_decode,
    go_lower,
    go_trim_space,
    is_ip,
    parse_url,
    split_host_port,
    unescape,
)

__all__ = [
    "NormalizedURL",
    "UnsupportedURL",
    "normalize_url",
    "note_path",
    "site_domain",
    "slugify",
    "source_key",
    "try_normalize_url",
]

_TRACKING_PARAMS = frozenset({"fbclid", "gclid", "igshid", "ref_src", "si"})
_YOUTUBE_HOSTS = frozenset({"youtube.com", "youtu.be", "www.youtube.com"})
_YOUTUBE_NOISE = frozenset({"t", "start", "feature"})
_REJECTED_HOSTS = frozenset({"t.co", "pbs.twimg.com", "video.twimg.com"})
_MAX_QUERY_PARAMS = 10_000
_NON_SLUG = re.compile(r"[^a-z0-9]+")


class UnsupportedURL(ValueError):
    """dbrain would refuse this URL: unparseable, no host, not http(s), or a skipped host."""

    def __init__(self, message: str = "unsupported or invalid URL") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class NormalizedURL:
    """What dbrain stores for a source created from a URL (``model.SourceCandidate``)."""

    canonical_url: str
    normalized_url: str
    source_type: str
    domain: str
    source_key: str
    note_path: str


def normalize_url(raw: str) -> NormalizedURL:
    """Normalize ``raw`` exactly as dbrain's ``NormalizeCandidate`` does.

    Raises ``UnsupportedURL`` (and nothing else) when dbrain would reject the URL.
    """
    if not isinstance(raw, str):
        raise UnsupportedURL()
    trimmed = go_trim_space(raw)
    if not trimmed:
        raise UnsupportedURL()
    try:
        parsed = parse_url(trimmed.encode("utf-8"))
    except (UnicodeEncodeError, ParseError):
        raise UnsupportedURL() from None
    if not parsed.host:
        raise UnsupportedURL()

    raw_hostname, port = split_host_port(parsed.host)
    hostname = go_lower(go_decode(raw_hostname))
    hostname = hostname.removeprefix("www.").removeprefix("m.")
    if hostname in ("twitter.com", "mobile.twitter.com"):
        hostname = "x.com"
    host = hostname + ":" + port.decode("ascii") if port else hostname
    bracketed = "[" + hostname + "]" if ":" in hostname else hostname
    link_host = bracketed + ":" + port.decode("ascii") if port else bracketed

    source_type = _classify(hostname, parsed.path)
    if source_type is None:
        raise UnsupportedURL()
    scheme = parsed.scheme or "https"
    if scheme not in ("http", "https"):
        raise UnsupportedURL()
    if hostname != "localhost" and not is_ip(hostname):
        scheme = "https"

    cleaned = clean_path("/" + escaped_path(parsed))
    rest = escape(cleaned.encode("ascii"), PATH).decode("ascii")
    query = _filtered_query(parsed.query, hostname)
    if query:
        rest += "?" + query
    rest = rest.removesuffix("?")
    if hostname == "github.com":
        # trimGitHubURL: owner and repo only, no query, when the path has both.
        parts = cleaned.strip("/").split("/")
        if len(parts) >= 2:
            rest = escape(("/" + parts[0] + "/" + parts[1]).encode("ascii"), PATH).decode("ascii")
    normalized = scheme + "://" + escape(host.encode("utf-8"), HOST).decode("ascii") + rest
    link = scheme + "://" + escape(link_host.encode("utf-8"), HOST).decode("ascii") + rest

    return NormalizedURL(
        canonical_url=link,
        normalized_url=normalized,
        source_type=source_type,
        domain=hostname,
        source_key=source_key(normalized),
        note_path=note_path(source_type, hostname, normalized),
    )


def try_normalize_url(raw: str) -> NormalizedURL | None:
    """``normalize_url``, or None for text dbrain would not treat as a source URL."""
    try:
        return normalize_url(raw)
    except UnsupportedURL:
        return None


def source_key(canonical_url: str) -> str:
    """``"src:"`` plus the first 12 hex digits of sha256(canonical URL) (``shortHash``)."""
    return "src:" + _short_hash(canonical_url)


def slugify(value: str) -> str:
    """dbrain's ``linkextract.slugify``: ``[a-z0-9]`` runs joined by ``-``, at most 80 bytes.

    Like dbrain it trims ``-`` from both ends, again after cutting at 80, and falls back to
    ``"source"`` when nothing is left.
    """
    slug = _NON_SLUG.sub("-", go_lower(go_trim_space(value))).strip("-")
    if not slug:
        return "source"
    if len(slug) > 80:
        return slug[:80].strip("-")
    return slug


def note_path(source_type: str, domain: str, canonical_url: str) -> str:
    """Relative vault path of a source note (``vault.SourceNoteRelativePath``).

    The slug is built from the domain, or from the source type when the domain is empty, as in
    ``NormalizeCandidate``.
    """
    slug = slugify((domain or source_type) + "-" + _short_hash(canonical_url))
    return clean_path("sources/" + (source_type or "web") + "/" + slug + ".md")


def _short_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:12]


def _classify(hostname: str, path: bytes) -> str | None:
    """``classifySourceType``; None for hosts dbrain skips. ``path`` is the decoded path."""
    if hostname in _REJECTED_HOSTS:
        return None
    if hostname == "x.com":
        return "x_article" if path.startswith(b"/i/article/") else None
    if hostname == "github.com":
        return "github"
    if hostname in _YOUTUBE_HOSTS:
        return "youtube"
    if go_lower(go_decode(path)).endswith(".pdf"):
        return "pdf"
    return "web"


def _filtered_query(raw_query: bytes, hostname: str) -> str:
    """``filterQueryParams`` then ``url.Values.Encode``: tracking keys dropped, keys sorted."""
    values: dict[bytes, list[bytes]] = {}
    if raw_query.count(b"&") + 1 <= _MAX_QUERY_PARAMS:
        for pair in raw_query.split(b"&"):
            if not pair or b";" in pair:
                continue
            key, _, value = pair.partition(b"=")
            try:
                key, value = unescape(key, QUERY), unescape(value, QUERY)
            except ParseError:
                continue
            values.setdefault(key, []).append(value)
    youtube = hostname in _YOUTUBE_HOSTS
    encoded: list[bytes] = []
    for key in sorted(values):
        lower = go_lower(go_decode(key))
        if lower.startswith("utm_") or lower in _TRACKING_PARAMS:
            continue
        if youtube and lower in _YOUTUBE_NOISE:
            continue
        escaped_key = escape(key, QUERY)
        encoded.extend(escaped_key + b"=" + escape(value, QUERY) for value in values[key])
    return b"&".join(encoded).decode("ascii")


def is_web_url(url: str) -> bool:
    """Only http(s) URLs may become links or web rows (never ``javascript:``, ``data:`` ...)."""
    return url.strip().lower().startswith(("http://", "https://"))


URL_NOT_HELD = "Your brain does not hold the page at this URL."


def names_a_page(question: str) -> bool:
    """Is the question nothing but an http(s) URL (a page asked for by its address)?"""
    question = question.strip()
    return is_web_url(question) and not any(c.isspace() for c in question)


_SITE_LABEL = re.compile(r"[^\W_](?:[\w-]{0,61}[^\W_])?")


def site_domain(value: str) -> str:
    """The domain a ``site`` filter names, as web rows' domains are written (lower case, no
    ``www.`` or ``m.``, as dbrain strips them), from ``example.com``, ``*.example.com`` or a
    URL (or ``site:example.com``); ``""`` when it names no domain."""
    value = value.strip().lower().removeprefix("site:")
    if "://" in value:
        value = value.split("://", 1)[1]
    host = value.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0]
    host = host.removeprefix("*.").strip(".").removeprefix("www.").removeprefix("m.")
    labels = host.split(".")
    if len(host) > 253 or len(labels) < 2 or not all(_SITE_LABEL.fullmatch(x) for x in labels):
        return ""
    return host
