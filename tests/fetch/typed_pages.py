"""Small hand-made pages of each type (issue 36), shaped like the pages of the WCXB benchmark."""

from __future__ import annotations

import json

_HEAD = "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>{extra}</head><body>"
_NAV = ("<header><nav><a href='/'>Home</a> <a href='/shop'>Shop</a> <a href='/about'>About us</a> "
        "<a href='/contact'>Contact</a></nav></header>")
_FOOT = "<footer><p>Copyright 2026 the company. All rights reserved.</p></footer></body></html>"

POSTS = [
    ("marta_k", "My sourdough starter stopped rising after I moved it to the fridge for a week. I fed it twice a day "
                "since then with equal weights of flour and water but it still smells of acetone and barely bubbles."),
    ("bakerbob", "Acetone smell means it is hungry. Feed it at a higher ratio, one part starter to five parts flour "
                 "and five parts water, and keep it somewhere warm, around twenty-six degrees, for three days."),
    ("l.henry", "Also check your flour. A switch to bleached flour killed my starter once. Whole rye flour for a "
                "couple of feedings wakes up a sluggish culture faster than anything else I have tried."),
    ("marta_k", "Thank you both: three days of rye feedings at a warm spot and it doubles again within six hours."),
]


def forum_thread() -> str:
    """A Discourse-like thread: the question and its answers in comment-classed containers, author lines."""
    posts = "".join(
        f"<div class='topic-post comment' id='post_{i}'><div class='topic-meta-data'><span class='username'>"
        f"<a href='/u/{author}'>{author}</a></span> <span class='post-date'>March {i + 3}, 2026</span></div>"
        f"<div class='cooked'><p>{body}</p></div><div class='post-controls'><button>Reply</button></div></div>"
        for i, (author, body) in enumerate(POSTS, start=1)
    )
    extra = ("<script type='application/ld+json'>" + json.dumps({
        "@context": "https://schema.org", "@type": "DiscussionForumPosting", "headline": "Starter stopped rising",
        "author": {"@type": "Person", "name": "marta_k"}, "datePublished": "2026-03-04"}) + "</script>")
    return (_HEAD.format(title="Starter stopped rising - Bread Forum", extra=extra) + _NAV
            + "<main><h1><a href='/t/starter-stopped-rising/123'>Starter stopped rising</a></h1>"
            + f"<div class='post-stream'>{posts}</div></main>" + _FOOT)


PRODUCT_NAME = "Trailhead Merino Hiking Sock"
PRODUCT_DESCRIPTION = ("A cushioned merino wool hiking sock with a reinforced heel and toe, a seamless toe closure "
                       "and arch support that stays put over long days on rough trails.")


def product_jsonld_only() -> str:
    """A product page whose visible DOM is a client-rendered shell: its content is only in JSON-LD."""
    data = {"@context": "https://schema.org", "@type": "Product", "name": PRODUCT_NAME, "sku": "TMS-01",
            "description": PRODUCT_DESCRIPTION, "brand": {"@type": "Brand", "name": "Trailhead"},
            "offers": {"@type": "Offer", "price": "24.00", "priceCurrency": "USD",
                       "availability": "https://schema.org/InStock"}}
    extra = (f"<meta property='og:type' content='product'><script type='application/ld+json'>{json.dumps(data)}"
             "</script>")
    return (_HEAD.format(title=f"{PRODUCT_NAME} | Trailhead", extra=extra) + _NAV
            + "<main><div id='product-root' class='product-detail'></div>"
            + "<button class='add-to-cart'>Add to cart</button></main>" + _FOOT)


ITEMS = [
    ("Alpine Wool Runner", "A light everyday sneaker knitted from merino wool.", "$98"),
    ("Harbor Canvas Slip-On", "An easy canvas slip-on for warm days by the water.", "$75"),
    ("Summit Trail Boot", "A waterproof mid boot with a grippy recycled outsole.", "$160"),
    ("City Leather Loafer", "A soft leather loafer that needs no breaking in.", "$120"),
    ("Breeze Tree Runner", "A breathable runner made from eucalyptus fibre.", "$95"),
    ("Dasher Road Shoe", "A responsive running shoe for daily road miles.", "$135"),
]


def collection_grid() -> str:
    """A shop's collection: a filter/facet panel, a sort control, a product grid, pagination."""
    facets = ("<aside class='collection-filters facets'><h3>Filter by</h3><ul>"
              + "".join(f"<li><label><input type='checkbox'> Size {n} (12)</label></li>" for n in range(6, 13))
              + "</ul><h3>Colour</h3><ul><li>Natural Black</li><li>Stormy Grey</li></ul></aside>")
    sort = ("<div class='sort-by'><label>Sort by</label><select><option>Featured</option>"
            "<option>Price, low to high</option></select></div>")
    cards = "".join(
        f"<li class='product-card grid__item'><a href='/products/{i}'><img src='/{i}.jpg' alt=''></a>"
        f"<h3 class='card__title'><a href='/products/{i}'>{name}</a></h3><p class='card__text'>{text}</p>"
        f"<span class='price'>{price}</span></li>"
        for i, (name, text, price) in enumerate(ITEMS)
    )
    pages = ("<nav class='pagination'><a href='?page=1'>1</a> <a href='?page=2'>2</a> "
             "<a href='?page=3'>Next page</a></nav>")
    extra = ("<script type='application/ld+json'>"
             + json.dumps({"@context": "https://schema.org", "@type": "CollectionPage", "name": "Men's Shoes"})
             + "</script>")
    return (_HEAD.format(title="Men's Shoes - Trailhead", extra=extra) + _NAV
            + "<main><h1>Men's Shoes</h1><p class='collection-description'>Shoes for every day, made from natural "
            + "materials.</p>" + facets + sort + f"<ul class='product-grid grid'>{cards}</ul>" + pages + "</main>"
            + _FOOT)


