"""dbrain's URL normalization, reproduced byte for byte.

dbrain dedupes sources by string equality on ``sources.normalized_url`` and derives
``source_key`` and ``note_path`` from that string (``NormalizeCandidate`` in
``internal/linkextract/normalize.go``). Anything this plugin looks up or writes must therefore
produce exactly the string dbrain's Go code would, quirks included. The Go code leans on
``net/url`` and ``path.Clean``; the private helpers below port the parts it uses, on bytes as Go
does, with the defaults of Go 1.26 (the toolchain dbrain's ``go.mod`` names): strict colons in
hosts, bracketed hosts checked like ``netip.ParseAddr``, at most 10,000 query parameters.

Quirks kept on purpose because dbrain has them:

- the path is escaped twice: ``path.Clean`` runs on the *escaped* path, which is then stored in
  ``URL.Path`` and escaped again by ``URL.String``, so ``/caf%C3%A9`` becomes ``/caf%25C3%25A9``;
- an IPv6 host loses its brackets (``http://[::1]:8080/`` becomes ``http://::1:8080/``);
- an explicit port is kept even when it is the default one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

__all__ = [
    "NormalizedURL",
    "UnsupportedURL",
    "go_trim_space",
    "normalize_url",
    "note_path",
    "site_domain",
    "slugify",
    "source_key",
    "try_normalize_url",
]

# unicode.IsSpace: the White_Space property, which Go's strings.TrimSpace uses. Python's
# str.strip() would also remove \x1c-\x1f, which Go keeps (and url.Parse then rejects).
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_TRACKING_PARAMS = frozenset({"fbclid", "gclid", "igshid", "ref_src", "si"})
_YOUTUBE_HOSTS = frozenset({"youtube.com", "youtu.be", "www.youtube.com"})
_YOUTUBE_NOISE = frozenset({"t", "start", "feature"})
_REJECTED_HOSTS = frozenset({"t.co", "pbs.twimg.com", "video.twimg.com"})
_MAX_QUERY_PARAMS = 10_000
_NON_SLUG = re.compile(r"[^a-z0-9]+")

# net/url encoding modes.
_PATH, _HOST, _ZONE, _USERINFO, _QUERY, _FRAGMENT = range(6)


class UnsupportedURL(ValueError):
    """dbrain would refuse this URL: unparseable, no host, not http(s), or a skipped host."""

    def __init__(self, message: str = "unsupported or invalid URL") -> None:
        super().__init__(message)


class _ParseError(Exception):
    """net/url would return an error."""


@dataclass(frozen=True)
class NormalizedURL:
    """What dbrain stores for a source created from a URL (``model.SourceCandidate``)."""

    canonical_url: str
    normalized_url: str
    source_type: str
    domain: str
    source_key: str
    note_path: str


def go_trim_space(value: str) -> str:
    """Go's ``strings.TrimSpace``, which dbrain applies before parsing and when packing FTS text."""
    return value.strip(_GO_SPACE)


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
        parsed = _parse(trimmed.encode("utf-8"))
    except (UnicodeEncodeError, _ParseError):
        raise UnsupportedURL() from None
    if not parsed.host:
        raise UnsupportedURL()

    raw_hostname, port = _split_host_port(parsed.host)
    hostname = _go_lower(_go_decode(raw_hostname))
    hostname = hostname.removeprefix("www.").removeprefix("m.")
    if hostname in ("twitter.com", "mobile.twitter.com"):
        hostname = "x.com"
    host = hostname + ":" + port.decode("ascii") if port else hostname

    source_type = _classify(hostname, parsed.path)
    if source_type is None:
        raise UnsupportedURL()
    scheme = parsed.scheme or "https"
    if scheme not in ("http", "https"):
        raise UnsupportedURL()
    if hostname != "localhost" and not _is_ip(hostname):
        scheme = "https"

    cleaned = _clean_path("/" + _escaped_path(parsed))
    prefix = scheme + "://" + _escape(host.encode("utf-8"), _HOST).decode("ascii")
    canonical = prefix + _escape(cleaned.encode("ascii"), _PATH).decode("ascii")
    query = _filtered_query(parsed.query, hostname)
    if query:
        canonical += "?" + query
    canonical = canonical.removesuffix("?")
    if hostname == "github.com":
        # trimGitHubURL: owner and repo only, no query, when the path has both.
        parts = cleaned.strip("/").split("/")
        if len(parts) >= 2:
            repo_path = "/" + parts[0] + "/" + parts[1]
            canonical = prefix + _escape(repo_path.encode("ascii"), _PATH).decode("ascii")

    return NormalizedURL(
        canonical_url=canonical,
        normalized_url=canonical,
        source_type=source_type,
        domain=hostname,
        source_key=source_key(canonical),
        note_path=note_path(source_type, hostname, canonical),
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
    slug = _NON_SLUG.sub("-", _go_lower(go_trim_space(value))).strip("-")
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
    return _clean_path("sources/" + (source_type or "web") + "/" + slug + ".md")


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
    if _go_lower(_go_decode(path)).endswith(".pdf"):
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
                key, value = _unescape(key, _QUERY), _unescape(value, _QUERY)
            except _ParseError:
                continue
            values.setdefault(key, []).append(value)
    youtube = hostname in _YOUTUBE_HOSTS
    encoded: list[bytes] = []
    for key in sorted(values):
        lower = _go_lower(_go_decode(key))
        if lower.startswith("utm_") or lower in _TRACKING_PARAMS:
            continue
        if youtube and lower in _YOUTUBE_NOISE:
            continue
        escaped_key = _escape(key, _QUERY)
        encoded.extend(escaped_key + b"=" + _escape(value, _QUERY) for value in values[key])
    return b"&".join(encoded).decode("ascii")


def _clean_path(path: str) -> str:
    """Go's ``path.Clean``: resolves ``.`` and ``..``, collapses and drops trailing slashes."""
    if not path:
        return "."
    rooted = path.startswith("/")
    stack: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if stack and stack[-1] != "..":
                stack.pop()
            elif not rooted:
                stack.append("..")
            continue
        stack.append(segment)
    joined = "/".join(stack)
    if rooted:
        return "/" + joined
    return joined or "."


# ---------------------------------------------------------------------------------------------
# Go string helpers: dbrain lowercases with unicode.ToLower and decodes bytes as Go ranges do.


def _go_decode(raw: bytes) -> str:
    """Decode like Go's ``for range`` over a string: each invalid byte becomes U+FFFD."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    i = 0
    while i < len(raw):
        lead = raw[i]
        width = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        try:
            out.append(raw[i : i + width].decode("utf-8"))
            i += width
        except UnicodeDecodeError:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def _go_lower(value: str) -> str:
    """``strings.ToLower``: simple per-rune mapping (Python's ``lower`` maps İ to two runes)."""
    if value.isascii():
        return value.lower()
    return "".join("i" if ch == "\u0130" else ch.lower() for ch in value)


# ---------------------------------------------------------------------------------------------
# net/url, as far as NormalizeCandidate uses it.


def _should_escape(c: int, mode: int) -> bool:
    if 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A:
        return False
    if mode in (_HOST, _ZONE) and c in b"!$&'()*+,;=:[]<>\"":
        return False
    if c in b"-_.~":
        return False
    if c in b"$&+,/:;=?@":
        if mode == _PATH:
            return c == 0x3F
        if mode == _USERINFO:
            return c in b"@/?:"
        if mode == _QUERY:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and c in b"!()*")


_NEEDS_ESCAPE = tuple(tuple(_should_escape(c, mode) for c in range(256)) for mode in range(6))


def _escape(value: bytes, mode: int) -> bytes:
    table = _NEEDS_ESCAPE[mode]
    out = bytearray()
    for c in value:
        if c == 0x20 and mode == _QUERY:
            out.append(0x2B)
        elif table[c]:
            out += b"%%%02X" % c
        else:
            out.append(c)
    return bytes(out)


def _is_hex(c: int) -> bool:
    return 0x30 <= c <= 0x39 or 0x41 <= c <= 0x46 or 0x61 <= c <= 0x66


def _unescape(value: bytes, mode: int) -> bytes:
    n = len(value)
    i = 0
    while i < n:
        c = value[i]
        if c == 0x25:
            if i + 2 >= n or not _is_hex(value[i + 1]) or not _is_hex(value[i + 2]):
                raise _ParseError("invalid URL escape")
            triple = value[i : i + 3]
            byte = int(triple[1:], 16)
            if mode == _HOST and byte < 0x80 and triple != b"%25":
                raise _ParseError("invalid URL escape in host")
            if mode == _ZONE and triple != b"%25" and byte != 0x20 and _NEEDS_ESCAPE[_HOST][byte]:
                raise _ParseError("invalid URL escape in zone")
            i += 3
            continue
        if mode in (_HOST, _ZONE) and c < 0x80 and _NEEDS_ESCAPE[mode][c]:
            raise _ParseError("invalid character in host name")
        i += 1
    out = bytearray()
    i = 0
    while i < n:
        c = value[i]
        if c == 0x25:
            out.append(int(value[i + 1 : i + 3], 16))
            i += 3
            continue
        out.append(0x20 if c == 0x2B and mode == _QUERY else c)
        i += 1
    return bytes(out)


def _valid_encoded(value: bytes, mode: int) -> bool:
    table = _NEEDS_ESCAPE[mode]
    return all(c in b"!$&'()*+,;=:@[]%" or not table[c] for c in value)


# validUserinfo: the bytes url.Parse accepts before the "@".
_USERINFO_CHARS = tuple(chr(c).isalnum() or chr(c) in "-._:~!$&'()*+,;=%@" for c in range(0x80))


def _valid_optional_port(port: bytes) -> bool:
    return port == b"" or (port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:]))


