"""Write the synthesized fetch-provider cassettes under ``cassettes/synthesized/fetch/<provider>/``.

NOT recorded: every request and response below is written by hand from each vendor's documented shapes (Jina
Reader's JSON mode, Exa ``POST /contents`` with per-URL ``statuses``, Tavily ``POST /extract`` with
``failed_results``, Firecrawl ``POST /v2/scrape`` with ``metadata.statusCode``; vendor API references, late 2026).
Hosts are the vendors' real API hosts; no key appears (no auth header is written). ``expect`` says what perplexed
makes of each: the text it keeps, or the failure reason. The tests replay them from a loopback server.

Run ``.venv/bin/python tests/fetch/synthesize_fetch_cassettes.py`` to rewrite them; a test checks the files on disk
are what this script writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2] / "cassettes" / "synthesized" / "fetch"
PAGE = "https://www.example.com/zoning/setbacks"
TEXT = ("# Setbacks\n\nThe front yard setback in the residential zone is twenty feet, measured from the property "
        "line. The rear setback is fifteen feet. Corner lots keep both street setbacks. ") * 3

REQUESTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "jina": ("POST", "https://r.jina.ai/", {"url": PAGE}),
    "exa": ("POST", "https://api.exa.ai/contents", {"urls": [PAGE], "text": True}),
    "tavily": ("POST", "https://api.tavily.com/extract",
               {"urls": [PAGE], "extract_depth": "basic", "format": "markdown", "include_images": False,
                "include_usage": True}),
    "firecrawl": ("POST", "https://api.firecrawl.dev/v2/scrape",
                  {"url": PAGE, "formats": ["markdown"], "onlyMainContent": True, "parsers": ["pdf"]}),
}


def _j(data: Any) -> str:
    return json.dumps(data)


CASES: dict[str, dict[str, dict[str, Any]]] = {
    "jina": {
        "ok": {"status": 200, "body": _j({"code": 200, "status": 20000, "data": {
            "title": "Setbacks", "description": "", "url": PAGE, "content": TEXT,
            "publishedTime": "2025-03-04T10:00:00Z", "usage": {"tokens": 120}}}),
            "expect": {"text": TEXT.strip(), "title": "Setbacks", "published": "2025-03-04"}},
        "target_404": {"status": 422, "body": _j({"code": 422, "name": "AssertionFailureError", "status": 42206,
                                                  "message": "Failed to get remote content: HTTP 404 Not Found",
                                                  "readableMessage": "AssertionFailureError: Failed to get remote "
                                                                     "content: HTTP 404 Not Found"}),
                       "expect": {"reason": "not_found"}},
        "blocked_451": {"status": 451, "body": _j({"code": 451, "name": "SecurityCompromiseError",
                                                   "message": "Domain www.example.com blocked"}),
                        "expect": {"reason": "blocked"}},
        "429": {"status": 429, "body": _j({"code": 429, "message": "Too many requests"}),
                "expect": {"reason": "rate_limited"}},
        "402": {"status": 402, "body": _j({"code": 402, "message": "Insufficient balance"}),
                "expect": {"reason": "payment"}},
    },
    "exa": {
        "ok": {"status": 200, "body": _j({"requestId": "r1", "results": [{
            "id": PAGE, "url": PAGE, "title": "Setbacks", "text": TEXT, "publishedDate": "2025-03-04T00:00:00.000Z",
            "author": None}], "statuses": [{"id": PAGE, "status": "success", "source": "cached"}],
            "costDollars": {"total": 0.001, "contents": {"text": 0.001}}}),
            "expect": {"text": TEXT.strip(), "title": "Setbacks", "published": "2025-03-04", "cost": 0.001}},
        "crawl_not_found": {"status": 200, "body": _j({"requestId": "r2", "results": [], "statuses": [
            {"id": PAGE, "status": "error", "error": {"tag": "CRAWL_NOT_FOUND", "httpStatusCode": 404}}],
            "costDollars": {"total": 0}}), "expect": {"reason": "not_found"}},
        "source_not_available": {"status": 200, "body": _j({"requestId": "r3", "results": [], "statuses": [
            {"id": PAGE, "status": "error", "error": {"tag": "SOURCE_NOT_AVAILABLE", "httpStatusCode": 403}}]}),
            "expect": {"reason": "blocked"}},
        "crawl_timeout": {"status": 200, "body": _j({"requestId": "r4", "results": [], "statuses": [
            {"id": PAGE, "status": "error", "error": {"tag": "CRAWL_TIMEOUT", "httpStatusCode": 408}}]}),
            "expect": {"reason": "timeout"}},
        "401": {"status": 401, "body": _j({"requestId": "r5", "error": "Invalid API key", "tag": "INVALID_API_KEY"}),
                "expect": {"reason": "auth"}},
    },
    "tavily": {
        "ok": {"status": 200, "body": _j({"results": [{"url": PAGE, "raw_content": TEXT, "images": []}],
                                          "failed_results": [], "response_time": 0.4, "usage": {"credits": 1},
                                          "request_id": "t1"}),
               "expect": {"text": TEXT.strip(), "cost": 0.008}},
        "failed": {"status": 200, "body": _j({"results": [], "failed_results": [
            {"url": PAGE, "error": "Failed to fetch url: 403 Forbidden"}], "response_time": 0.3, "request_id": "t2"}),
            "expect": {"reason": "blocked", "cost": 0.0}},
        "failed_404": {"status": 200, "body": _j({"results": [], "failed_results": [
            {"url": PAGE, "error": "404 Not Found"}], "response_time": 0.2}), "expect": {"reason": "not_found"}},
        "432": {"status": 432, "body": _j({"detail": {"error": "This request exceeds your plan's set usage limit."}}),
                "expect": {"reason": "payment"}},
    },
    "firecrawl": {
        "ok": {"status": 200, "body": _j({"success": True, "data": {"markdown": TEXT, "metadata": {
            "title": "Setbacks", "language": "en", "sourceURL": PAGE, "url": PAGE, "statusCode": 200,
            "contentType": "text/html", "creditsUsed": 1}}}),
            "expect": {"text": TEXT.strip(), "title": "Setbacks", "cost": 0.001}},
        "page_404": {"status": 200, "body": _j({"success": True, "data": {"markdown": "# 404\n\nPage not found",
                                                                         "metadata": {"title": "Not Found",
                                                                                      "sourceURL": PAGE,
                                                                                      "statusCode": 404,
                                                                                      "creditsUsed": 1}}}),
                     "expect": {"reason": "not_found", "cost": 0.001}},
        "page_403": {"status": 200, "body": _j({"success": True, "data": {"markdown": "", "metadata": {
            "sourceURL": PAGE, "statusCode": 403, "error": "Forbidden", "creditsUsed": 1}}}),
            "expect": {"reason": "blocked"}},
        "timeout_408": {"status": 408, "body": _j({"success": False, "error": "Request timed out",
                                                   "code": "SCRAPE_TIMEOUT"}), "expect": {"reason": "timeout"}},
        "402": {"status": 402, "body": _j({"success": False, "error": "Insufficient credits"}),
                "expect": {"reason": "payment"}},
    },
}


def cassette(provider: str, case: dict[str, Any]) -> dict[str, Any]:
    method, uri, body = REQUESTS[provider]
    return {
        "interactions": [{
            "request": {"body": json.dumps(body), "headers": {"accept": ["application/json"],
                                                               "content-type": ["application/json"]},
                        "method": method, "uri": uri},
            "response": {"body": {"string": case["body"]}, "headers": {"content-type": ["application/json"]},
                         "status": {"code": case["status"], "message": ""}},
        }],
        "version": 1,
        "expect": case["expect"],
    }


README = """# Synthesized {provider} fetch cassettes

**Not recorded.** Written by hand (`tests/fetch/synthesize_fetch_cassettes.py`) from the documented request and
response shapes of the {provider} API, not captured from the live service. No key appears. `expect` in each file
says what perplexed makes of the reply; `tests/fetch/test_fetch_vendors.py` replays them from a loopback server.

| cassette | HTTP | expect |
|---|---|---|
{rows}
"""


def render() -> dict[Path, str]:
    files: dict[Path, str] = {}
    for provider, cases in CASES.items():
        rows = []
        for name, case in cases.items():
            files[ROOT / provider / f"{name}.yaml"] = yaml.safe_dump(cassette(provider, case), sort_keys=False,
                                                                     allow_unicode=True, width=100)
            expect = case["expect"].get("reason") or "page text"
            rows.append(f"| `{name}.yaml` | {case['status']} | {expect} |")
        files[ROOT / provider / "README.md"] = README.format(provider=provider, rows="\n".join(rows))
    return files


def main() -> None:
    for path, text in render().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path.relative_to(ROOT.parents[2]))


if __name__ == "__main__":
    main()
