"""Bounded decoding of ``Content-Encoding``: gzip, deflate, zstd and br, in steps of bounded output.

httpx decodes a body in one call per network chunk: 32 KB of zstd that inflates to 1 GB was 1 GB of memory
and seconds of a blocked event loop before any size cap could look at it. Here every decoder hands out at
most :data:`STEP` bytes (about) per step, so the caller checks its cap and yields to the event loop between
steps: memory stays near the cap, and a deadline still holds.

Only encodings that can be decoded this way are advertised (:func:`accept_encoding`): gzip and deflate always
(zlib's ``max_length``), zstd when ``zstandard`` is installed (a streaming writer fed small input slices,
window limited to 8 MB as RFC 9659 asks of HTTP), br when ``brotli`` >= 1.2 is installed (its
``output_buffer_limit``). A body in any other compression (or one of these without its package) is a
:class:`~perplexed._errors.ContentDecodingError`, as is a corrupt one; so is an unknown encoding token.
Nothing here does I/O.
"""

from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Iterator
from typing import Any

from perplexed._errors import BodyTooLargeError, ContentDecodingError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "STEP", "Decoder", "accept_encoding", "decoder_for", "has_zstd"]

#: the default cap on a response body, decoded (bytes): here, below the HTTP client, so a provider class reads it
#: without importing httpx (:mod:`perplexed.net._http` re-exports it)
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

#: the most output one decoding step hands out (bytes); the caller yields to the event loop between steps
STEP = 256 * 1024
#: zstd input is fed in slices this small: one zstd input byte can describe up to ~32 KB of output (an RLE
#: block), so one slice is at most ~2 MB of output whatever the body
_ZSTD_SLICE = 64
#: the largest zstd window accepted (RFC 9659: HTTP zstd windows are at most 8 MB)
_ZSTD_WINDOW = 8 * 1024 * 1024


class Decoder:
    """One stage of decoding. :meth:`feed` and :meth:`finish` yield decoded chunks of at most about
    :data:`STEP` bytes, lazily: the consumer decides, between chunks, whether to go on."""

    encoding = "identity"

    def feed(self, data: bytes) -> Iterator[bytes]:
        if data:
            yield data

    def finish(self) -> Iterator[bytes]:
        return iter(())


class _Zlib(Decoder):
    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._gzip = encoding == "gzip"
        self._obj: Any = zlib.decompressobj(zlib.MAX_WBITS | 16) if self._gzip else zlib.decompressobj()
        self._first = True

    def feed(self, data: bytes) -> Iterator[bytes]:
        buf = data
        while True:
            try:
                out = self._obj.decompress(buf, STEP)
            except zlib.error as exc:
                if self._first and not self._gzip:  # "deflate" sent as raw DEFLATE (no zlib header): as httpx
                    self._first = False
                    self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise _corrupt(self.encoding, exc) from None
            self._first = False
            buf = self._obj.unconsumed_tail
            if out:
                yield out
            if self._obj.eof:  # trailing bytes after the stream are ignored, as httpx does
                return
            if not buf and len(out) < STEP:  # all input consumed and no output held back
                return

    def finish(self) -> Iterator[bytes]:
        while not self._obj.eof:
            try:
                out = self._obj.decompress(b"", STEP)
            except zlib.error as exc:
                raise _corrupt(self.encoding, exc) from None
            if not out:
                if not self._first:  # data came, but the stream never ended: truncated or corrupt
                    raise _corrupt(self.encoding, EOFError("the compressed stream is incomplete"))
                break
            yield out


class _Overflow(Exception):
    """Raised inside zstd's writer callback when a step's output is full (never escapes this module)."""


class _Sink:
    """The zstd writer's output: collects chunks, and stops the decoder once ``limit`` bytes are exceeded."""

    __slots__ = ("chunks", "limit", "size")

    def __init__(self, limit: int) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.limit = limit

    def write(self, data: Any) -> int:
        size = len(data)
        self.size += size
        if self.size > self.limit:  # checked before copying: past the cap nothing more is kept
            raise _Overflow
        self.chunks.append(bytes(data))
        return size


