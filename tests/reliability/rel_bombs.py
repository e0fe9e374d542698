"""Decompression bombs, built fast and without inflating them: gzip, deflate and zstd bodies of about 1 MB
(gzip, deflate) or 32 KB (zstd) that decode to 1 GiB of zeros, and a brotli one when ``brotli`` is installed.

gzip/deflate: one raw DEFLATE segment for 1 MiB of zeros, ended by a full flush (byte-aligned, dictionary
reset, so every segment is the same bytes), repeated 1024 times between a gzip (or zlib) header and a trailer
whose checksum is the real one of 1 GiB of zeros. zstd: a frame made of 8192 RLE blocks of 128 KiB (4 bytes
each), declaring a 2 MiB window (what ``zstd -3`` declares) or 8 MiB (the most RFC 9659 lets a server use).
"""

from __future__ import annotations

import functools
import struct
import zlib

__all__ = ["GIB", "brotli_bomb", "deflate_bomb", "gzip_bomb", "zstd_bomb"]

GIB = 1 << 30
_MIB = 1 << 20


def _segment() -> bytes:
    """Raw DEFLATE of 1 MiB of zeros, ended by a full flush (no final-block bit: more may follow)."""
    obj = zlib.compressobj(9, zlib.DEFLATED, -15)
    return obj.compress(bytes(_MIB)) + obj.flush(zlib.Z_FULL_FLUSH)


def _end() -> bytes:
    """An empty final DEFLATE block (fixed Huffman, end-of-block only), byte-aligned."""
    return b"\x03\x00"


def _crc32_of_zeros(size: int) -> int:
    crc = 0
    chunk = bytes(_MIB)
    for _ in range(size // _MIB):
        crc = zlib.crc32(chunk, crc)
    return crc


@functools.cache
def gzip_bomb(size: int = GIB) -> bytes:
    """A gzip body that decodes to ``size`` (a multiple of 1 MiB) zero bytes."""
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = struct.pack("<II", _crc32_of_zeros(size), size & 0xFFFFFFFF)
    return header + _segment() * (size // _MIB) + _end() + trailer


@functools.cache
def deflate_bomb(size: int = GIB) -> bytes:
    """A ``Content-Encoding: deflate`` (zlib-wrapped) body that decodes to ``size`` zero bytes."""
    adler = ((size % 65521) << 16) | 1  # adler32 of n zeros: a = 1, b = n mod 65521
    return b"\x78\xda" + _segment() * (size // _MIB) + _end() + struct.pack(">I", adler)


@functools.cache
def zstd_bomb(size: int = GIB, window_log: int = 21) -> bytes:
    """A zstd frame of RLE blocks (no checksum) that decodes to ``size`` zero bytes. ``window_log`` 21 (2 MiB)
    is what zstd's default level declares for such input; 23 (8 MiB) is the most RFC 9659 allows."""
    block = 128 * 1024
    count = size // block
    frame = bytearray(b"\x28\xb5\x2f\xfd")  # magic
    frame += b"\x00"  # frame header descriptor: no content size, not single-segment, no checksum, no dict
    frame += bytes([(window_log - 10) << 3])  # window descriptor: 2**window_log bytes
    rle = (block << 3) | (1 << 1)  # block size, type RLE, not last
    one = struct.pack("<I", rle)[:3] + b"\x00"
    last = struct.pack("<I", rle | 1)[:3] + b"\x00"
    frame += one * (count - 1) + last
    return bytes(frame)


@functools.cache
def brotli_bomb(size: int = GIB) -> bytes:
    """A brotli body that decodes to ``size`` zero bytes (needs the ``brotli`` package)."""
    import brotli

    obj = brotli.Compressor(quality=4)
    chunk = bytes(_MIB)
    parts = [obj.process(chunk) for _ in range(size // _MIB)]
    parts.append(obj.finish())
    return b"".join(parts)
