"""The trust boundary of fetching: which hosts a fetch may reach. Pure functions, no I/O.

An LLM may choose the URL a fetch goes to, so a URL whose host means a loopback, private, link-local (the cloud
metadata address ``169.254.169.254`` included), CGNAT, multicast, unspecified or reserved address is refused
before any provider is called. Numeric hosts count as the address they mean *as the C resolver reads them*
(``inet_aton``: decimal ``2130706433``, octal ``0177.0.0.1``, hex ``0x7f.1``, short ``127.1``), including
spellings that ``ipaddress`` or httpx reject: a host that looks numeric but is no address at all is refused too
(a resolver somewhere may still read it). IPv4-mapped, IPv4-compatible, NAT64, 6to4 and Teredo IPv6 forms are
judged by the IPv4 address they carry.

``allow_private`` opts in: ``True`` allows every non-public address, a list of networks in CIDR form allows
those (for intranet use).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from perplexed._errors import InvalidRequest

__all__ = [
    "NOT_AN_ADDRESS",
    "AllowPrivate",
    "Allowed",
    "classify_address",
    "host_address",
    "is_allowed",
    "parse_allow_private",
    "refuse",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
AllowPrivate = bool | Sequence[str]

#: the IPv4 blocks that are not public, and what each is called in a refusal
_V4_BLOCKS: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"),  # "this network": 0.0.0.0 connects to the local host on Linux
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "CGNAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "reserved"),
    ("192.88.99.0/24", "reserved"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "reserved"),
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # 255.255.255.255 (broadcast) included
)
_V6_BLOCKS: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "reserved"),  # discard-only
    ("2001:db8::/32", "reserved"),  # documentation
    ("2001:10::/28", "reserved"),  # ORCHID
    ("2001:20::/28", "reserved"),
    ("fc00::/7", "private"),  # unique local
    ("fe80::/10", "link-local"),
    ("fec0::/10", "reserved"),  # site-local (deprecated)
    ("ff00::/8", "multicast"),
    ("3fff::/20", "reserved"),  # documentation (RFC 9637)
)
_V4 = tuple((ipaddress.IPv4Network(net), kind) for net, kind in _V4_BLOCKS)
_V6 = tuple((ipaddress.IPv6Network(net), kind) for net, kind in _V6_BLOCKS)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_COMPAT = ipaddress.IPv6Network("::/96")  # IPv4-compatible (deprecated) ::a.b.c.d

#: what looks like a numeric host to the C resolver: dot-separated parts of digits or 0x-hex
_NUMERIC_PART = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")
_LOOKS_NUMERIC = re.compile(r"^[0-9][0-9a-zA-Z.]*$")


class Allowed:
    """What ``allow_private`` allows: ``everything`` (True), or the listed ``networks``."""

    __slots__ = ("everything", "networks")

    def __init__(self, everything: bool = False, networks: Iterable[Network] = ()) -> None:
        self.everything = everything
        self.networks = tuple(networks)

    def __repr__(self) -> str:
        if self.everything:
            return "Allowed(everything)"
        return f"Allowed({', '.join(str(n) for n in self.networks) or 'nothing'})"

    def __bool__(self) -> bool:
        return self.everything or bool(self.networks)

    def key(self) -> str:
        """A stable text form (cache keys, the CLI)."""
        return "all" if self.everything else ",".join(str(n) for n in self.networks)

    def covers(self, address: IPAddress) -> bool:
        if self.everything:
            return True
        return any(address.version == net.version and address in net for net in self.networks)


NOTHING = Allowed()
EVERYTHING = Allowed(everything=True)


def parse_allow_private(value: Any, param: str = "allow_private") -> Allowed:
    """``allow_private`` as given (None/False, True, a CIDR string or a list of them) -> :class:`Allowed`;
    :class:`~perplexed.InvalidRequest` naming ``param`` for anything else."""
    if isinstance(value, Allowed):
        return value
    if value is None or value is False:
        return NOTHING
    if value is True:
        return EVERYTHING
    items: list[Any]
    if isinstance(value, str):
        items = [v for v in value.split(",") if v.strip()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)
    else:
        raise InvalidRequest(
            f"{param} must be True, False or a list of networks in CIDR form (e.g. ['10.0.0.0/8']), "
            f"not {type(value).__name__}",
            param=param,
        )
    networks: list[Network] = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidRequest(f"{param} lists {item!r}, not a network in CIDR form", param=param)
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise InvalidRequest(
                f"{param} lists {item!r}, not a network in CIDR form (e.g. '10.0.0.0/8', 'fd00::/8')",
                param=param,
            ) from None
    return Allowed(networks=networks) if networks else NOTHING


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``host`` means to the C resolver's ``inet_aton`` (1 to 4 parts, each decimal, octal
    with a leading 0, or hex with 0x; the last part fills the remaining bytes), or None when it is not one."""
    parts = host.split(".")
    if host.endswith(".") and len(parts) > 1:  # a trailing dot is accepted by resolvers ("127.0.0.1.")
        parts = parts[:-1]
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        if not _NUMERIC_PART.match(part):
            return None
        if part[:2].lower() == "0x":
            values.append(int(part[2:] or "0", 16))
        elif len(part) > 1 and part[0] == "0":
            if any(c in "89" for c in part):
                return None
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 255 for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = 0
    for v in head:
        number = number << 8 | v
    number = number << (8 * (4 - len(head))) | last
    return ipaddress.IPv4Address(number)


