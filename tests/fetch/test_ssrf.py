"""The trust boundary's pure rules (perplexed.net._ssrf): every numeric spelling the C resolver reads, IPv6 forms
that carry an IPv4 address, the non-public blocks, allow_private. Table tests, no I/O."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from perplexed import InvalidRequest
from perplexed.net._ssrf import (  # private: the SSRF address rules are tested table-style
    EVERYTHING,
    NOT_AN_ADDRESS,
    NOTHING,
    check_literal,
    classify_address,
    host_address,
    is_allowed,
    parse_allow_private,
)

# host as it appears in a URL -> the address the C resolver means
SPELLINGS = [
    ("127.0.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),  # decimal
    ("0177.0.0.1", "127.0.0.1"),  # octal
    ("0x7f.1", "127.0.0.1"),  # hex, short
    ("0x7f000001", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"),  # short
    ("127.0.1", "127.0.0.1"),
    ("0x7F.0.0.1", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),  # trailing dot
    ("0", "0.0.0.0"),
    ("0x0", "0.0.0.0"),
    ("10.1", "10.0.0.1"),
    ("0xa9fea9fe", "169.254.169.254"),  # the metadata address
    ("2852039166", "169.254.169.254"),
    ("0251.0376.0251.0376", "169.254.169.254"),
    ("169.254.43518", "169.254.169.254"),
    ("127.0.0.%31", "127.0.0.1"),  # percent-encoded
    ("\uff11\uff12\uff17.\uff10.\uff10.\uff11", "127.0.0.1"),  # full-width digits (IDNA reads them as ASCII)
    ("127\u30020\u30020\u30021", "127.0.0.1"),  # ideographic full stops
    ("[::1]", "::1"),
    ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
    ("[::ffff:7f00:1]", "::ffff:7f00:1"),
    ("[::ffff:a9fe:a9fe]", "::ffff:a9fe:a9fe"),
    ("[0:0:0:0:0:ffff:7f00:1]", "::ffff:7f00:1"),
    ("[fe80::1%25eth0]", "fe80::1"),
]


@pytest.mark.parametrize(("host", "expected"), SPELLINGS)
def test_numeric_spellings_mean_the_address_the_c_resolver_reads(host: str, expected: str) -> None:
    assert host_address(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize("host", ["2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7f000001", "10.1", "0"])
def test_the_table_agrees_with_inet_aton(host: str) -> None:
    assert host_address(host) == ipaddress.IPv4Address(socket.inet_aton(host))


@pytest.mark.parametrize("host", ["1.2.3.4.5", "0x1g", "999.1.1.1", "08.1.1.1", "1.2.3.256", "4294967296", "0x1.0x2.0x3.0x400"])
def test_numeric_looking_hosts_that_are_no_address_are_flagged(host: str) -> None:
    assert host_address(host) == NOT_AN_ADDRESS


@pytest.mark.parametrize("host", ["example.com", "3com.com", "1password.com", "123.example", "xn--bcher-kva.example"])
def test_names_are_names(host: str) -> None:
    assert host_address(host) is None


REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"),
    ("100.64.0.1", "CGNAT"),
    ("100.127.255.255", "CGNAT"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("192.0.2.1", "reserved"),
    ("198.18.0.1", "reserved"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("fe80::1", "link-local"),
    ("ff02::1", "multicast"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::127.0.0.1", "loopback"),  # IPv4-compatible
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64
    ("2002:7f00:1::", "loopback"),  # 6to4
    ("2001:db8::1", "reserved"),
]


@pytest.mark.parametrize(("address", "kind"), REFUSED)
def test_non_public_addresses_are_classified(address: str, kind: str) -> None:
    ip = ipaddress.ip_address(address)
    assert classify_address(ip) == kind
    assert not is_allowed(ip)
    assert is_allowed(ip, EVERYTHING)


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
                                     "100.63.255.255", "100.128.0.1", "172.32.0.1", "2a00:1450:4001::1"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) is None
    assert is_allowed(ipaddress.ip_address(address))


def test_allow_private_takes_true_false_or_cidr_lists() -> None:
    assert parse_allow_private(None) is NOTHING
    assert parse_allow_private(False) is NOTHING
    assert parse_allow_private(True) is EVERYTHING
    allowed = parse_allow_private(["10.0.0.0/8", "fd00::/8"])
    assert is_allowed(ipaddress.ip_address("10.1.2.3"), allowed)
    assert is_allowed(ipaddress.ip_address("::ffff:10.1.2.3"), allowed)  # the mapped form of an allowed address
    assert is_allowed(ipaddress.ip_address("fd00::5"), allowed)
    assert not is_allowed(ipaddress.ip_address("127.0.0.1"), allowed)
    assert not is_allowed(ipaddress.ip_address("169.254.169.254"), allowed)
    assert parse_allow_private("10.0.0.0/8").networks == (ipaddress.ip_network("10.0.0.0/8"),)


@pytest.mark.parametrize("bad", ["not-a-net", ["10.0.0.0/8", "nope"], 3, [None], {"10.0.0.0/8": 1}])
def test_bad_allow_private_is_an_invalid_request_naming_it(bad: object) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_allow_private(bad)
    assert info.value.param == "allow_private"


@pytest.mark.parametrize("host", [h for h, _ in SPELLINGS] + ["1.2.3.4.5", "0x1g", "999.1.1.1"])
def test_check_literal_refuses_every_spelling_as_private_address(host: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        check_literal(f"http://{host}/", host)
    assert info.value.reason == "private_address"
    assert info.value.param == "url"


def test_check_literal_lets_names_and_public_addresses_through() -> None:
    assert check_literal("http://example.com/", "example.com") is None
    assert check_literal("http://8.8.8.8/", "8.8.8.8") == ipaddress.ip_address("8.8.8.8")
    assert check_literal("http://127.0.0.1/", "127.0.0.1", parse_allow_private(["127.0.0.0/8"])) is not None
