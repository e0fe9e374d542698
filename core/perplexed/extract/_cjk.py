"""The Chinese, Japanese and Korean character ranges, and a run of them: what the index's query side
(:mod:`perplexed.index._terms`) and the document text tools (:mod:`perplexed.extract._doctext`) share, in a module
that imports nothing else (issue 35: a search of the index loads no HTML parser)."""

from __future__ import annotations

import re

__all__ = ["CJK_RUN"]

_CJK_CHARS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # iteration and closing marks, ideographic zero
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana (with ー)
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
#: a run of Chinese, Japanese or Korean characters
CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