#: what :func:`host_address` returns for a host that looks numeric (digits, dots, hex) but is no valid address
NOT_AN_ADDRESS = "not an address"


def host_address(host: str) -> IPAddress | str | None:
    """The address a URL host means when it is a literal (any numeric IPv4 spelling, a bracketed or bare IPv6
    with or without a zone), else None (a name); :data:`NOT_AN_ADDRESS` for a host that looks numeric
    but is no valid address in any reading (``1.2.3.4.5``, ``0x1g``, ``999.1``): such a host is refused."""
    text = unicodedata.normalize("NFKC", unquote(host)).strip().lower()
    for dot in "\u3002\uff0e\uff61":  # the full stops IDNA reads as "."
        text = text.replace(dot, ".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        text = text.split("%", 1)[0]  # a zone id (fe80::1%eth0)
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return NOT_AN_ADDRESS
    address = _inet_aton(text)
    if address is not None:
        return address
    body = text[:-1] if text.endswith(".") else text
    if body and (_LOOKS_NUMERIC.match(body) and _numeric_like(body)):
        return NOT_AN_ADDRESS
    return None


def _numeric_like(text: str) -> bool:
    """Whether every dot-separated part is made of digits or a 0x-prefixed run (what a resolver may try to
    read as a number): ``1.2.3.4.5``, ``0x7g.1``, ``09.1``; not ``1password.com`` nor ``3com.com``."""
    for part in text.split("."):
        if not part:
            return False
        if part.isdigit():
            continue
        if part[:2] == "0x" and part[2:].isalnum():
            continue
        return False
    return True


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _COMPAT and int(address) > 1:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64 or address in _NAT64_LOCAL:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def classify_address(address: IPAddress) -> str | None:
    """What kind of non-public address ``address`` is (``loopback``, ``private``, ``link-local``, ``CGNAT``,
    ``multicast``, ``unspecified``, ``reserved``), or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_v4(address)
        if embedded is not None:
            kind = classify_address(embedded)
            if kind is not None:
                return kind
            if address.ipv4_mapped is not None or address in _COMPAT:
                return None
        if address == ipaddress.IPv6Address("::"):
            return "unspecified"
        for net6, kind in _V6:
            if address in net6:
                return kind
        if not address.is_global and not (address in _NAT64 or address.sixtofour or address.teredo):
            return "reserved"
        return None
    for net4, kind in _V4:
        if address in net4:
            return kind
    return None


def is_allowed(address: IPAddress, allowed: Allowed = NOTHING) -> bool:
    """Whether a fetch may connect to ``address``: a public one, or one ``allowed`` covers."""
    if classify_address(address) is None:
        return True
    if allowed.covers(address):
        return True
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_v4(address)
        return embedded is not None and allowed.covers(embedded)
    return False


def refuse(url: str, what: str, *, param: str = "url") -> InvalidRequest:
    """The ``private_address`` refusal (an :class:`~perplexed.InvalidRequest` with ``reason``)."""
    return InvalidRequest(
        f"refused to fetch {url}: {what} (pass allow_private=True or a list of networks to allow it)",
        param=param,
        reason="private_address",
    )


def check_literal(url: str, host: str, allowed: Allowed = NOTHING) -> IPAddress | None:
    """Refuse a URL whose host is a literal non-public address (in any spelling); return the literal address
    (None for a name). Raises the ``private_address`` :class:`~perplexed.InvalidRequest`."""
    address = host_address(host)
    if isinstance(address, str):
        if allowed.everything:
            return None
        raise refuse(url, f"host {host!r} is a numeric spelling that is not a valid address")
    if address is None:
        return None
    if not is_allowed(address, allowed):
        raise refuse(url, f"{address} is a {classify_address(address)} address")
    return address


# --- one URL, read one way ------------------------------------------------------------------------------------

_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
#: code points no host may hold once percent-decoded (WHATWG's forbidden host code points)
_FORBIDDEN_HOST = frozenset("\x00\t\n\r #/:<>?@[\\]^|%")


def split_url(url: str, param: str = "url") -> Any:
    """``urlsplit`` of an ``http(s)`` URL with a host; :class:`~perplexed.InvalidRequest` otherwise."""
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError as exc:
        raise InvalidRequest(f"{param} is not a valid URL ({exc}): {url[:200]!r}", param=param) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidRequest(
            f"{param} must be an http(s) URL (or a file:// URL of an indexed document), got {url[:200]!r}",
            param=param,
        )
    if not parts.hostname:
        raise InvalidRequest(f"{param} has no host: {url[:200]!r}", param=param)
    return parts


def normalise_url(url: str, param: str = "url", allowed: Allowed = NOTHING) -> str:
    """An ``http(s)`` URL as a WHATWG parser (browsers, Node, most extraction services) reads it, which is then
    the only URL checked and sent to any provider: backslashes before the query are ``/``, the host is
    percent-decoded, lower-cased and a numeric IPv4 host written as dotted decimal. A URL that RFC 3986 parsers
    (Python's, httpx's) and WHATWG parsers read with different hosts is refused (``http://127.0.0.1\\@example.com/``
    is ``127.0.0.1`` to one and ``example.com`` to the other): ``private_address`` when either reading is a refused
    address, else a plain :class:`~perplexed.InvalidRequest` naming ``param``. Other schemes are returned as
    they are (the caller refuses them)."""
    match = _URL_SCHEME.match(url)
    if match is None or match.group(1).lower() not in ("http", "https"):
        return url
    scheme = match.group(1).lower()
    rest = url[match.end():]
    if rest[:2] != "//" or rest[2:3] in ("/", "\\"):
        raise InvalidRequest(f"{param} is ambiguous: write it as {scheme}://host/path (got {url[:200]!r})", param=param)
    rest = rest[2:]
    whatwg_end = _first_of(rest, "/\\?#")
    rfc_end = _first_of(rest, "/?#")
    whatwg_authority = rest[:whatwg_end]
    if rfc_end != whatwg_end:  # a backslash inside what RFC 3986 reads as the authority
        rfc_authority = rest[:rfc_end]
        for authority in (whatwg_authority, rfc_authority):
            host = _host_of(authority)
            address = host_address(host)
            if isinstance(address, str) and not allowed.everything:
                raise refuse(url, f"host {host!r} is a numeric spelling that is not a valid address", param=param)
            if address is not None and not isinstance(address, str) and not is_allowed(address, allowed):
                raise refuse(url, f"{address} is a {classify_address(address)} address", param=param)
        raise InvalidRequest(
            f"{param} is ambiguous: a backslash in its host part is read as '/' by browsers and as part of the "
            f"host by other parsers (got {url[:200]!r})",
            param=param,
        )
    userinfo, at, hostport = whatwg_authority.rpartition("@")
    host, port = _split_port(hostport)
    decoded = unquote(host)
    if decoded != host or any(ord(c) > 127 for c in decoded):
        decoded = unicodedata.normalize("NFKC", decoded)
        for dot in "\u3002\uff0e\uff61":
            decoded = decoded.replace(dot, ".")
    if not decoded.startswith("[") and any(c in _FORBIDDEN_HOST or ord(c) < 32 or c == "\x7f" for c in decoded):
        raise InvalidRequest(f"{param} has a host that is not a host name: {url[:200]!r}", param=param)
    if decoded != host:
        decoded = decoded.lower()
    if not decoded.startswith("["):
        literal = host_address(decoded)
        if isinstance(literal, ipaddress.IPv4Address):
            decoded = str(literal)  # 0x7f.1, 2130706433 and friends: the dotted address they mean
    tail = rest[whatwg_end:]
    cut = _first_of(tail, "?#")
    path = tail[:cut].replace("\\", "/")
    out = f"{match.group(1)}://{userinfo}{at}{decoded}{port}{path}{tail[cut:]}"
    return url if out == url else out


def _first_of(text: str, chars: str) -> int:
    positions = [i for i in (text.find(c) for c in chars) if i >= 0]
    return min(positions) if positions else len(text)


def _host_of(authority: str) -> str:
    return _split_port(authority.rpartition("@")[2])[0]


def _split_port(hostport: str) -> tuple[str, str]:
    """(host, ``:port`` or ""); a bracketed IPv6 host keeps its colons."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end >= 0:
            return hostport[: end + 1], hostport[end + 1 :]
        return hostport, ""
    host, colon, port = hostport.partition(":")
    return host, colon + port


__all__ += ["normalise_url"]
