"""LangChain over :func:`perplexed.fetch`: :class:`PerplexedLoader` (a document loader) and
:class:`PerplexedFetchTool` (the ``perplexed_fetch`` tool): page content through a chain of fetch providers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, ClassVar, Literal

import perplexed
import perplexed.integration
from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.tools import BaseTool, ToolException
from perplexed import InvalidRequest, Page, PerplexedError, UpstreamError, telemetry
from perplexed.catalogue import WEB_FETCH, AgentTool, option
from pydantic import BaseModel, ConfigDict, Field, create_model

from ._config import KnownNames
from ._portable import CatalogueArguments, input_model
from ._run import arun_core, run_core
from ._run import call_id as _call_id

__all__ = ["PerplexedFetchInput", "PerplexedFetchTool", "PerplexedLoader", "page_document"]


def page_document(page: Page) -> Document:
    """A :class:`Page` as a Document: ``page_content`` is the content, ``metadata`` is :meth:`Page.metadata`
    (``source`` = the URL asked, ``final_url``, ``title``, ``provider``, ``cost``, ``attempts``, ...)."""
    return Document(page_content=page.content, metadata=page.metadata())


class PerplexedLoader(BaseLoader):
    """Web pages as Documents through a chain of fetch providers (:func:`perplexed.fetch_many`).

    Setup::

        from langchain_perplexed import PerplexedLoader

        loader = PerplexedLoader(["https://example.com/a", "https://example.com/b"],
                                 provider=["http", "jina"], max_chars=20_000)
        docs = loader.load()               # or: async for doc in loader.alazy_load(): ...

    ``provider`` and ``**options`` are :func:`perplexed.fetch`'s (``format``, ``max_chars``, ``start_index``,
    ``min_chars``, ``allow_private``, ``respect_robots``, ``deadline_ms``, ...), validated here. ``concurrency``
    pages are fetched at once. A URL that cannot be fetched raises its :class:`perplexed.UpstreamError` when
    its turn comes (the Documents before it were yielded); ``continue_on_failure=True`` skips it instead.
    """

    def __init__(self, urls: str | Sequence[str], provider: Any = None, *, concurrency: int = 8,
                 continue_on_failure: bool = False, **options: Any) -> None:
        self.urls = [urls] if isinstance(urls, str) else list(urls)
        if not self.urls:
            raise InvalidRequest("urls is empty: give at least one URL", param="urls")
        self.provider = provider
        self.concurrency = concurrency
        self.continue_on_failure = continue_on_failure
        self.options = options
        for url in self.urls:  # every URL and option checked now, not at the first load
            perplexed.integration.prepare_fetch(url, provider, **options)

    def _documents(self, results: list[Page | UpstreamError]) -> Iterator[Document]:
        for item in results:
            if isinstance(item, Page):
                yield page_document(item)
            elif not self.continue_on_failure:
                raise item

    def lazy_load(self) -> Iterator[Document]:
        results = perplexed.fetch_many(self.urls, self.provider, self.concurrency, **self.options)
        yield from self._documents(results)

    async def alazy_load(self) -> AsyncIterator[Document]:
        results = await perplexed.afetch_many(self.urls, self.provider, self.concurrency, **self.options)
        for document in self._documents(results):
            yield document


#: The tool's description, as the catalogue declares it (the same on MCP and LlamaIndex).
FETCH_DESCRIPTION = WEB_FETCH.description

PerplexedFetchInput = input_model("PerplexedFetchInput", WEB_FETCH, "Arguments of the ``perplexed_fetch`` tool "
                                  "(generated from the core's tool catalogue).")


def fetch_tool_error(exc: PerplexedError) -> ToolException:
    """A :class:`ToolException` written for the model: why the page could not be read, and what to try."""
    if isinstance(exc, UpstreamError) and exc.attempts:
        parts = [f"{a.provider}: {a.reason or a.outcome.value}" + (f" ({a.error})" if a.error else "")
                 for a in exc.attempts]
        return ToolException("Could not read the page: " + "; ".join(parts) +
                             ". Try another URL (for example another search result).")
    if isinstance(exc, InvalidRequest):
        if getattr(exc, "reason", None) == "private_address":
            return ToolException(f"Refused: {exc}. Only public web pages can be read.")
        return ToolException(f"Invalid input: {exc}")
    return ToolException(f"Could not read the page: {exc}")


def _fetch_field(name: str) -> tuple[Any, Any]:
    """A fetch setting as a field, from the core's option catalogue: its type and help; its default the core's
    when the tool always sends it (``format``, ``allow_private``, ``respect_robots``), else ``None``."""
    declared = option(name)
    sent = name in ("format", "allow_private", "respect_robots")
    return ((declared.annotation if sent else declared.annotation | None),
            Field(declared.default if sent else None, description=declared.help))


#: The fetch settings of the tool (not the model's to change), generated from the option catalogue.
_FetchSettings: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "_FetchSettings", __module__=__name__,
    **{name: _fetch_field(name) for name in ("format", "min_chars", "allow_private", "respect_robots",
                                             "provider_timeout_ms", "deadline_ms")},
)


class PerplexedFetchTool(KnownNames, CatalogueArguments, _FetchSettings, BaseTool):
    """Reading a web page as a LangChain tool (``perplexed_fetch``), with ``content_and_artifact``: the model
    sees the title, URL and content (a slice, with the ``start_index`` of the next one when cut); the artifact
    is the page as a Document (metadata as :class:`PerplexedLoader`'s).

    Setup::

        from langchain_perplexed import PerplexedFetchTool

        tool = PerplexedFetchTool(provider=["http", "jina"], max_chars=8000)

    The model passes ``url`` and may pass ``max_chars`` and ``start_index``. The tool's settings (``provider``,
    ``format``, ``min_chars``, ``allow_private``, ``respect_robots``, ``deadline_ms``, ``provider_timeout_ms``,
    and ``fetch_options`` for any other :func:`perplexed.fetch` option) are not the model's to change: a private
    or loopback address is refused unless the tool was built with ``allow_private``. A failure raises
    :class:`~langchain_core.tools.ToolException` written for the model (with the typed core error as its
    ``__cause__``, attempts and cost included).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    catalogue: ClassVar[AgentTool] = WEB_FETCH
    name: str = WEB_FETCH.name
    description: str = WEB_FETCH.description
    args_schema: type[BaseModel] = PerplexedFetchInput
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    provider: Any = None
    """A fetch-provider name, dict, instance, function, or a list of these (default ``["http"]``)."""
    max_chars: int = Field(default=8000, ge=1)
    """Characters of content per call unless the model asks for another number."""
    fetch_options: dict[str, Any] | None = None
    """Other :func:`perplexed.fetch` options (a provider's own, ``max_age_s``, governance)."""

    def model_post_init(self, context: Any) -> None:
        perplexed.integration.prepare_fetch("https://example.com/", self.provider, **self._options(None, None))

    def _options(self, max_chars: int | None, start_index: int | None) -> dict[str, Any]:
        settings = self.__dict__  # the settings fields are generated from the option catalogue (_FetchSettings)
        options = {**(self.fetch_options or {}), "format": settings.get("format"),
                   "max_chars": max_chars or self.max_chars, "min_chars": settings.get("min_chars"),
                   "allow_private": settings.get("allow_private"), "respect_robots": settings.get("respect_robots"),
                   "provider_timeout_ms": settings.get("provider_timeout_ms"),
                   "deadline_ms": settings.get("deadline_ms"), "start_index": start_index}
        return {k: v for k, v in options.items() if v is not None}

    def _run(self, url: str, max_chars: int | None = None, start_index: int | None = None,
             run_manager: CallbackManagerForToolRun | None = None) -> tuple[str, list[Document]]:
        with telemetry.tool_span(self.name, {"url": url}, call_id=_call_id(run_manager)):
            try:
                page = run_core(perplexed.fetch, run_manager, url, self.provider, **self._options(max_chars, start_index))
            except (UpstreamError, InvalidRequest) as exc:
                raise fetch_tool_error(exc) from exc
            return page.for_model(), [page_document(page)]

    async def _arun(self, url: str, max_chars: int | None = None, start_index: int | None = None,
                    run_manager: AsyncCallbackManagerForToolRun | None = None) -> tuple[str, list[Document]]:
        with telemetry.tool_span(self.name, {"url": url}, call_id=_call_id(run_manager)):
            try:
                page = await arun_core(perplexed.afetch, run_manager, url, self.provider,
                                       **self._options(max_chars, start_index))
            except (UpstreamError, InvalidRequest) as exc:
                raise fetch_tool_error(exc) from exc
            return page.for_model(), [page_document(page)]
