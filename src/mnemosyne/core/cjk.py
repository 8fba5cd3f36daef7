"""Chinese, Japanese and Korean text, and emoji, as the word indexes see them.

SQLite's unicode61 tokenizer splits words at spaces and punctuation. CJK text has
no spaces between its words: a whole run of it ("我住在东京") would be one token,
never matched by the word inside it ("东京"). Emoji are separators to it, or glued
to the word before them ("thanks🙂"). So text holding either is indexed in a form
of its own: each CJK run as its characters and its overlapping character pairs
("东 京 东京"), the common way to search CJK without a dictionary, and each emoji
as a token of its own. A query is split the same way. Every other character is
left as it was, so the rest of the text is indexed word for word as before.

Characters and pairs, both indexed and both searched, measured best on a mixed
set of 80 memories and 74 questions (``bench/cjk.py``, lexical only), R@1 on its
38 Chinese and 13 Japanese questions: 0.97 and 1.00. Searching pairs alone (a
character alone only when it stands alone) found 0.95 and 0.92: a question's
pairs straddle its words ("猫多大了" holds no pair of "我的猫叫小白"). Indexing
pairs alone, 0.89 and 0.92; characters alone, 0.92 and 1.00, ranking a memory that
holds a word's characters apart as high as one holding the word. The memory
holding the whole word ranks first: its pair scores on top of its characters.
"""

from __future__ import annotations

import re
import unicodedata

# Letters of the scripts written without spaces between words: Han, kana, Hangul,
# bopomofo (Korean is usually spaced, but a particle sticks to its noun: "서울에서").
# Punctuation of these blocks ("。", "・", "「") stays a separator.
_CJK_BMP = (
    "\u1100-\u11ff"  # Hangul jamo
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u303c"  # 々 〆 〇, numerals, repeat marks
    "\u3041-\u309a\u309d-\u309f"  # hiragana
    "\u30a1-\u30fa\u30fc-\u30ff"  # katakana (not the middle dot)
    "\u3105-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff"  # bopomofo, compatibility jamo, katakana ext.
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK unified ideographs and extension A
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"  # Hangul syllables and jamo extensions
    "\uf900-\ufaff"  # compatibility ideographs
    "\uff66-\uff9f\uffa0-\uffdc"  # halfwidth katakana and Hangul
)
_CJK_ASTRAL = "\U0001b000-\U0001b16f\U00020000-\U000323af"  # kana supplement, ideograph extensions B to H
_EMOJI_BMP = "\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff"
_EMOJI_ASTRAL = "\U0001f000-\U0001f1e5\U0001f200-\U0001f3fa\U0001f400-\U0001faff"
_FLAG_LETTERS = "\U0001f1e6-\U0001f1ff"
# What follows or joins an emoji without being one: variation selectors, skin
# tones, the keycap mark, tag letters, the zero-width joiner. Folded away, so
# "👍🏽" finds "👍".
_EMOJI_MARKS = "\ufe0e\ufe0f\u20e3\u200d\U0001f3fb-\U0001f3ff\U000e0020-\U000e007f"

_EMOJI = f"{_EMOJI_BMP}{_EMOJI_ASTRAL}{_FLAG_LETTERS}"
_EMOJI_RUN = re.compile(f"(?:[{_EMOJI}][{_EMOJI_MARKS}]*)+")
_EMOJI_ONE = re.compile(f"[{_FLAG_LETTERS}]{{2}}|[{_EMOJI}]")
_SPLIT = re.compile(f"([{_CJK_BMP}{_CJK_ASTRAL}]+|{_EMOJI_RUN.pattern})")
# Every memory and window is checked, so the check is split by plane: a class that
# reaches past U+FFFF is tried range by range, ten times slower on a text with
# curly quotes or dashes than one held in a table.
_ANY_BMP = re.compile(f"[{_CJK_BMP}{_EMOJI_BMP}]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ANY_ASTRAL = re.compile(f"[{_CJK_ASTRAL}{_EMOJI_ASTRAL}{_FLAG_LETTERS}]")
# An emoji is indexed as a private-use character (a letter to the tokenizer, which
# drops most emoji and glues newer ones to their neighbours). The plane-15 block
# holds none of the text people write.
_EMOJI_TOKENS = 0xF0000


def holds(text: str) -> bool:
    """Whether ``text`` holds CJK letters or emoji, which it is indexed apart for."""
    if text.isascii():
        return False
    return bool(_ANY_BMP.search(text) or (_ASTRAL.search(text) and _ANY_ASTRAL.search(text)))


def indexed_text(text: str) -> str:
    """``text`` as the word indexes hold it: each CJK run replaced by its characters
    and overlapping pairs, each emoji by its token, everything else unchanged.

    >>> indexed_text("我住在东京 🚀")
    ' 我 住 在 东 京 我住 住在 在东 东京   \\U000ff680 '
    """
    if not holds(text):
        return text
    return "".join(_indexed_part(part) if index % 2 else part for index, part in enumerate(_SPLIT.split(text)))


def terms(text: str) -> list[str]:
    """The search terms of a CJK run or emoji sequence (a part of a query that
    :func:`holds` CJK or emoji): its characters and pairs, or its emoji tokens."""
    if _EMOJI_RUN.fullmatch(text):
        return _emoji_tokens(text)
    # Halfwidth katakana and compatibility ideographs fold to the common forms (each
    # to letters of these scripts: tests/test_cjk.py).
    run = unicodedata.normalize("NFKC", text)
    return [*run, *_pairs(run)]


def split(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into ``(part, is_cjk_or_emoji)`` parts, in order."""
    return [(part, bool(index % 2)) for index, part in enumerate(_SPLIT.split(text)) if part]


def _indexed_part(part: str) -> str:
    return f" {' '.join(terms(part))} "


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _emoji_tokens(sequence: str) -> list[str]:
    return ["".join(chr(_EMOJI_TOKENS | (ord(c) & 0xFFFF)) for c in one) for one in _EMOJI_ONE.findall(sequence)]