class _Zstd(Decoder):
    encoding = "zstd"

    def __init__(self, limit: int) -> None:
        import zstandard

        self._error: type[Exception] = zstandard.ZstdError
        self._sink = _Sink(limit)
        sink: Any = self._sink  # a file-like with write(), all the writer needs
        self._writer = zstandard.ZstdDecompressor(max_window_size=_ZSTD_WINDOW).stream_writer(
            sink, write_size=64 * 1024
        )

    def feed(self, data: bytes) -> Iterator[bytes]:
        view = memoryview(data)
        sink = self._sink
        for start in range(0, len(view), _ZSTD_SLICE):
            try:
                self._writer.write(view[start : start + _ZSTD_SLICE])
            except _Overflow:
                raise _too_large(sink.limit) from None
            except self._error as exc:
                raise _corrupt(self.encoding, exc) from None
            if sink.chunks and sum(len(c) for c in sink.chunks) >= STEP:
                yield from self._drain()
        yield from self._drain()

    def _drain(self) -> Iterator[bytes]:
        chunks, self._sink.chunks = self._sink.chunks, []
        yield from chunks


class _Brotli(Decoder):
    encoding = "br"

    def __init__(self) -> None:
        import brotli  # type: ignore[import-untyped,import-not-found,unused-ignore]

        self._error: type[Exception] = brotli.error
        self._obj: Any = brotli.Decompressor()
        self._fed = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        obj = self._obj
        self._fed = self._fed or bool(data)
        try:
            out = obj.process(data, output_buffer_limit=STEP)
            if out:
                yield out
            while not obj.can_accept_more_data():
                out = obj.process(b"", output_buffer_limit=STEP)
                if out:
                    yield out
                elif obj.is_finished():
                    break
        except self._error as exc:
            raise _corrupt(self.encoding, exc) from None

    def finish(self) -> Iterator[bytes]:
        if self._fed and not self._obj.is_finished():
            raise _corrupt(self.encoding, EOFError("the compressed stream is incomplete"))
        return iter(())


def _corrupt(encoding: str, exc: BaseException) -> ContentDecodingError:
    return ContentDecodingError(
        f"response body is not valid {encoding} ({type(exc).__name__}: {exc})", encoding=encoding
    )


def _too_large(limit: int) -> BodyTooLargeError:
    return BodyTooLargeError(f"response body exceeds the {limit}-byte cap (decoded)", limit=limit)


_available: dict[str, bool] = {}


def has_zstd() -> bool:
    """Whether ``zstandard`` can be imported (zstd is then decoded and advertised)."""
    if "zstd" not in _available:
        _available["zstd"] = importlib.util.find_spec("zstandard") is not None
    return _available["zstd"]


def _has_brotli() -> bool:
    """``brotli`` >= 1.2 (the first with ``output_buffer_limit``); brotlicffi cannot bound its output."""
    if "br" not in _available:
        ok = False
        if importlib.util.find_spec("brotli") is not None:
            try:
                import brotli  # type: ignore[import-untyped,import-not-found,unused-ignore]

                brotli.Decompressor().process(b"", output_buffer_limit=1)
                ok = True
            except Exception:  # older brotli (TypeError: unexpected keyword) or a broken install
                ok = False
        _available["br"] = ok
    return _available["br"]


def accept_encoding() -> str:
    """The ``Accept-Encoding`` the shared clients send: exactly the encodings decoded within bounds here."""
    names = ["gzip", "deflate"]
    if has_zstd():
        names.append("zstd")
    if _has_brotli():
        names.append("br")
    return ", ".join(names)


_ALIASES = {"x-gzip": "gzip", "gzip": "gzip", "deflate": "deflate", "zstd": "zstd", "br": "br"}


def decoder_for(encoding: str, limit: int) -> Decoder:
    """The decoder of one ``Content-Encoding`` token (``limit``: the most decoded bytes it may produce in
    all, enforced inside the decoder where it cannot otherwise be interrupted); ContentDecodingError for an
    encoding not decoded here."""
    token = encoding.strip().lower()
    if token in ("", "identity"):
        return Decoder()
    name = _ALIASES.get(token)
    if name in ("gzip", "deflate"):
        return _Zlib(name)
    if name == "zstd" and has_zstd():
        return _Zstd(limit)
    if name == "br" and _has_brotli():
        return _Brotli()
    raise ContentDecodingError(
        f"response body uses Content-Encoding {token[:40]!r}, which this installation does not decode "
        f"(accepted: {accept_encoding()})",
        encoding=token[:40],
    )
