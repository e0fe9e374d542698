"""langchain-tests standard suites for the search components, against the real local SearXNG.

The provider is named ``"searxng"``; its URL comes from settings (``SEARXNG_URL``, set per test by the
``searxng_env`` fixture), so the constructor parameters are plain data like a user's would be.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from langchain_perplexed import PerplexedRetriever, PerplexedSearchTool
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from lc_support import QUERY


class TestSearchToolUnit(ToolsUnitTests):
    @property
    def tool_constructor(self) -> type[BaseTool]:
        return PerplexedSearchTool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"provider": ["searxng", {"name": "tavily", "api_key": "tvly-not-a-real-key"}], "max_results": 3}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": QUERY, "max_results": 2, "exclude_domains": ["pinterest.com"], "recency": "year"}


@pytest.mark.integration
@pytest.mark.usefixtures("searxng_env")
class TestSearchToolIntegration(ToolsIntegrationTests):
    @property
    def tool_constructor(self) -> type[BaseTool]:
        return PerplexedSearchTool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"provider": "searxng", "max_results": 3}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": QUERY, "max_results": 2}


@pytest.mark.integration
@pytest.mark.usefixtures("searxng_env")
class TestRetrieverIntegration(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return PerplexedRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"provider": "searxng", "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUERY
