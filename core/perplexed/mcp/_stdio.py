"""``perplexed mcp`` on stdio without the ``mcp`` SDK: strict JSON-RPC 2.0, one message a line.

The SDK's import alone (its client, its server, two protocol versions of pydantic models, anyio, starlette)
costs several times a whole ``perplexed search``; a desktop client spawns ``perplexed mcp`` for every session,
so the stdio transport is served here, by a loop that imports nothing beyond the standard library. It serves
the tools :mod:`perplexed.mcp_server` builds for the SDK server (the same catalogue entries, argument checks,
output models, texts and error texts: handed in, never declared here) and answers as the SDK server (``mcp``
2.x, :func:`perplexed.mcp_server.create_server`) answers over stdio, message for message:

- **both protocol eras**, chosen by the client's first request as the SDK does: the ``initialize`` handshake
  (2024-11-05 to 2025-11-25, what ``mcp`` 1.x clients speak: the client's version echoed when supported, else
  the latest; ``notifications/initialized``; ``ping``) or the 2026-07-28 per-request envelope (``_meta``
  carrying the protocol version and client capabilities on every request; ``server/discover``; each result
  stamped with ``resultType`` and the ``serverInfo``; ``subscriptions/listen`` acknowledged and held open);
- ``tools/list``, ``tools/call`` (an unknown tool or bad arguments: an ``isError`` result), the empty
  resource, template and prompt lists, ``resources/read`` and ``prompts/get`` refused as the SDK refuses them;
  ``logging/setLevel`` and ``completion/complete`` are not served (-32601), as the SDK server does not serve them;
- progress notifications for requests carrying ``_meta.progressToken``, ``notifications/cancelled`` (the
  call is cancelled and never answered), requests served concurrently, -32601 for unknown methods, -32602 for
  malformed parameters; a line that is not one JSON-RPC message (bad JSON, a batch, no ``jsonrpc``) is
  dropped without an answer, as the SDK drops it;
- EOF on stdin ends the server: calls still running are cancelled and answered "Connection closed" (-32000).

While serving, file descriptor 0 reads the null device and 1 writes to stderr (as the SDK's stdio transport
arranges), so nothing a library prints can corrupt the wire. ``PERPLEXED_MCP_SDK=1`` makes ``perplexed mcp``
serve stdio with the SDK server instead (the escape hatch). ``tests/mcp/test_mcp_stdio_differential.py`` sends
the same messages to both and compares the answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from perplexed._logs import get_logger

__all__ = ["HANDSHAKE_VERSIONS", "MODERN_VERSIONS", "StdioServer", "StdioTool"]

log = get_logger("perplexed.mcp")

#: Protocol versions of the ``initialize`` handshake, oldest first (the SDK's ``HANDSHAKE_PROTOCOL_VERSIONS``).
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: Protocol versions of the per-request envelope (the SDK's ``MODERN_PROTOCOL_VERSIONS``).
MODERN_VERSIONS = ("2026-07-28",)

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"

CONNECTION_CLOSED = -32000
UNSUPPORTED_VERSION = -32022
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: Request methods of the protocol, by era (the SDK's per-version surface): a method of the other era is -32601.
_LEGACY_METHODS = frozenset({"completion/complete", "initialize", "logging/setLevel", "ping", "prompts/get",
                             "prompts/list", "resources/list", "resources/read", "resources/subscribe",
                             "resources/templates/list", "resources/unsubscribe", "tools/call", "tools/list"})
_MODERN_METHODS = frozenset({"completion/complete", "prompts/get", "prompts/list", "resources/list",
                             "resources/read", "resources/templates/list", "server/discover",
                             "subscriptions/listen", "tools/call", "tools/list"})
#: The methods the SDK server has handlers for (others are -32601 once their parameters are valid).
_SERVED = frozenset({"ping", "tools/list", "tools/call", "resources/list", "resources/read",
                     "resources/templates/list", "prompts/list", "prompts/get", "server/discover",
                     "subscriptions/listen"})
#: Results the SDK marks cacheable on the 2026-07-28 wire (``cacheScope``/``ttlMs`` filled in).
_CACHEABLE = frozenset({"server/discover", "tools/list", "resources/list", "resources/templates/list",
                        "prompts/list"})
_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_REPLAY_LIMIT = 8  # notifications kept from before the first request (the SDK's _PRE_REQUEST_REPLAY_LIMIT)


class _Refused(Exception):
    """A JSON-RPC error answer: ``code``, ``message`` and (when given) ``data``."""

    def __init__(self, code: int, message: str, data: Any = ...) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not ...:
            out["data"] = self.data
        return out


def _bad_params() -> _Refused:
    return _Refused(INVALID_PARAMS, "Invalid request parameters", "")


class StdioTool:
    """One tool as the loop serves it: its name, its ``tools/list`` entry (a function: built when first
    listed) and its call (``await call([ctx,] arguments=...)`` -> a ``CallToolResult`` in wire form)."""

    def __init__(self, name: str, listed: Callable[[], dict[str, Any]], call: Callable[..., Awaitable[Any]],
                 context: bool = False) -> None:
        self.name = name
        self.listed = listed
        self.call = call
        self.context = context


class _Progress:
    """What a tool reports progress to (the SDK ``Context``'s ``report_progress``): a notification when the
    request carried a progress token, nothing otherwise."""

    def __init__(self, server: StdioServer, token: str | int | None) -> None:
        self._server, self._token = server, token

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self._token is None:
            return
        params: dict[str, Any] = {"progressToken": self._token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._server.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})


# --- the shape of a message and of each method's parameters (what the SDK's models accept) -------------------


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _message(line: str) -> dict[str, Any] | None:
    """The JSON-RPC request or notification on ``line``, or None for anything else (dropped unanswered)."""
    try:
        message = json.loads(line)  # NaN and Infinity pass, as they pass the SDK's reader
    except ValueError:
        log.debug("perplexed mcp: dropped a line that is not JSON")
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return None  # a batch, a response (this server sends no requests), or not JSON-RPC 2.0
    if "id" in message and not _is_id(message["id"]):
        return None
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return None
    return message


def _optional(params: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> bool:
    value = params.get(name)
    return value is None or (isinstance(value, kind) and not isinstance(value, bool))


def _valid_params(method: str, params: Mapping[str, Any]) -> bool:
    """Whether ``params`` have the shape the protocol's model for ``method`` requires."""
    meta = params.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        return False
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if token is not None and not isinstance(token, str | int) and not (isinstance(token, float) and token.is_integer()):
        return False
    if method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        return _optional(params, "cursor", str)
    if method == "tools/call":
        return isinstance(params.get("name"), str) and _optional(params, "arguments", dict)
    if method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        return isinstance(params.get("uri"), str)
    if method == "prompts/get":
        arguments = params.get("arguments")
        return isinstance(params.get("name"), str) and (arguments is None or (
            isinstance(arguments, dict) and all(isinstance(v, str) for v in arguments.values())))
    if method == "logging/setLevel":
        return params.get("level") in _LOG_LEVELS
    if method == "completion/complete":
        ref, argument = params.get("ref"), params.get("argument")
        return (isinstance(ref, dict) and (
            (ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str))
            or (ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str)))
            and isinstance(argument, dict) and isinstance(argument.get("name"), str)
            and isinstance(argument.get("value"), str))
    if method == "initialize":
        info = params.get("clientInfo")
        return (isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict)
                and isinstance(info, dict) and isinstance(info.get("name"), str)
                and isinstance(info.get("version"), str))
    if method == "subscriptions/listen":
        wanted = params.get("notifications")
        return isinstance(wanted, dict) and all(_optional(wanted, k, bool) or wanted.get(k) in (True, False)
                                                for k in ("toolsListChanged", "promptsListChanged",
                                                          "resourcesListChanged")) and (
            wanted.get("resourceSubscriptions") is None or (isinstance(wanted["resourceSubscriptions"], list) and all(
                isinstance(u, str) for u in wanted["resourceSubscriptions"])))
    return True  # ping, server/discover: only _meta


