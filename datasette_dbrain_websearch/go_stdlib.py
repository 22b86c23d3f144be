"""Go's standard library as dbrain's URL code uses it, ported to Python on bytes as Go does:
``net/url``'s parsing and escaping, ``netip``'s address checks, ``path.Clean`` and the
``strings`` rules (``TrimSpace``, ``ToLower``, decoding as ``range`` does).

``urls`` builds dbrain's normalization on these, so it produces the string dbrain's Go code
would. The defaults are Go 1.26's (the toolchain dbrain's ``go.mod`` names): strict colons in
hosts, bracketed hosts checked like ``netip.ParseAddr``.
"""

from __future__ import annotations

from dataclasses import dataclass

# unicode.IsSpace: the White_Space property, which Go's strings.TrimSpace uses. Python's
# str.strip() would also remove \x1c-\x1f, which Go keeps (and url.Parse then rejects).
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# net/url encoding modes.
PATH, HOST, ZONE, USERINFO, QUERY, FRAGMENT = range(6)


class ParseError(Exception):
    """net/url would return an error."""


# ---------------------------------------------------------------------------------------------
# Go string helpers: dbrain lowercases with unicode.ToLower and decodes bytes as Go ranges do.


def go_trim_space(value: str) -> str:
    """Go's ``strings.TrimSpace``, which dbrain applies before parsing and when packing FTS text."""
    return value.strip(_GO_SPACE)


def go_decode(raw: bytes) -> str:
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


def go_lower(value: str) -> str:
    """``strings.ToLower``: simple per-rune mapping (Python's ``lower`` maps İ to two runes)."""
    if value.isascii():
        return value.lower()
    return "".join("i" if ch == "\u0130" else ch.lower() for ch in value)


# ---------------------------------------------------------------------------------------------
# path.Clean


def clean_path(path: str) -> str:
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
# net/url, as far as NormalizeCandidate uses it.


def _should_escape(c: int, mode: int) -> bool:
    if 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A:
        return False
    if mode in (HOST, ZONE) and c in b"!$&'()*+,;=:[]<>\"":
        return False
    if c in b"-_.~":
        return False
    if c in b"$&+,/:;=?@":
        if mode == PATH:
            return c == 0x3F
        if mode == USERINFO:
            return c in b"@/?:"
        if mode == QUERY:
            return True
        if mode == FRAGMENT:
            return False
    return not (mode == FRAGMENT and c in b"!()*")


_NEEDS_ESCAPE = tuple(tuple(_should_escape(c, mode) for c in range(256)) for mode in range(6))


def escape(value: bytes, mode: int) -> bytes:
    table = _NEEDS_ESCAPE[mode]
    out = bytearray()
    for c in value:
        if c == 0x20 and mode == QUERY:
            out.append(0x2B)
        elif table[c]:
            out += b"%%%02X" % c
        else:
            out.append(c)
    return bytes(out)


def _is_hex(c: int) -> bool:
    return 0x30 <= c <= 0x39 or 0x41 <= c <= 0x46 or 0x61 <= c <= 0x66


def unescape(value: bytes, mode: int) -> bytes:
    n = len(value)
    i = 0
    while i < n:
        c = value[i]
        if c == 0x25:
            if i + 2 >= n or not _is_hex(value[i + 1]) or not _is_hex(value[i + 2]):
                raise ParseError("invalid URL escape")
            triple = value[i : i + 3]
            byte = int(triple[1:], 16)
            if mode == HOST and byte < 0x80 and triple != b"%25":
                raise ParseError("invalid URL escape in host")
            if mode == ZONE and triple != b"%25" and byte != 0x20 and _NEEDS_ESCAPE[HOST][byte]:
                raise ParseError("invalid URL escape in zone")
            i += 3
            continue
        if mode in (HOST, ZONE) and c < 0x80 and _NEEDS_ESCAPE[mode][c]:
            raise ParseError("invalid character in host name")
        i += 1
    out = bytearray()
    i = 0
    while i < n:
        c = value[i]
        if c == 0x25:
            out.append(int(value[i + 1 : i + 3], 16))
            i += 3
            continue
        out.append(0x20 if c == 0x2B and mode == QUERY else c)
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
class ParsedURL:
    scheme: str
    host: bytes
    path: bytes
    raw_path: bytes
    query: bytes


def parse_url(raw: bytes) -> ParsedURL:
    """``url.Parse`` for URLs with an authority; anything without one cannot have a host."""
    before_fragment, _, fragment = raw.partition(b"#")
    if any(c < 0x20 or c == 0x7F for c in before_fragment):
        raise ParseError("invalid control character in URL")
    scheme, rest = _get_scheme(before_fragment)
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        rest, query = rest[:-1], b""
    else:
        rest, _, query = rest.partition(b"?")
    if not rest.startswith(b"//") or (not scheme and rest.startswith(b"///")):
        raise ParseError("no authority")
    authority, slash, path = rest[2:].partition(b"/")
    path = slash + path
    host = _parse_authority(authority)
    decoded_path = unescape(path, PATH)
    raw_path = b"" if escape(decoded_path, PATH) == path else path
    if fragment:
        unescape(fragment, FRAGMENT)
    return ParsedURL(scheme, host, decoded_path, raw_path, query)


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
                raise ParseError("missing protocol scheme")
            return raw[:i].decode("ascii").lower(), raw[i + 1 :]
        return "", raw
    return "", raw


def _parse_authority(authority: bytes) -> bytes:
    at = authority.rfind(b"@")
    host = _parse_host(authority[at + 1 :])
    if at >= 0:
        userinfo = authority[:at]
        if not all(c < 0x80 and _USERINFO_CHARS[c] for c in userinfo):
            raise ParseError("invalid userinfo")
        for part in userinfo.split(b":", 1):
            unescape(part, USERINFO)
    return host


def _parse_host(host: bytes) -> bytes:
    """``parseHost`` with Go 1.26's checks on IP literals and colons."""
    bracket = host.rfind(b"[")
    if bracket > 0:
        raise ParseError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise ParseError("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise ParseError("invalid port after host")
        literal = host[1:close]
        zone = literal.find(b"%25")
        if zone >= 0:
            address = unescape(literal[:zone], HOST) + unescape(literal[zone:], ZONE)
        else:
            address = unescape(literal, HOST)
        parsed = _parse_addr(address)
        if parsed is None or parsed[0]:
            raise ParseError("invalid IP-literal")
        return b"[" + address + b"]" + colon_port
    colon = host.find(b":")
    if colon >= 0 and not _valid_optional_port(host[colon:]):
        raise ParseError("invalid port after host")
    return unescape(host, HOST)


def split_host_port(host: bytes) -> tuple[bytes, bytes]:
    """``URL.Hostname`` and ``URL.Port``."""
    port = b""
    colon = host.rfind(b":")
    if colon >= 0 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith(b"[") and host.endswith(b"]"):
        host = host[1:-1]
    return host, port


def escaped_path(parsed: ParsedURL) -> str:
    """``URL.EscapedPath``: the raw path when it is a valid encoding, else the default one."""
    if parsed.raw_path and _valid_encoded(parsed.raw_path, PATH):
        return parsed.raw_path.decode("ascii")
    return escape(parsed.path, PATH).decode("ascii")


def is_ip(hostname: str) -> bool:
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
