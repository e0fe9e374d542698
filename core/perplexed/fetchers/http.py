"""The ``http`` fetch provider: the page itself, over HTTP, extracted here. Free.

httpx through the guarded client (connections only to addresses the trust boundary allows, every redirect hop
checked, at most 5 redirects, only ``http(s)``), the bounded decoder (body and decoded-size cap, default 8 MiB),
robots.txt (``protego``, cached per origin) unless ``respect_robots=False``, then extraction: HTML and XHTML with
``trafilatura`` (the ``fetch`` extra), PDFs with ``pypdf`` (the ``pdf`` extra), ``text/plain`` and
``text/markdown`` as they are. Other content types are ``unsupported_type``; a bot challenge or "enable
JavaScript" page is ``blocked``.

The network part is driven by the engine (:mod:`perplexed._fetch`); this module holds the pure parts: the request,
the response checks and the extraction.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from .._errors import ConfigError, DocumentError, ProviderError, Reason
from .._extract import body_kind, extract_body, interstitial, media_type
from ._base import FetchAnswer, FetchOptions, FetchProvider, page_failure

__all__ = ["DEFAULT_USER_AGENT", "MAX_REDIRECTS", "Http"]

DEFAULT_USER_AGENT = "perplexed-search/0.1 (+https://pypi.org/project/perplexed-search/)"
#: the robots.txt product token the default User-Agent is matched by
ROBOTS_TOKEN = "perplexed-search"
MAX_REDIRECTS = 5
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/markdown;q=0.9,text/plain;q=0.8,application/pdf;q=0.7,*/*;q=0.1"


class Http(FetchProvider):
    """The page itself, over HTTP (no key, free).

    Options: ``user_agent`` (default names the package; robots.txt rules are matched against its product
    token), ``resolver`` (a function ``(host, port) -> addresses``, sync or async, instead of the system
    resolver; for tests and split-horizon DNS), ``max_body_bytes`` (default 8 MiB, decoded), ``headers`` (extra
    request headers).
    """

    name = "http"
    direct: ClassVar[bool] = True
    default_price = 0.0
    extra_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, user_agent: str | None = None, resolver: Any = None,
                 headers: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if user_agent is not None and (not isinstance(user_agent, str) or not user_agent.strip()
                                       or any(c in user_agent for c in "\r\n")):
            raise ConfigError("user_agent of the http fetch provider must be a non-empty one-line string")
        if resolver is not None and not callable(resolver):
            raise ConfigError("resolver of the http fetch provider must be a function (host, port) -> addresses")
        self.user_agent = (user_agent or DEFAULT_USER_AGENT).strip()
        self.resolver = resolver
        self.extra_headers = dict(headers or {})

    @property
    def robots_token(self) -> str:
        """The name robots.txt rules are matched against: the User-Agent's first product token."""
        return self.user_agent.split("/", 1)[0].split(" ", 1)[0] or ROBOTS_TOKEN

    @property
    def base_url(self) -> str:  # the page is the URL: there is no API base
        return ""

    @property
    def configured(self) -> bool:
        return True

    def request_headers(self) -> dict[str, str]:
        return {"User-Agent": self.user_agent, "Accept": _ACCEPT, **self.extra_headers}

    def page_request(self, url: str | httpx.URL) -> httpx.Request:
        return httpx.Request("GET", url, headers=self.request_headers())

    def check_page(self, response: httpx.Response) -> None:
        """Refuse before reading the body: an error status, or a content type that is not read."""
        status = response.status_code
        if not 200 <= status < 300:
            raise page_failure(self, status, response.reason_phrase or "", response)
        ctype = response.headers.get("content-type")
        mtype = media_type(ctype)
        if mtype and body_kind(ctype, b"") is None and mtype not in ("application/octet-stream", "binary/octet-stream"):
            raise self.fail("unsupported_type", f"content type {mtype!r} is not fetched "
                            "(HTML, XHTML, plain text, Markdown and PDF are)", response)

    def parse_page(self, response: httpx.Response, body: bytes, url: str, options: FetchOptions) -> FetchAnswer:
        """Extract a fully read page (CPU only; the engine runs it off the event loop)."""
        ctype = response.headers.get("content-type")
        kind = body_kind(ctype, body)
        if kind is None:
            raise self.fail("unsupported_type", f"content type {media_type(ctype) or '(none)'!r} is not fetched", response)
        final_url = str(response.url)
        try:
            extracted, raw = extract_body(body, ctype, final_url, options.format)
        except DocumentError as exc:
            reason: Reason = "unsupported_type" if "pdf extra" in str(exc).lower() or "pip install" in str(exc) else "malformed"
            raise self.fail(reason, f"PDF: {exc}", response) from None
        if kind == "html":
            why = interstitial(raw, extracted.text, extracted.title)
            if why is not None:
                raise self.fail("blocked", f"{final_url} served {why}", response)
        return FetchAnswer(
            text=extracted.text,
            format=extracted.format,
            final_url=final_url,
            title=extracted.title,
            published=extracted.published,
            language=extracted.language,
            content_type=media_type(ctype) or None,
            status=response.status_code,
            cost=0.0 if self.price_override() is None else None,
            page_type=extracted.page_type,
            page_type_confidence=extracted.page_type_confidence,
            structured=extracted.structured,
        )

    def redirect_failure(self, response: httpx.Response, why: str) -> ProviderError:
        return self.fail("redirect", f"HTTP {response.status_code} redirect not followed ({why})", response)
