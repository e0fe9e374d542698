"""Test pages for the fetch tests: an article, interstitials, and the servers' routes that serve them."""

from __future__ import annotations

ARTICLE_TITLE = "Setbacks in the Residential Zone"
PARAGRAPHS = [
    f"Paragraph {i}: the front yard setback in the residential zone is twenty feet, measured from the property "
    f"line to the nearest wall of the building, and the rear setback is fifteen feet unless rule {i} applies."
    for i in range(1, 13)
]


def article_html(title: str = ARTICLE_TITLE, paragraphs: list[str] | None = None) -> str:
    body = "".join(f"<p>{p}</p>" for p in (paragraphs or PARAGRAPHS))
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title><meta property='article:published_time' content='2025-03-04'></head>"
        "<body><nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"<article><h1>{title}</h1>{body}</article>"
        "<footer>Copyright the city. All rights reserved.</footer></body></html>"
    )


CLOUDFLARE = (
    "<!DOCTYPE html><html lang='en-US'><head><title>Just a moment...</title></head><body>"
    "<noscript>Enable JavaScript and cookies to continue</noscript>"
    "<script src='/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1'></script></body></html>"
)
ENABLE_JS = (
    "<!doctype html><html><head><title>My App</title></head><body>"
    "<noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div></body></html>"
)


class HugeHtml:
    """An endless-looking HTML body of ``size`` bytes, chunked (no declared size)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def write(self, conn: object, request: object) -> bool:
        from testkit.loopback import _head

        send = conn.send  # type: ignore[attr-defined]
        if not send(_head(200, None, Content_Type="text/html", Transfer_Encoding="chunked")):
            return False
        block = b"<p>" + b"a" * 65529 + b"</p>"
        sent = 0
        while sent < self.size:
            if not send(b"%x\r\n" % len(block) + block + b"\r\n"):
                return False
            sent += len(block)
        return bool(send(b"0\r\n\r\n"))


class DripHtml:
    """HTML headers at once, then a few bytes every ``interval`` seconds, for ever (a slow drip)."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval

    def write(self, conn: object, request: object) -> bool:
        from testkit.loopback import _head

        send, pause = conn.send, conn.pause  # type: ignore[attr-defined]
        if not send(_head(200, None, Content_Type="text/html", Transfer_Encoding="chunked")):
            return False
        while True:
            if not send(b"5\r\n<p>a \r\n") or not pause(self.interval):
                return False
