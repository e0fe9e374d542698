"""The agent tools (``web_search``, ``web_fetch``, ``answer``) declared once for MCP, LangChain and LlamaIndex,
and the portable JSON-schema rewrite they share."""