@dataclass(frozen=True)
class _ParsedURL:
    scheme: str
    host: bytes
    path: bytes
    raw_path: bytes
    query: bytes


def _parse(raw: bytes) -> _ParsedURL:
    """``url.Parse`` for URLs with an authority; anything without one cannot have a host."""
    before_fragment, _, fragment = raw.partition(b"#")
    if any(c < 0x20 or c == 0x7F for c in before_fragment):
        raise _ParseError("invalid control character in URL")
    scheme, rest = _get_scheme(before_fragment)
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        rest, query = rest[:-1], b""
    else:
        rest, _, query = rest.partition(b"?")
    if not rest.startswith(b"//") or (not scheme and rest.startswith(b"///")):
        raise _ParseError("no authority")
    authority, slash, path = rest[2:].partition(b"/")
    path = slash + path
    host = _parse_authority(authority)
    decoded_path = _unescape(path, _PATH)
    raw_path = b"" if _escape(decoded_path, _PATH) == path else path
    if fragment:
        _unescape(fragment, _FRAGMENT)
    return _ParsedURL(scheme, host, decoded_path, raw_path, query)


def _get_scheme(raw: bytes) -> tuple[str, bytes]:
    for i, c in enumerate(raw):
        if 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A:
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return "", raw
            continue
        if c == 0x3A:
            if i == 0:
                raise _ParseError("missing protocol scheme")
            return raw[:i].decode("ascii").lower(), raw[i + 1 :]
        return "", raw
    return "", raw


