"""MkDocs hook: the docstrings' Sphinx cross-reference roles rendered as code, never as raw roles.

The docstrings use Sphinx roles (``:class:`~perplexed.InvalidRequest```, ``:func:`perplexed.answer```), which
mkdocstrings' Markdown rendering leaves as text (``:class:`` followed by the code). This hook turns each one
into the code it names (the last part with ``~``, as Sphinx shows it), linked to the object's entry when the
page documents it (mkdocstrings gives every entry its dotted path as the anchor).
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|exc|data|mod|obj|const|type):<code>(~?)([\w.]+)(\(\))?</code>")


def on_page_content(html: str, **kwargs: Any) -> str:
    anchors = set(re.findall(r'id="([\w.]+)"', html))

    def code(match: re.Match[str]) -> str:
        short, target, call = match.group(1), match.group(2), match.group(3) or ""
        shown = (target.rsplit(".", 1)[-1] if short else target) + call
        if target in anchors:
            return f'<a href="#{target}"><code>{shown}</code></a>'
        return f"<code>{shown}</code>"

    return _ROLE.sub(code, html)
