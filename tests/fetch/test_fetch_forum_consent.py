"""Forum threads without their posts' chrome, a Q&A page's question beside its answers, and cookie-consent
banners kept out of every page's text (issue 36): hand-written pages, extracted as the ``http`` provider does."""

from __future__ import annotations

from perplexed.extract._extract import extract_html  # private: extraction is tested on raw HTML, no server

HEAD = "<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
NAV = "<nav><a href='/'>Home</a> <a href='/forums'>Forums</a> <a href='/members'>Members</a></nav>"
FOOT = "<footer><p>Community rules. All rights reserved.</p></footer></body></html>"

POSTS = [
    ("hedgerow_ann", "My sourdough starter doubled every day for a week and then stopped rising altogether. "
                     "I feed it equal weights of rye flour and water twice a day and keep it near the oven."),
    ("bakerbob", "A starter that stalls after the first week is normal: the early bacteria die off and the yeast "
                 "takes over. Keep feeding it on schedule and give it a few more days before you worry."),
    ("crumbshot", "Try a warmer spot, around twenty-six degrees, and switch to unbleached white flour for a while. "
                  "Mine came back to life within three days once the kitchen warmed up in spring."),
]


def xenforo_like_thread() -> str:
    """A thread whose first post carries one more class than the replies, each post with an avatar, the member's
    statistics, a signature, a collapsed quote and an action bar."""
    posts = []
    for i, (author, body) in enumerate(POSTS):
        first = " message--first" if i == 0 else ""
        quote = ("<blockquote class='bbCodeBlock'><div class='bbCodeBlock-content'>Keep feeding it</div>"
                 "<div class='bbCodeBlock-expandLink'><a>Click to expand...</a></div></blockquote>") if i == 2 else ""
        posts.append(
            f"<article class='message message--post{first}'><div class='message-cell message-cell--user'>"
            f"<div class='message-avatar'><span>{author[0].upper()}</span></div>"
            f"<h4 class='message-name'><a href='/members/{author}'>{author}</a></h4>"
            "<h5 class='message-userTitle'>Well-Known Member</h5>"
            "<div class='message-userExtras'><dl><dt>Joined</dt><dd>Jun 29, 2016</dd></dl>"
            "<dl><dt>Messages</dt><dd>1,204</dd></dl><dl><dt>Reaction score</dt><dd>877</dd></dl></div></div>"
            f"<div class='message-cell message-cell--main'><time>Mar {i + 3}, 2026</time>"
            f"<div class='message-body'>{quote}<p>{body}</p></div>"
            "<div class='message-signature'>Baking since 1998, mostly rye and spelt loaves.</div>"
            "<div class='message-actionBar'><a>Report</a> <a>Like</a> <a>Reply</a></div>"
            "<div>Share</div></div></article>")
    return (HEAD.format(title="Starter stopped rising | Bread Forum") + NAV
            + "<main><h1>Starter stopped rising</h1><div class='block-body'>" + "".join(posts) + "</div></main>"
            + FOOT)


QUESTION = ("How do I keep the explorer's file list focused from the keyboard? Every time I open a folder the "
            "focus lands on the address bar and I have to tab through half a dozen controls to reach the files.")
ANSWERS = [
    "Press F6 a few times: it cycles the focus between the address bar, the navigation pane and the file list.",
    "Ctrl+E followed by Escape leaves the search box and puts the focus back on the files of the open folder.",
]
COMMENT = "This worked for me on an older machine as well, thanks for the tip."


def question_and_answers() -> str:
    """A Q&A page: the question's body and each answer's body share a class; only the answers have an answer
    container (with its comments)."""
    answers = "".join(
        f"<div class='answer js-answer' id='answer-{i}'><div class='post-layout'>"
        f"<div class='s-prose js-post-body'><p>{body}</p></div>"
        f"<div class='comments'><ul><li class='comment'><span class='comment-copy'>{COMMENT} #{i}</span>"
        "</li></ul></div></div></div>"
        for i, body in enumerate(ANSWERS))
    return (HEAD.format(title="Keyboard focus on the file list - Super User") + NAV
            + "<main><h1>Keyboard focus on the file list</h1><div class='question js-question'>"
            f"<div class='post-layout'><div class='s-prose js-post-body'><p>{QUESTION}</p></div></div></div>"
            f"<div id='answers'><h2>2 Answers</h2>{answers}</div></main>" + FOOT)


