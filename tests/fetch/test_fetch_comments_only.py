"""A page whose only text is a discussion (issue 36): a link aggregator's story page or a thread whose replies sit
in a comments section. When trafilatura's precise and recall passes keep (almost) nothing, its pass with comments
is used, so the discussion is the page's text instead of an empty one."""

from __future__ import annotations

from perplexed.extract._extract import extract_html  # private: extraction without a fetch

COMMENTS = [
    ("ada", "The goals read well, but the async closures item has been on the list for three years now and the "
            "blog post does not say what changed this time to make it land in the next edition."),
    ("brian", "What changed is that the trait solver rewrite is finally in nightly, which was the blocker for "
              "most of the design questions that stalled the closures work in the previous rounds."),
    ("chen", "I would rather see the compile time work prioritised. Incremental builds of our workspace still take "
             "over a minute after touching a single leaf crate, and that dominates the day more than any feature."),
]


def _story_page() -> str:
    comments = "".join(
        f"<li class='comment'><div class='byline'><a href='/u/{user}'>{user}</a> 2 hours ago</div>"
        f"<div class='comment_text'><p>{text}</p></div></li>" for user, text in COMMENTS)
    return ("<!doctype html><html lang='en'><head><title>Project goals for 2026 | links</title></head><body>"
            "<header><nav><a href='/'>Active</a> <a href='/recent'>Recent</a> <a href='/login'>Login</a></nav></header>"
            "<div class='story'><a class='u-url' href='https://blog.example/goals'>Project goals for 2026</a> "
            "<span class='byline'>via <a href='/u/ada'>ada</a> | 3 comments</span></div>"
            f"<div id='comments' class='comments'><ol class='comments'>{comments}</ol></div>"
            "<footer><a href='/about'>About</a></footer></body></html>")


def test_a_page_that_is_all_comments_keeps_the_comments() -> None:
    text = extract_html(_story_page(), "https://links.example/s/abc123/project_goals", "text").text
    for _user, comment in COMMENTS:
        assert comment[:60] in text