def _parse_authority(authority: bytes) -> bytes:
    at = authority.rfind(b"@")
    host = _parse_host(authority[at + 1 :])
    if at >= 0:
        userinfo = authority[:at]
        if not all(c < 0x80 and _USERINFO_CHARS[c] for c in userinfo):
            raise _ParseError("invalid userinfo")
        for part in userinfo.split(b":", 1):
            _unescape(part, _USERINFO)
    return host


def _parse_host(host: bytes) -> bytes:
    """``parseHost`` with Go 1.26's checks on IP literals and colons."""
    bracket = host.rfind(b"[")
    if bracket > 0:
        raise _ParseError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise _ParseError("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise _ParseError("invalid port after host")
        literal = host[1:close]
        zone = literal.find(b"%25")
        if zone >= 0:
            address = _unescape(literal[:zone], _HOST) + _unescape(literal[zone:], _ZONE)
        else:
            address = _unescape(literal, _HOST)
        parsed = _parse_addr(address)
        if parsed is None or parsed[0]:
            raise _ParseError("invalid IP-literal")
        return b"[" + address + b"]" + colon_port
    colon = host.find(b":")
    if colon >= 0 and not _valid_optional_port(host[colon:]):
        raise _ParseError("invalid port after host")
    return _unescape(host, _HOST)


def _split_host_port(host: bytes) -> tuple[bytes, bytes]:
    """``URL.Hostname`` and ``URL.Port``."""
    port = b""
    colon = host.rfind(b":")
    if colon >= 0 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith(b"[") and host.endswith(b"]"):
        host = host[1:-1]
    return host, port


def _escaped_path(parsed: _ParsedURL) -> str:
    """``URL.EscapedPath``: the raw path when it is a valid encoding, else the default one."""
    if parsed.raw_path and _valid_encoded(parsed.raw_path, _PATH):
        return parsed.raw_path.decode("ascii")
    return _escape(parsed.path, _PATH).decode("ascii")


def _is_ip(hostname: str) -> bool:
    """``net.ParseIP(hostname) != nil``: a valid IPv4 or IPv6 address without a zone."""
    parsed = _parse_addr(hostname.encode("utf-8"))
    return parsed is not None and not parsed[1]


def _parse_addr(value: bytes) -> tuple[bool, bool] | None:
    """``netip.ParseAddr``: None when invalid, else (is IPv4, has a zone)."""
    for c in value:
        if c == 0x2E:
            return (True, False) if _valid_ipv4(value) else None
        if c == 0x3A:
            return _parse_ipv6(value)
        if c == 0x25:
            return None
    return None


def _valid_ipv4(value: bytes) -> bool:
    number = dots = digits = 0
    for i, c in enumerate(value):
        if 0x30 <= c <= 0x39:
            if digits == 1 and number == 0:
                return False
            number = number * 10 + c - 0x30
            digits += 1
            if number > 255:
                return False
        elif c == 0x2E:
            if i == 0 or i == len(value) - 1 or value[i - 1] == 0x2E or dots == 3:
                return False
            dots += 1
            number = digits = 0
        else:
            return False
    return dots == 3


def _parse_ipv6(value: bytes) -> tuple[bool, bool] | None:
    rest, percent, zone = value.partition(b"%")
    if percent and not zone:
        return None
    ellipsis = -1
    if rest.startswith(b"::"):
        ellipsis = 0
        rest = rest[2:]
        if not rest:
            return False, bool(percent)
    filled = 0
    while filled < 16:
        digits = accumulator = 0
        while digits < len(rest) and _is_hex(rest[digits]):
            accumulator = (accumulator << 4) + int(rest[digits : digits + 1], 16)
            if digits > 3 or accumulator > 0xFFFF:
                return None
            digits += 1
        if digits == 0:
            return None
        if digits < len(rest) and rest[digits] == 0x2E:
            if (ellipsis < 0 and filled != 12) or filled + 4 > 16 or not _valid_ipv4(rest):
                return None
            rest = b""
            filled += 4
            break
        filled += 2
        rest = rest[digits:]
        if not rest:
            break
        if rest[0] != 0x3A or len(rest) == 1:
            return None
        rest = rest[1:]
        if rest[0] == 0x3A:
            if ellipsis >= 0:
                return None
            ellipsis = filled
            rest = rest[1:]
            if not rest:
                break
    if rest:
        return None
    if (filled < 16 and ellipsis < 0) or (filled >= 16 and ellipsis >= 0):
        return None
    return False, bool(percent)


def is_web_url(url: str) -> bool:
    """Only http(s) URLs may become links or web rows (never ``javascript:``, ``data:`` ...)."""
    return url.strip().lower().startswith(("http://", "https://"))


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
