"""The MCP server's transport (streamable HTTP that survives hostile clients) and the start-up and failure
texts; the server itself is :mod:`perplexed.mcp_server`."""