def _has_envelope(params: Mapping[str, Any] | None) -> bool:
    meta = (params or {}).get("_meta")
    return isinstance(meta, dict) and VERSION_KEY in meta


def _envelope_version(params: Mapping[str, Any] | None) -> str:
    """The protocol version of a 2026-07-28 request, or the error the SDK answers for its envelope."""
    meta = (params or {}).get("_meta")
    if not isinstance(meta, dict):
        raise _Refused(INVALID_PARAMS, f"params._meta must be an object carrying the required {VERSION_KEY!r} and "
                                       f"{CAPABILITIES_KEY!r} envelope keys")
    missing = [key for key in (VERSION_KEY, CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise _Refused(INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}")
    version = meta[VERSION_KEY]
    if not isinstance(version, str):
        raise _Refused(INVALID_PARAMS, f"params._meta[{VERSION_KEY!r}] must be a string")
    if version not in MODERN_VERSIONS:
        raise _Refused(UNSUPPORTED_VERSION, "Unsupported protocol version",
                       {"supported": list(MODERN_VERSIONS), "requested": version})
    return version


# --- the server ------------------------------------------------------------------------------------------------


class StdioServer:
    """An MCP server over stdin/stdout serving ``tools``; ``run()`` serves until EOF on stdin."""

    def __init__(self, name: str, *, title: str, version: str, instructions: str,
                 tools: Sequence[StdioTool]) -> None:
        self.name, self.title, self.version, self.instructions = name, title, version, instructions
        self.tools = {tool.name: tool for tool in tools}
        self._era: str | None = None
        self._legacy_version = HANDSHAKE_VERSIONS[-1]
        self._accepted = False  # the handshake gate: initialize answered, or notifications/initialized seen
        self._early: list[dict[str, Any]] = []
        self._lead = 0  # lines seen before the first request
        self._running: dict[Any, tuple[asyncio.Task[None], list[bool], Any]] = {}  # key: (task, cancelled, id)
        self._listed: list[dict[str, Any]] | None = None
        self._write: Callable[[bytes], None] = lambda data: None

    # -- I/O ---------------------------------------------------------------------------------------------------

    def run(self, transport: Literal["stdio"] = "stdio") -> None:
        """Serve stdin/stdout until EOF (fd 0 and 1 diverted meanwhile, restored after); ``transport`` is
        ``"stdio"``, the only one (as the SDK server's ``run("stdio")``)."""
        if transport != "stdio":
            raise ValueError(f"Unknown transport: {transport}")
        private_in, private_out = _divert(0, os.O_RDONLY), _divert(1, os.O_WRONLY)
        try:
            self._write = lambda data: _write_all(private_out, data)
            asyncio.run(self.serve(private_in))
        finally:
            for fd, private in ((0, private_in), (1, private_out)):
                os.dup2(private, fd)
                os.close(private)

    async def serve(self, fd: int) -> None:
        """Read messages from ``fd`` (one a line) and answer them until EOF."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str | None] = asyncio.Queue()

        def reader() -> None:  # a thread: a blocking read works on pipes, files and terminals alike
            with os.fdopen(fd, "rb", closefd=False) as stream:
                for raw in stream:
                    loop.call_soon_threadsafe(lines.put_nowait, raw.decode("utf-8", errors="replace"))
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=reader, name="perplexed-mcp-stdin", daemon=True).start()
        while (line := await lines.get()) is not None:
            self.receive(line)
            await asyncio.sleep(0)
        await self.close()

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one message as one line (UTF-8, as the SDK writes it)."""
        self._write((json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))

    async def close(self) -> None:
        """EOF: cancel what still runs, answering each call "Connection closed" (as the SDK does)."""
        for task, cancelled, request_id in list(self._running.values()):
            task.cancel()
            if not cancelled[0]:
                self._error(request_id, _Refused(CONNECTION_CLOSED, "Connection closed"))
        if self._running:
            await asyncio.gather(*(entry[0] for entry in self._running.values()), return_exceptions=True)
        self._running.clear()

    # -- dispatch ----------------------------------------------------------------------------------------------

    def receive(self, line: str) -> None:
        """Handle one line: a request is answered (at once, or by a task for a tool call), a notification acted
        on; anything else is dropped."""
        message = _message(line)
        if self._era is None and (message is None or "id" not in message):
            # before the first request: up to _REPLAY_LIMIT lines are kept (as the SDK keeps frames, whatever
            # they are), the notifications among them replayed once the first request has chosen the era
            if self._lead < _REPLAY_LIMIT and message is not None:
                self._early.append(message)
            self._lead += 1
            return
        if message is None:
            return
        method, params = message["method"], message.get("params")
        if "id" not in message:
            self._notification(method, params)
            return
        if self._era is None:
            self._era = "modern" if method != "initialize" and _has_envelope(params) else "legacy"
            for early in self._early:
                self._notification(early["method"], early.get("params"))
            self._early.clear()
        request_id = message["id"]
        try:
            self._request(request_id, method, params)
        except _Refused as refused:
            self._error(request_id, refused)

    def _notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/cancelled":
            running = self._running.get(_key((params or {}).get("requestId")))
            if running is not None:
                running[1][0] = True  # never answered
                running[0].cancel()
        elif method == "notifications/initialized" and self._era == "legacy":
            self._accepted = True
        # notifications/progress and roots/list_changed from a client: nothing to do (as the SDK server)

    def _request(self, request_id: Any, method: str, params: dict[str, Any] | None) -> None:
        version = self._check(method, params)
        given = params or {}
        if method == "initialize":
            requested = given["protocolVersion"]
            self._legacy_version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            self._accepted = True
            self._answer(request_id, method, version, {
                "protocolVersion": self._legacy_version, "capabilities": self._capabilities(False),
                "serverInfo": self._info(), "instructions": self.instructions})
            return
        if method not in _SERVED or (method == "server/discover" and self._era != "modern"):
            raise _Refused(METHOD_NOT_FOUND, "Method not found", method)
        if not self._accepted and self._era == "legacy" and method != "ping":
            raise _bad_params()
        if method == "tools/call":
            self._spawn(request_id, self._call(request_id, version, given))
        elif method == "subscriptions/listen":
            self._spawn(request_id, self._listen(request_id, given["notifications"]))
        elif method == "resources/read":
            uri = given["uri"]
            raise _Refused(INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
        elif method == "prompts/get":
            if self._era == "modern":
                raise _Refused(INTERNAL_ERROR, "Internal server error")
            raise _Refused(0, f"Unknown prompt: {given['name']}")
        else:
            self._answer(request_id, method, version, self._listing(method))

    def _check(self, method: str, params: dict[str, Any] | None) -> str:
        """The protocol version the request is served at, after the checks the SDK makes before any handler
        (its era's envelope rules, the method's existence at that version, the shape of its parameters)."""
        if self._era == "modern":
            if method == "initialize":
                requested = (params or {}).get("protocolVersion")
                data: dict[str, Any] = {"supported": list(MODERN_VERSIONS)}
                if isinstance(requested, str):
                    data["requested"] = requested
                raise _Refused(UNSUPPORTED_VERSION, "connection is serving the 2026-07-28 protocol; the initialize "
                                                    "handshake is not accepted", data)
            version = _envelope_version(params)
            surface = _MODERN_METHODS
        else:
            if method != "initialize" and _has_envelope(params):
                raise _Refused(INVALID_REQUEST, "this connection serves the handshake protocol era; requests "
                                                "carrying the 2026-07-28 envelope are not accepted on it")
            version, surface = self._legacy_version, _LEGACY_METHODS
        if method in _LEGACY_METHODS | _MODERN_METHODS:
            if method not in surface:
                raise _Refused(METHOD_NOT_FOUND, "Method not found", method)
            if not _valid_params(method, params or {}):
                raise _bad_params()
        return version

    def _listing(self, method: str) -> dict[str, Any]:
        if method == "tools/list":
            if self._listed is None:
                self._listed = [tool.listed() for tool in self.tools.values()]
            return {"tools": json.loads(json.dumps(self._listed))}
        if method == "server/discover":
            return {"supportedVersions": list(MODERN_VERSIONS), "capabilities": self._capabilities(True),
                    "instructions": self.instructions}
        return {"resources/list": {"resources": []}, "resources/templates/list": {"resourceTemplates": []},
                "prompts/list": {"prompts": []}}.get(method, {})

    async def _call(self, request_id: Any, version: str, params: Mapping[str, Any]) -> None:
        name = params["name"]
        tool = self.tools.get(name)
        if tool is None:
            result: Any = {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}
        else:
            arguments = dict(params.get("arguments") or {})
            meta = params.get("_meta") or {}
            token = meta.get("progressToken") if _is_id(meta.get("progressToken")) else None
            if tool.context:
                result = await tool.call(_Progress(self, token), arguments=arguments)
            else:
                result = await tool.call(arguments=arguments)
        self._answer(request_id, "tools/call", version, result)

    async def _listen(self, request_id: Any, wanted: Mapping[str, Any]) -> None:
        """``subscriptions/listen``: the acknowledgement of what will be delivered, then the stream held open
        until the client cancels it or leaves (this server's tools, resources and prompts never change)."""
        honored: dict[str, Any] = {}
        for key in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
            if wanted.get(key):
                honored[key] = True
        if wanted.get("resourceSubscriptions"):
            honored["resourceSubscriptions"] = list(wanted["resourceSubscriptions"])
        self.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": honored, "_meta": {SUBSCRIPTION_KEY: request_id}}})
        await asyncio.Event().wait()

    def _spawn(self, request_id: Any, work: Awaitable[None]) -> None:
        cancelled = [False]

        async def run() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except _Refused as refused:
                if not cancelled[0]:
                    self._error(request_id, refused)
            except Exception as exc:  # a handler bug: one line in the log, code 0 as the SDK's dispatcher
                log.error("perplexed mcp: a request failed: %s", type(exc).__name__)
                if not cancelled[0]:
                    self._error(request_id, _Refused(0, str(exc)))
            finally:
                entry = self._running.get(_key(request_id))
                if entry is not None and entry[0] is task:
                    del self._running[_key(request_id)]

        task = asyncio.get_running_loop().create_task(run())
        self._running[_key(request_id)] = (task, cancelled, request_id)

    # -- answers -----------------------------------------------------------------------------------------------

    def _answer(self, request_id: Any, method: str, version: str, result: dict[str, Any]) -> None:
        running = self._running.get(_key(request_id))
        if running is not None and running[1][0]:
            return  # cancelled by the client: never answered
        if version in MODERN_VERSIONS:
            if method in _CACHEABLE:
                result = {"ttlMs": 0, "cacheScope": "private", **result}
            result = {**result, "resultType": "complete"}
            result["_meta"] = {**(result.get("_meta") or {}), SERVER_INFO_KEY: self._info()}
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _error(self, request_id: Any, refused: _Refused) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": refused.wire()})

    def _info(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "version": self.version}

    def _capabilities(self, modern: bool) -> dict[str, Any]:
        """What the SDK server advertises: tools, resources and prompts lists (changes delivered, at 2026-07-28,
        on ``subscriptions/listen`` streams; none at the handshake versions); no logging, no completions."""
        return {"prompts": {"listChanged": modern}, "resources": {"listChanged": modern, "subscribe": modern},
                "tools": {"listChanged": modern}}


def _key(request_id: Any) -> Any:
    """A request id as a key: ``1`` and ``"1"`` name the same request (a client may cancel by either)."""
    return str(request_id) if _is_id(request_id) else None


def _divert(fd: int, mode: int) -> int:
    """A private duplicate of ``fd`` to serve the wire from; ``fd`` itself then reads the null device (stdin)
    or writes to stderr (stdout)."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    if mode == os.O_RDONLY:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, fd)
        os.close(null)
    else:
        sys.stdout.flush()
        os.dup2(2, fd)
    return private


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BrokenPipeError:
            return  # the client left: EOF on stdin follows
        view = view[written:]
