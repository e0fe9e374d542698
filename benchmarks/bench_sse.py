"""SSE decoding: perplexed's decoder against the official ``perplexityai`` SDK's, and event latency.

Run:  .venv/bin/python benchmarks/bench_sse.py [--size-mb 10] [--chunk 16384] [--repeat 5]

Needs the ``bench`` extra (``pip install perplexityai``): the SDK is a benchmark-only dependency.

1. **Throughput.** One synthetic Agent API event stream of ``--size-mb`` MB (mostly
   ``response.output_text.delta`` frames, with reasoning events, ``event:`` lines on some frames, ``:``
   keep-alive comments, multi-line data and a few large ``response.completed`` snapshots) is cut into
   ``--chunk``-byte reads and decoded by ``perplexed.agent.sse`` and by ``perplexity._streaming.SSEDecoder``.
   Best of ``--repeat`` runs each, interleaved; MB/s and the ratio are printed, and the two event lists
   must be identical (event name, data, id, retry).
2. **Decoder latency.** Frames arrive one read at a time (and split in two reads); the time from a read's
   arrival to the decoder handing out its event, for both decoders.
3. **End-to-end latency.** A loopback HTTP server (a real socket on 127.0.0.1, in a thread) writes one
   frame every few ms; the time from the server's write to ``AsyncAgentClient.stream`` yielding the typed
   event (TCP, httpx, decoding, JSON parsing and model validation included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core"))

from perplexed.agent import AsyncAgentClient  # noqa: E402
from perplexed.agent.sse import SSEDecoder, iter_sse  # noqa: E402

try:
    from perplexity._streaming import SSEDecoder as SDKDecoder
except ImportError:  # pragma: no cover
    sys.exit("the official SDK is needed for this benchmark: .venv/bin/pip install perplexityai")

WORDS = "the quick brown fox jumps over a lazy dog while quantum computers factor large primes".split()


def make_stream(size: int, seed: int = 7) -> bytes:
    """A synthetic Agent API SSE stream of about ``size`` bytes."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    seq = 0
    snapshot = {
        "id": "resp_bench",
        "object": "response",
        "status": "in_progress",
        "model": "openai/gpt-5.1",
        "output": [],
    }
    while total < size:
        r = rng.random()
        if r < 0.86:
            delta = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))
            payload = {
                "type": "response.output_text.delta",
                "sequence_number": seq,
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "delta": delta + " ",
            }
            frame = "data: " + json.dumps(payload, separators=(",", ":")) + "\n\n"
        elif r < 0.93:
            payload = {
                "type": "response.reasoning.search_results",
                "sequence_number": seq,
                "results": [
                    {
                        "id": i,
                        "url": f"https://example.com/{seq}/{i}",
                        "title": "T" * 40,
                        "snippet": "s" * 200,
                    }
                    for i in range(1, 6)
                ],
            }
            frame = "event: response.reasoning.search_results\ndata: " + json.dumps(payload) + "\n\n"
        elif r < 0.97:
            frame = ": keep-alive\n\n"
        elif r < 0.995:
            # multi-line data (no ``id:`` line: the API sends none, and after one the SDK's decoder turns
            # every later blank keep-alive line into an empty event, contrary to the WHATWG rules)
            frame = f'data: {{"type":"response.unknown",\ndata: "sequence_number":{seq}}}\n\n'
        else:
            snap = dict(
                snapshot,
                output=[{"type": "message", "content": [{"type": "output_text", "text": "x" * 4000}]}],
            )
            frame = (
                "data: "
                + json.dumps({"type": "response.in_progress", "sequence_number": seq, "response": snap})
                + "\n\n"
            )
        out.append(frame)
        total += len(frame)
        seq += 1
    out.append(
        "data: "
        + json.dumps({"type": "response.completed", "sequence_number": seq, "response": snapshot})
        + "\n\n"
    )
    return "".join(out).encode()


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def ours(chunks: list[bytes]) -> list[tuple[str, str, str, int | None]]:
    return [(e.event, e.data, e.id, e.retry) for e in iter_sse(chunks)]


def theirs(chunks: list[bytes]) -> list[tuple[str, str, str, int | None]]:
    return [
        (e.event or "message", e.data, e.id or "", e.retry) for e in SDKDecoder().iter_bytes(iter(chunks))
    ]


def best_of(fn, chunks: list[bytes], repeat: int) -> tuple[float, list[tuple[str, str, str, int | None]]]:
    best = float("inf")
    result: list[tuple[str, str, str, int | None]] = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(chunks)
        best = min(best, time.perf_counter() - start)
    return best, result


