"""A forum thread's posts: every post in page order with its author line, without the post's chrome. Pure.

The posts are the largest group of containers (same tag) whose class says post/message/comment/answer/reply
(grouped by those words, so a thread's first post with one more class is still in the group; comment-classed
containers are content here), nested members dropped. When a finer group covers every post of that group and
more (a question-and-answer page: each answer's body, and the question's body that has no answer class), the
finer group is the thread. In each post the author line is kept (the first element whose class says
author/username/poster) and the post's chrome is dropped: avatars, member titles and banners, the member's
statistics (joined, messages, reaction score), signatures, "click to expand" links and action bars, as well as
controls (buttons, forms, navigation). Lines that are only a control's label ("Reply with quote", "Share",
"Add a comment") go too.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["BLOCK_TAGS", "CONTROL_TAGS", "block_text", "thread_posts", "without_controls"]

_POST_WORDS = {"post", "message", "comment", "answer", "reply", "topic-post", "postbody", "post-body", "cooked",
               "message-body", "messagecontent", "comment-body", "s-prose", "post-content", "post_message",
               "js-post-body"}
_AUTHOR = re.compile(r"(^|[\s_-])(author|username|user-?name|poster|user|byline|profile-name|postauthor|"
                     r"message-name|creator)([\s_-]|$)", re.I)
#: a class token of a post's chrome (lower case): avatar, member title and statistics, signature, action bars
_CHROME = re.compile(r"avatar|signature|userextras|user-extras|userstats|user-stats|postprofile|usertitle|"
                     r"user-title|userbanner|user-banner|expandlink|actionbar|reactionsbar|profile-icons|"
                     r"post-tools|post-footer|postfoot|back2top|member-stats|memberstats")
CONTROL_TAGS = ("button", "form", "nav", "footer", "select", "svg", "noscript")
BLOCK_TAGS = {"p", "div", "li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "br", "section",
           "article", "ul", "ol", "table", "header", "dd", "dt"}
_CLASS_WORD = re.compile(r"[\w-]+")
_POST_MIN = 2
_CHROME_SHARE = 0.5  # a "chrome" block with this share of the post's text or more is the post
#: lines that are only a control's label
_CONTROL_LINES = frozenset({
    "click to expand...", "click to expand", "reply with quote", "quote", "reply", "share", "improve this answer",
    "improve this question", "add a comment", "report", "report post", "like", "permalink", "flag", "follow",
    "multiquote", "quote reply", "share this post", "link to post", "link to comment", "share on other sites",
    "reply to this topic", "top", "|", "\u2013", "-", "upvote", "downvote", "report inappropriate content",
})


def _chrome(node: Any, size: int) -> bool:
    klass = node.get("class", "")
    return bool(klass) and bool(_CHROME.search(klass.lower())) and len(node.text_content()) < _CHROME_SHARE * size


def block_text(node: Any, out: list[str], size: int | None = None) -> None:
    """``node``'s text into ``out``, a newline after each block, controls skipped (and, given the post's ``size``,
    a post's chrome: :func:`_chrome`)."""
    if not isinstance(node.tag, str) or node.tag in CONTROL_TAGS or (size is not None and _chrome(node, size)):
        if node.tail:
            out.append(node.tail)
        return
    if node.text:
        out.append(node.text)
    for child in node:
        block_text(child, out, size)
    if node.tag in BLOCK_TAGS:
        out.append("\n")
    if node.tail:
        out.append(node.tail)


def _post_text(member: Any) -> str:
    """A post's text, a line per block, its chrome and controls skipped."""
    parts: list[str] = []
    if member.text:
        parts.append(member.text)
    size = len(member.text_content())
    for child in member:
        block_text(child, parts, size)
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parts).split("\n"))
    return without_controls("\n".join(line for line in lines if line))


def without_controls(text: str) -> str:
    """``text`` without the lines that are only a control's label ("Reply with quote", "Share", ...)."""
    return "\n".join(line for line in text.split("\n") if line.strip().lower() not in _CONTROL_LINES)


def _groups(tree: Any) -> list[list[Any]]:
    groups: dict[tuple[str, frozenset[str]], list[Any]] = {}
    for node in tree.iter("div", "article", "li", "section", "td", "tr"):
        klass = node.get("class", "")
        words = _POST_WORDS & set(_CLASS_WORD.findall(klass.lower())) if klass else set()
        if words:
            groups.setdefault((node.tag, frozenset(words)), []).append(node)
    outer = []
    for members in groups.values():
        inside = set(members)
        top = [m for m in members if not any(a in inside for a in m.iterancestors())]
        if len(top) >= _POST_MIN:
            outer.append(top)
    return outer


def _texts(members: list[Any]) -> list[str]:
    texts = []
    for member in members:
        author = next((a for a in member.iter() if isinstance(a.tag, str) and a is not member
                       and _AUTHOR.search(a.get("class", "")) and 0 < len(a.text_content().strip()) < 80), None)
        body = _post_text(member)
        if len(body) < 20:
            continue
        line = _author_line(author, len(member.text_content())) if author is not None else ""
        texts.append(f"{line}\n{body}" if line and not body.startswith(line) else body)
    return texts


def _author_line(author: Any, size: int) -> str:
    """The author element's text on one line, its chrome (avatar letters, member title, statistics) skipped."""
    parts: list[str] = [author.text or ""]
    for child in author:
        block_text(child, parts, size)
    return " ".join(" ".join(parts).split())


def _covers(finer: list[Any], coarser: list[Any]) -> bool:
    """Every member of ``coarser`` holds a member of ``finer``, and ``finer`` has members outside them."""
    holders = {a for m in finer for a in m.iterancestors()}
    outside = [m for m in finer if not any(a in set(coarser) for a in m.iterancestors())]
    return all(m in holders for m in coarser) and bool(outside)


def thread_posts(tree: Any) -> list[str]:
    """A thread's posts in page order, each with its author line (see the module docstring)."""
    scored = []
    for members in _groups(tree):
        texts = _texts(members)
        if len(texts) >= _POST_MIN:
            scored.append((sum(len(t) for t in texts), members, texts))
    if not scored:
        return []
    scored.sort(key=lambda item: -item[0])
    _, best, texts = scored[0]
    for _, members, finer in scored[1:]:
        if len(finer) > len(texts) and _covers(members, best):
            return finer
    return texts
