"""The ``http`` fetch provider: the page itself, over HTTP, extracted here. Free.

httpx through the guarded client (connections only to addresses the trust boundary allows, every redirect hop
checked, at most 5 redirects, only ``http(s)``), the bounded decoder (body and decoded-size cap, default 8 MiB),
robots.txt (``protego``, cached per origin) unless ``respect_robots=False``, then extraction: HTML and XHTML with
``trafilatura`` (the ``fetch`` extra), PDFs with ``pypdf`` (the ``pdf`` extra), ``text/plain`` and
``text/markdown`` as they are. Other content types are ``unsupported_type``; a bot challenge or "enable
JavaScript" page is ``blocked``.

The network part is driven by the engine (:mod:`perplexed.operations._fetch`); this module holds the pure parts: the request,
the response checks and the extraction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from perplexed._errors import (
    ConfigError,
    DocumentError,
    ExtractionMemoryError,
    ProviderError,
    Reason,
    WorkerCrashed,
)
from perplexed.providers._fetching import (
    FetchAnswer,
    FetchOptions,
    FetchProvider,
    page_failure,
    status_reason,
)

if TYPE_CHECKING:  # extraction loads with the first page fetched, not with `import perplexed`; httpx with the first
    # request (resolving the http fetch provider, e.g. to check a fetch chain, needs no HTTP client: issue 35)
    import httpx

    from perplexed.extract._extract import Extracted

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
    #: trafilatura extracts HTML (it needs lxml_html_clean), protego reads robots.txt: the fetch extra
    requires: ClassVar[Mapping[str, tuple[tuple[str, str], ...]]] = {
        "fetch": (("trafilatura", "fetch"), ("lxml_html_clean", "fetch"), ("protego", "fetch")),
    }
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
        import httpx

        from perplexed.extract._worker import prewarm

        prewarm()  # an extraction worker starts while the page is on the network
        return httpx.Request("GET", url, headers=self.request_headers())

    def check_page(self, response: httpx.Response) -> None:
        """Refuse before reading the body: an error status, or a content type that is not read."""
        # extraction loads with the first page, not with `import perplexed`
        from perplexed.extract._extract import body_kind, media_type

        if status_reason(response.status_code) is not None:  # the status table, context "page"
            raise page_failure(self, response.status_code, response.reason_phrase or "", response)
        ctype = response.headers.get("content-type")
        mtype = media_type(ctype)
        if mtype and body_kind(ctype, b"") is None and mtype not in ("application/octet-stream", "binary/octet-stream"):
            raise self.fail("unsupported_type", f"content type {mtype!r} is not fetched "
                            "(HTML, XHTML, plain text, Markdown and PDF are)", response)

    def parse_page(self, response: httpx.Response, body: bytes, url: str, options: FetchOptions) -> FetchAnswer:
        """Extract a fully read page in this thread (CPU only). The engine calls :meth:`extract`, which runs the
        same extraction in a worker process bounded by the fetch's deadline."""
        from perplexed.extract._extract import extract_page

        ctype, final_url = self._readable(response, body)
        try:
            extracted, why = extract_page(body, ctype, final_url, options.format)
        except DocumentError as exc:
            raise self._pdf_failure(exc, response) from None
        return self._answer(response, extracted, why)

    async def extract(self, response: httpx.Response, body: bytes, url: str, options: FetchOptions) -> FetchAnswer:
        """:meth:`parse_page` in a worker process: killed when the caller's deadline passes (nothing goes on
        after the fetch returns), its memory capped (a page that needs more is ``body_too_large``)."""
        from perplexed.extract._extract import body_kind, check_fetch_extra
        from perplexed.extract._worker import extract_in_worker

        ctype, final_url = self._readable(response, body)
        if body_kind(ctype, body) == "html":
            check_fetch_extra()  # without the fetch extra, the error says to install it (not a worker's crash)
        try:
            extracted, why = await extract_in_worker(body, ctype, final_url, options.format)
        except DocumentError as exc:
            raise self._pdf_failure(exc, response) from None
        except ExtractionMemoryError as exc:
            raise self.fail("body_too_large", f"{final_url}: {exc}", response) from None
        except WorkerCrashed as exc:
            raise self.fail("malformed", f"{final_url}: {exc}", response) from None
        return self._answer(response, extracted, why)

    def _readable(self, response: httpx.Response, body: bytes) -> tuple[str | None, str]:
        from perplexed.extract._extract import body_kind, media_type

        ctype = response.headers.get("content-type")
        if body_kind(ctype, body) is None:
            raise self.fail("unsupported_type", f"content type {media_type(ctype) or '(none)'!r} is not fetched", response)
        return ctype, str(response.url)

    def _pdf_failure(self, exc: DocumentError, response: httpx.Response) -> ProviderError:
        reason: Reason = "unsupported_type" if "pdf extra" in str(exc).lower() or "pip install" in str(exc) else "malformed"
        return self.fail(reason, f"PDF: {exc}", response)

    def _answer(self, response: httpx.Response, extracted: Extracted, why: str | None) -> FetchAnswer:
        from perplexed.extract._extract import media_type

        final_url = str(response.url)
        if why is not None:
            raise self.fail("blocked", f"{final_url} served {why}", response)
        return FetchAnswer(
            text=extracted.text,
            format=extracted.format,
            final_url=final_url,
            title=extracted.title,
            published=extracted.published,
            language=extracted.language,
            content_type=media_type(response.headers.get("content-type")) or None,
            status=response.status_code,
            cost=0.0 if self.price_override() is None else None,
            page_type=extracted.page_type,
            page_type_confidence=extracted.page_type_confidence,
            structured=extracted.structured,
        )

    def redirect_failure(self, response: httpx.Response, why: str) -> ProviderError:
        return self.fail("redirect", f"HTTP {response.status_code} redirect not followed ({why})", response)
