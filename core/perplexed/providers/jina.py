"""Jina Reader as a fetch provider: ``POST {base}/`` with ``{"url": ...}`` and ``Accept: application/json``.

The key is optional (``JINA_API_KEY``; without one Jina rate-limits harder). ``X-Return-Format`` asks for
``markdown`` or ``text``; ``max_age_s`` becomes ``X-Cache-Tolerance`` (seconds). The reply is
``{code, status, data: {title, url, content, publishedTime, usage: {tokens}}}``. ⚠ Jina bills by output tokens:
the cost is ``usage.tokens`` times ``usd_per_token`` (default 0.05 USD per million, ⚠ unverified: set yours);
keyless calls cost nothing. Base URL: ``base_url=`` or ``JINA_READER_URL`` (default ``https://r.jina.ai``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import httpx

from perplexed._errors import ConfigError
from perplexed.providers._base import parse_published
from perplexed.providers._fetching import (
    FetchAnswer,
    FetchOptions,
    FetchProvider,
    page_failure,
    status_reason,
)

__all__ = ["Jina"]


class Jina(FetchProvider):
    """Jina Reader (``r.jina.ai``). Options: ``usd_per_token`` (default 5e-8), ``target_selector`` /
    ``remove_selector`` (CSS selectors, ``X-Target-Selector`` / ``X-Remove-Selector``), ``timeout_s``
    (``X-Timeout``)."""

    name = "jina"
    env_key = "JINA_API_KEY"
    env_base_url = "JINA_READER_URL"
    default_base_url = "https://r.jina.ai"
    default_usd_per_token: ClassVar[float] = 0.05 / 1_000_000
    default_price = 0.0
    extra_options: ClassVar[tuple[str, ...]] = ("usd_per_token", "target_selector", "remove_selector", "timeout_s")

    @property
    def max_redirects(self) -> int:
        return 0

    @property
    def configured(self) -> bool:
        return True  # the key is optional

    def _key(self) -> str | None:
        try:
            return self.api_key()
        except ConfigError:
            return None

    def build_fetch_request(self, url: str, options: FetchOptions) -> httpx.Request:
        headers = self.headers(**{"X-Return-Format": "markdown" if options.format == "markdown" else "text"})
        headers["Content-Type"] = "application/json"
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if options.max_age_s is not None:
            headers["X-Cache-Tolerance"] = str(math.ceil(options.max_age_s))
            if options.max_age_s == 0:
                headers["X-No-Cache"] = "true"
        for option, header in (("target_selector", "X-Target-Selector"), ("remove_selector", "X-Remove-Selector"),
                               ("timeout_s", "X-Timeout")):
            value = self.option(options, option)
            if value is not None:
                headers[header] = str(value)
        return httpx.Request("POST", f"{self.base_url}/", json={"url": url}, headers=headers)

    def error_message(self, response: httpx.Response) -> str:
        body = _json_or_none(response)
        if isinstance(body, dict):  # Jina's words for a page it could not read
            return str(body.get("readableMessage") or body.get("message") or "")[:200]
        return super().error_message(response)

    def parse_fetch_response(self, response: httpx.Response, url: str, options: FetchOptions) -> FetchAnswer:
        # the status table reads Jina's 422 (the target could not be read), 451 (the domain is refused) and a
        # 400 about the URL as the page's failure, not ours
        self.check_status(response, url=url, context="fetch")
        data = self.json_object(response)
        code = data.get("code")
        if isinstance(code, int) and status_reason(code) is not None:
            raise page_failure(self, code, str(data.get("message") or data.get("readableMessage") or ""), response)
        page = data.get("data")
        if not isinstance(page, dict):
            raise self.fail("malformed", "Jina reply has no data object", response)
        content = page.get("content") or page.get("text") or ""
        if not isinstance(content, str):
            raise self.fail("malformed", "Jina reply's data.content is not text", response)
        usage = page.get("usage") if isinstance(page.get("usage"), dict) else data.get("usage")
        tokens = usage.get("tokens") if isinstance(usage, dict) else None
        cost = None
        if self.price_override() is None:
            rate: Any = self.option(options, "usd_per_token", self.default_usd_per_token)
            billed = isinstance(tokens, int | float) and not isinstance(tokens, bool) and self._key() is not None
            cost = float(tokens) * float(rate) if billed and tokens is not None else 0.0
        return FetchAnswer(
            text=content.strip(),
            format=options.format,
            final_url=str(page.get("url") or url),
            title=str(page.get("title") or ""),
            published=parse_published(page.get("publishedTime")),
            language=page.get("language") if isinstance(page.get("language"), str) else None,
            cost=cost,
        )


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None