def decoder_latency(frames: list[bytes], split: bool) -> tuple[list[float], list[float]]:
    """Per-frame time (s) from the last read of a frame arriving to its event coming out."""
    reads: list[bytes] = []
    for f in frames:
        reads.extend([f[: len(f) // 2], f[len(f) // 2 :]] if split else [f])

    arrivals: list[float] = []

    def source() -> Iterator[bytes]:
        for chunk in reads:
            arrivals.append(time.perf_counter())
            yield chunk

    ours_lat: list[float] = []
    dec = SSEDecoder()
    for chunk in source():
        for _ in dec.feed(chunk):
            ours_lat.append(time.perf_counter() - arrivals[-1])
    arrivals.clear()
    sdk_lat: list[float] = []
    for _ in SDKDecoder().iter_bytes(source()):
        sdk_lat.append(time.perf_counter() - arrivals[-1])
    return ours_lat, sdk_lat


def stats_us(values: list[float]) -> str:
    values = sorted(values)
    p50 = statistics.median(values) * 1e6
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))] * 1e6
    return f"median {p50:7.1f} us   p99 {p99:7.1f} us   (n={len(values)})"


def end_to_end(n: int, interval: float) -> list[float]:
    """Server write → typed event yielded by AsyncAgentClient.stream, over a loopback socket."""
    sent: dict[int, float] = {}
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    sock.settimeout(10)
    port = sock.getsockname()[1]

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            lengths = [h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")]
            length = int(lengths[0].split(b":")[1]) if lengths else 0
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for seq in range(n + 1):
                kind = "response.completed" if seq == n else "response.output_text.delta"
                event = {"type": kind, "sequence_number": seq, "delta": "word "}
                if seq == 0:
                    event = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_e2e"}}
                frame = b"data: " + json.dumps(event).encode() + b"\n\n"
                time.sleep(interval)
                sent[seq] = time.perf_counter()
                conn.sendall(b"%x\r\n%s\r\n" % (len(frame), frame))
            conn.sendall(b"0\r\n\r\n")

    server = threading.Thread(target=serve, daemon=True)
    server.start()

    async def consume() -> list[float]:
        client = AsyncAgentClient(api_key="pplx-bench-not-a-real-key", base_url=f"http://127.0.0.1:{port}")
        lat: list[float] = []
        async for event in client.stream(preset="fast", input="bench"):
            now = time.perf_counter()
            if event.sequence_number is not None and event.sequence_number > 0:
                lat.append(now - sent[event.sequence_number])
        return lat

    try:
        return asyncio.run(consume())
    finally:
        server.join(timeout=10)
        sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=10.0)
    parser.add_argument("--chunk", type=int, default=16384, help="bytes per read")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--frames", type=int, default=300, help="frames for the end-to-end latency run")
    args = parser.parse_args()

    data = make_stream(int(args.size_mb * 1024 * 1024))
    mb = len(data) / 1e6
    print(f"stream: {len(data):,} bytes ({mb:.1f} MB), reads of {args.chunk} bytes")
    for size in (args.chunk, 1024):
        chunks = cut(data, size)
        t_ours = t_theirs = float("inf")
        ev_ours: list[tuple[str, str, str, int | None]] = []
        ev_theirs: list[tuple[str, str, str, int | None]] = []
        for _ in range(args.repeat):  # interleaved so machine noise hits both alike
            a, ev_ours = best_of(ours, chunks, 1)
            b, ev_theirs = best_of(theirs, chunks, 1)
            t_ours, t_theirs = min(t_ours, a), min(t_theirs, b)
        identical = ev_ours == ev_theirs
        print(
            f"  reads of {size:>6} B: perplexed {mb / t_ours:7.1f} MB/s   perplexityai SDK {mb / t_theirs:7.1f} MB/s"
            f"   ratio {t_theirs / t_ours:5.2f}x   events {len(ev_ours):,} identical={identical}"
        )
        if not identical:
            sys.exit("event lists differ")

    frames = [f + b"\n\n" for f in data[:400_000].split(b"\n\n") if f][:2000]
    for split in (False, True):
        ours_lat, sdk_lat = decoder_latency(frames, split)
        label = "frame split in 2 reads" if split else "one frame per read"
        print(f"decoder latency, {label}:")
        print(f"  perplexed        {stats_us(ours_lat)}")
        print(f"  perplexityai SDK {stats_us(sdk_lat)}")
    lat = end_to_end(args.frames, 0.002)
    print("end-to-end, loopback server write -> typed event from AsyncAgentClient.stream:")
    print(f"  perplexed        {stats_us(lat)}")


if __name__ == "__main__":
    main()
