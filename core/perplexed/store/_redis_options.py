"""The Redis store's URL and constructor options, checked (``RedisStore(url, ...)``)."""

from __future__ import annotations

import ssl
from typing import Any, Final

from perplexed._errors import ConfigError
from perplexed.store._resp import SSL_OPTIONS, ssl_context, tls_version

_OWN_QUERY = ("prefix", "cluster", "timeout_ms", "fleet_size")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _as_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"RedisStore: {name} must be true or false, got {value!r}")


def _as_timeout_ms(value: object) -> float:
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        number = None
    if isinstance(number, bool) or not isinstance(number, int | float) or not number > 0 or number == float("inf"):
        raise ConfigError(f"RedisStore: timeout_ms must be a positive number of milliseconds, got {value!r}")
    return float(number)


def _as_fleet_size(value: object) -> int:
    number: object = value
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ConfigError(f"RedisStore: fleet_size must be a whole number >= 1, got {value!r}")
    return number


_STANDALONE_QUERY: Final = ("db", "socket_connect_timeout", "socket_keepalive")
_CLUSTER_QUERY: Final = ("socket_connect_timeout", "socket_keepalive", "ssl_ca_certs", "ssl_ca_data", "ssl_cert_reqs",
                         "ssl_certfile", "ssl_keyfile", "ssl_check_hostname", "ssl_min_version", "ssl_ciphers")


def _client_options(scheme: str, query: list[tuple[str, str]], cluster: bool) -> tuple[dict[str, Any], float | None]:
    """The URL's client options, checked: each is honoured or refused (``ConfigError`` naming it). Returns the
    options to hand to the client and the connect timeout (seconds) when the URL sets one."""
    allowed = _CLUSTER_QUERY if cluster else _STANDALONE_QUERY + (SSL_OPTIONS if scheme == "rediss" else ())
    options: dict[str, Any] = {}
    connect: float | None = None
    for name, value in query:
        if name not in allowed:
            hint = (" (TLS options need a rediss:// URL)" if name.startswith("ssl_") and scheme != "rediss"
                    else " (use timeout_ms)" if name in ("socket_timeout", "timeout") else "")
            raise ConfigError(f"RedisStore: URL option {name!r} is not supported{' in cluster mode' if cluster else ''}"
                              f"{hint}; supported: {', '.join(sorted(allowed + _OWN_QUERY))}")
        if name == "socket_connect_timeout":
            try:
                connect = float(value)
            except ValueError:
                connect = None
            if connect is None or not 0 < connect < float("inf"):
                raise ConfigError(f"RedisStore: URL option 'socket_connect_timeout' must be seconds > 0, got {value!r}")
            options[name] = connect
        elif name == "socket_keepalive":
            if _as_bool(name, value) is not True:
                raise ConfigError("RedisStore: URL option 'socket_keepalive' cannot be turned off (it finds dead peers)")
        elif name == "db":
            if not value.strip().isdigit() or (cluster and int(value) != 0):
                raise ConfigError(f"RedisStore: URL option 'db' must be a database number, got {value!r}")
            options[name] = int(value)
        elif name == "ssl_min_version":
            try:
                options[name] = tls_version(value)
            except ValueError as exc:
                raise ConfigError(f"RedisStore: URL option 'ssl_min_version': {exc}") from None
        elif name in ("ssl_check_hostname",):
            options[name] = _as_bool(name, value)
        elif name == "ssl_cert_reqs":
            if value.strip().lower() not in ("none", "optional", "required", "cert_none", "cert_optional",
                                             "cert_required"):
                raise ConfigError(f"RedisStore: URL option 'ssl_cert_reqs' must be none, optional or required, "
                                  f"got {value!r}")
            options[name] = value.strip().lower().replace("cert_", "")
        else:
            options[name] = value
    if scheme == "rediss" and not cluster:
        try:
            ssl_context(options)  # files, password, ciphers: fail now, naming the problem, not on every call
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"RedisStore: the TLS options cannot be used ({type(exc).__name__}: {exc})") from None
    return options, connect