ARTICLE = [
    "The city council voted on Tuesday to extend the riverside tram line by four stops, connecting the new "
    "housing district on the eastern bank with the central station for the first time.",
    "Construction is planned to begin next spring and to last about two years, during which the riverside road "
    "will be narrowed to one lane in each direction between the old mill and the harbour bridge.",
    "Residents of the eastern bank have asked for the connection for more than a decade; the district's population "
    "has doubled since the first plans for the line were drawn up in the late two-thousands.",
    "The extension is expected to carry about twelve thousand passengers a day once it opens, according to the "
    "transport authority, which will run trams every six minutes during the morning and evening peaks.",
]
BANNER = ("We and our partners store and access information on your device, such as cookies, and process personal "
          "data such as unique identifiers and standard information sent by a device for personalised ads and "
          "content, ad and content measurement, audience research and services development.")


def article_with_consent_banner() -> str:
    paragraphs = "".join(f"<p>{text}</p>" for text in ARTICLE)
    banner = (f"<div id='onetrust-consent-sdk'><div id='onetrust-banner-sdk' role='region' aria-label='Cookie "
              f"banner'><h2>We value your privacy</h2><p>{BANNER}</p><button>Accept all</button>"
              "<button>Reject all</button></div></div>")
    return (HEAD.format(title="Tram line to be extended") + NAV
            + f"<article><h1>Tram line to be extended</h1>{paragraphs}</article>" + banner + FOOT)


def test_a_forum_thread_keeps_every_post_and_author_without_the_posts_chrome() -> None:
    extracted = extract_html(xenforo_like_thread(), "https://forum.example.org/threads/starter.42/", "text")
    assert extracted.page_type == "forum"
    text = extracted.text
    positions = [text.index(body[:60]) for _, body in POSTS]  # every post, the first one too, in page order
    assert positions == sorted(positions)
    for author, _ in POSTS:
        assert author in text
    for chrome in ("Reaction score", "Joined", "Well-Known Member", "Baking since 1998", "Click to expand"):
        assert chrome not in text
    assert "Keep feeding it" in text  # a quote is the post's content
    assert not any(line.strip() in ("Share", "Reply", "Like", "Report") for line in text.split("\n"))


def test_a_question_and_answers_page_keeps_the_question_beside_the_answers() -> None:
    extracted = extract_html(question_and_answers(), "https://superuser.example.org/questions/42/focus", "text")
    assert extracted.page_type == "forum"
    text = extracted.text
    positions = [text.index(body[:60]) for body in [QUESTION, *ANSWERS]]
    assert positions == sorted(positions)


def test_a_consent_banner_is_not_the_pages_text() -> None:
    extracted = extract_html(article_with_consent_banner(), "https://news.example.org/2026/03/tram-line", "text")
    for paragraph in ARTICLE:
        assert paragraph[:60] in extracted.text
    assert "partners store and access information" not in extracted.text
    assert "We value your privacy" not in extracted.text


def test_a_page_that_is_mostly_its_consent_text_keeps_it() -> None:
    """A "banner" holding most of the page's text is the page (a cookie policy), not a banner to drop."""
    policy = "".join(f"<p>{BANNER} Section {i}.</p>" for i in range(6))
    page = (HEAD.format(title="Cookie policy") + NAV + f"<main><div class='cookie-consent-policy'><h1>Cookie policy"
            f"</h1>{policy}</div></main>" + FOOT)
    extracted = extract_html(page, "https://shop.example.org/cookie-policy", "text")
    assert "partners store and access information" in extracted.text


def test_a_consent_managers_preference_center_is_dropped_even_beside_little_text() -> None:
    """A consent manager's own container (named after its SDK) is never the page, though its purpose texts be
    longer than a short page's own text."""
    purposes = "".join(f"<p>{BANNER} Purpose {i}.</p>" for i in range(8))
    center = (f"<div id='onetrust-consent-sdk'><div id='onetrust-pc-sdk' role='region' aria-label='Your Privacy "
              f"Choices'><h2>Privacy Preference Center</h2>{purposes}</div></div>")
    page = (HEAD.format(title="Tomato sauce recipes") + NAV + "<main><h1>Tomato sauce recipes</h1><p>Our collection "
            "of tomato sauce recipes has something for every dish, from pasta to a vegetable tian.</p></main>"
            + center + FOOT)
    extracted = extract_html(page, "https://recipes.example.org/tomato-sauce-recipes", "text")
    assert "collection of tomato sauce recipes" in extracted.text
    assert "partners store and access information" not in extracted.text