CODE = "pip install trailhead\ntrailhead init --project demo"


def docs_page() -> str:
    """A documentation page: a sidebar, a version picker, headings, prose and code blocks."""
    sidebar = ("<aside class='sidebar'><div class='version-picker'><select><option>v2.3 (latest)</option>"
               "<option>v2.2</option></select></div><ul>"
               + "".join(f"<li><a href='/docs/{n}'>Sidebar chapter {n}</a></li>" for n in range(1, 12))
               + "</ul></aside>")
    prose = ("<h2 id='install'>Installation</h2><p>Trailhead is installed from the package index. It needs Python "
             "3.10 or later and creates a project folder with a configuration file and an empty routes module.</p>"
             f"<pre><code class='language-shell'>{CODE}</code></pre>"
             "<h2 id='configure'>Configuration</h2><p>The configuration file names the routes module and the port "
             "the development server listens on. Every key has a default, so an empty file is a valid one.</p>"
             "<pre><code class='language-toml'>[server]\nport = 8080\nroutes = \"demo.routes\"</code></pre>"
             "<p>Start the development server with <code>trailhead serve</code>; it reloads on every change.</p>")
    return (_HEAD.format(title="Getting started - Trailhead docs", extra="") + _NAV
            + f"<div class='docs-layout'>{sidebar}<main class='docs-content'><h1>Getting started</h1>{prose}"
            + "</main></div>" + _FOOT)


PLANS = [("Starter", "$0", "1 project", "Community support"), ("Team", "$29", "10 projects", "Email support"),
         ("Business", "$99", "Unlimited projects", "Phone support")]


def service_page() -> str:
    """A service's pricing page: a feature list and a pricing table."""
    features = ("<section class='features'><h2>Everything you need to ship</h2><ul>"
                "<li>Deploy previews for every pull request</li><li>Automatic HTTPS certificates</li>"
                "<li>Rollbacks in one click</li><li>Edge caching in 40 regions</li></ul></section>")
    rows = "".join(f"<tr><td>{n}</td><td>{p}/month</td><td>{q}</td><td>{s}</td></tr>" for n, p, q, s in PLANS)
    table = ("<section class='pricing'><h2>Plans and pricing</h2><table><thead><tr><th>Plan</th><th>Price</th>"
             f"<th>Projects</th><th>Support</th></tr></thead><tbody>{rows}</tbody></table></section>")
    intro = ("<section class='hero'><h1>Hosting for teams that ship daily</h1><p>Trailhead Cloud builds, deploys "
             "and scales your web applications, so your team spends its time on the product instead of servers."
             "</p><a class='cta button' href='/signup'>Start free</a></section>")
    extra = ("<script type='application/ld+json'>" + json.dumps({"@context": "https://schema.org", "@type": "Service",
             "name": "Trailhead Cloud"}) + "</script>")
    return (_HEAD.format(title="Pricing - Trailhead Cloud", extra=extra) + _NAV + f"<main>{intro}{features}{table}"
            + "</main>" + _FOOT)


#: a Cloudflare managed-challenge page as served (its structure; ray id and tokens shortened)
CLOUDFLARE_MANAGED = (
    "<!DOCTYPE html><html lang='en-US'><head><title>Just a moment...</title><meta http-equiv='Content-Type' "
    "content='text/html; charset=UTF-8'><meta name='robots' content='noindex,nofollow'></head><body>"
    "<div class='main-wrapper' role='main'><div class='main-content'><h1 class='zone-name-title h1'>example.com</h1>"
    "<h2 class='h2' id='challenge-running'>Checking if the site connection is secure</h2>"
    "<noscript><div class='h2'>Enable JavaScript and cookies to continue</div></noscript></div></div>"
    "<script>(function(){window._cf_chl_opt={cvId: '3',cZone: 'example.com',cType: 'managed',cRay: '8a1b'};"
    "var a = document.createElement('script');a.src = '/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1"
    "?ray=8a1b';document.getElementsByTagName('head')[0].appendChild(a);}());</script>"
    "<div class='footer' role='contentinfo'>Performance &amp; security by Cloudflare</div></body></html>"
)


FACT = ("Former officials testified before the committee; shortly after, posts claimed the ambassador's net worth far "
        "exceeded her salary. We found no evidence to corroborate this claim, and no credible financial outlet reported it.")


def fact_check(claim_review: bool = True) -> str:
    """A fact-check article with a grid of twelve related fact checks below it (its listing signals), with or
    without its ``ClaimReview`` JSON-LD."""
    data = {"@context": "https://schema.org", "@type": "ClaimReview",
            "claimReviewed": "She has a net worth of $17 million.",
            "reviewRating": {"@type": "Rating", "alternateName": "Unproven"},
            "author": {"@type": "Organization", "name": "Fact Desk"}}
    script = f'<script type="application/ld+json">{json.dumps(data)}</script>' if claim_review else ""
    cards = "".join(f'<article class="card"><a href="/fact-check/{i}"><h3>Related fact check number {i}</h3></a>'
                    f"<p>Short teaser for the related story {i}.</p></article>" for i in range(12))
    return (f"<html><head><title>Does she have a net worth of $17 million?</title>{script}</head><body><main>"
            "<h1>Does she have a net worth of $17 million?</h1><p>Claim: she has a net worth of $17 million.</p>"
            f"<p>Rating: Unproven</p><p>{FACT}</p>"
            f'<section class="related grid">{cards}</section></main></body></html>')
