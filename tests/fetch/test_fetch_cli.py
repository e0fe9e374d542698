"""``perplexed fetch URL...``: content and attempts, JSON Lines with the Page fields, exit codes 0/1/2."""

from __future__ import annotations

import json

import pytest
from pages import ARTICLE_TITLE, article_html
from perplexed.cli import main  # private: runs the CLI entry point in-process
from testkit.loopback import Html, LoopbackServer, Status


@pytest.fixture
def site(loopback: LoopbackServer) -> LoopbackServer:
    loopback.route("/robots.txt", Status(404, b""))
    loopback.route("/a", Html(article_html()))
    loopback.route("/gone", Status(404, b"", content_type="text/html"))
    return loopback


def test_fetch_prints_the_content_and_the_attempts(site: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fetch", site.url_for("/a"), "--allow-private", "--max-chars", "300"])
    out = capsys.readouterr().out
    assert code == 0
    assert ARTICLE_TITLE in out and "front yard setback" in out and "Attempts" in out and "http" in out
    assert "--start-index 300" in out


def test_json_lines_one_object_per_url_and_exit_1_when_one_failed(site: LoopbackServer,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fetch", site.url_for("/a"), site.url_for("/gone"), "--json", "--allow-network", "127.0.0.0/8",
                 "--format", "text"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 1 and len(lines) == 2
    page, failed = (json.loads(line) for line in lines)
    assert page["title"] == ARTICLE_TITLE and page["format"] == "text" and page["provider"] == "http"
    assert {"url", "final_url", "content", "status", "attempts", "cost", "truncated", "total_chars",
            "next_index", "published", "language", "content_type"} <= set(page)
    assert failed["url"] == site.url_for("/gone") and failed["attempts"][0]["reason"] == "not_found"


def test_exit_0_when_every_url_succeeded(site: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fetch", site.url_for("/a"), site.url_for("/a") + "?x", "--json", "--allow-private"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


@pytest.mark.parametrize("argv", [
    ["fetch"],
    ["fetch", "ftp://example.com/"],
    ["fetch", "http://169.254.169.254/"],
    ["fetch", "https://example.com/", "--format", "html"],
    ["fetch", "https://example.com/", "--max-chars", "0"],
    ["fetch", "https://example.com/", "--provider", "nope"],
    ["fetch", "https://example.com/", "--allow-network", "not-a-net"],
])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_private_refusal_in_json_names_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fetch", "http://0x7f.1/", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["reason"] == "private_address"
