"""From a question in any language to search terms, and from a matching message to its best passage.

Pure text policy shared by both databases' full-text queries. A query is split into words (scripts that
put spaces between words) and grams (two-character pieces of text written without spaces: Chinese,
Japanese, Korean, Thai, Lao, Khmer, Myanmar). Stop words, question words and punctuation are dropped,
so "When did Melanie paint a sunrise?" searches for melanie, paint and sunrise; the databases stem the
words (Porter on SQLite, Snowball English on Postgres) and rank messages matching any term (BM25), so a
message need not contain every word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

UNSEGMENTED = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
)
"""Code point ranges of scripts written without spaces (migration 0005 holds a copy for the triggers)."""

_TOKEN = re.compile(rf"([{UNSEGMENTED}]+)|([^\W_{UNSEGMENTED}]+)")
_HIRAGANA = re.compile(r"^[\u3040-\u309f]+$")

MAX_WORDS = 24
MAX_GRAMS = 24

# Function words of English questions and requests: Snowball's English list (which Postgres also drops),
# question words, and words about talking that every chat is full of ("what did she say about ...").
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
    down during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's
    her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it
    it's its itself let's me more most mustn't my myself no nor not of off on once only or other ought
    our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such
    than that that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves
    also anything ever else just may might must shall something thing things us will yet whose whats
    hey hi ok okay please thanks know think remember recall mention mentioned said say says saying tell
    told talk talked talking discuss discussed
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

# Chinese particles and question words: a two-character piece that holds one of these (什么, 了吗, 的时)
# or is made of two very common characters (我们, 是不) says nothing about the topic.
_CJK_PARTICLES = frozenset("的了吗呢吧啊么哪谁呀嘛")
_CJK_COMMON = frozenset("我你他她它们这那是在有和也都就去会要说过什怎为个一不没很还")
_CJK_STOP_GRAMS = frozenset({"时候", "记得", "多少", "知道", "告诉", "提到", "以前"})


@dataclass(frozen=True, slots=True)
class QueryTerms:
    words: tuple[str, ...]
    """Lower-cased words of spaced scripts, stop words removed (the databases stem them)."""
    grams: tuple[str, ...]
    """Two-character pieces (or a lone character) of unsegmented text."""

    @property
    def empty(self) -> bool:
        return not self.words and not self.grams

    def all(self) -> tuple[str, ...]:
        return self.words + self.grams


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _useful_gram(gram: str) -> bool:
    if gram in _CJK_STOP_GRAMS or any(c in _CJK_PARTICLES for c in gram):
        return False
    return not all(c in _CJK_COMMON for c in gram)


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def analyze(query: str) -> QueryTerms:
    """The search terms of a query (a question, keywords, or both, in any mix of languages)."""
    words: list[str] = []
    grams: list[str] = []
    for run, word in _TOKEN.findall(_normalise(query)):
        if run:
            grams += _bigrams(run)
        elif word.isdigit() or len(word) > 1:
            words.append(word)
    content = [w for w in words if w not in STOP_WORDS]
    useful = [g for g in grams if _useful_gram(g)]
    if any(not _HIRAGANA.match(g) for g in useful):
        useful = [g for g in useful if not _HIRAGANA.match(g)]
    # A query of nothing but function words still searches for them rather than for nothing.
    if not content and not useful:
        content, useful = words, grams
    return QueryTerms(words=tuple(_dedupe(content)[:MAX_WORDS]), grams=tuple(_dedupe(useful)[:MAX_GRAMS]))


def split_authors(terms: QueryTerms, participants: Iterable[str]) -> tuple[QueryTerms, tuple[str, ...]]:
    """(terms to look for in the messages, names of the chat's authors the query names).

    In "When did Melanie paint a sunrise?" Melanie is most likely who said it, not a word of it: her name
    ranks her messages up instead of matching every message that mentions her. A query of nothing but
    names still looks for them in the messages too.
    """
    named: list[str] = []
    used: set[str] = set()
    for name in participants:
        parts = _normalise(name).split()
        # Exact words only: "car" is not "Caroline" ("Melanie's" is split into "melanie" and "s").
        hits = {w for w in terms.words if w in parts}
        if hits:
            named.append(name)
            used |= hits
    rest = tuple(w for w in terms.words if w not in used)
    if not rest and not terms.grams:
        return terms, tuple(named)
    return QueryTerms(words=rest, grams=terms.grams), tuple(named)


# -- excerpts ---------------------------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def same_word(token: str, term: str) -> bool:
    """True when two lower-cased words look like forms of one word (book/books, paint/painted)."""
    if token == term:
        return True
    shorter = min(len(token), len(term))
    if shorter < 3:
        return False
    common = _common_prefix(token, term)
    # Short words must be a prefix of the other (book/books, not book/boot); longer ones may differ
    # in their last two letters (painted/painting, study/studies).
    return common >= shorter if shorter <= 4 else common >= max(4, shorter - 2)


def term_positions(text: str, terms: QueryTerms) -> list[tuple[int, int, str]]:
    """(start, end, term) of every place in `text` where a query term occurs, in text order."""
    found: list[tuple[int, int, str]] = []
    if terms.words:
        for match in re.finditer(rf"[^\W_{UNSEGMENTED}]+", text):
            token = _normalise(match.group())
            for term in terms.words:
                if same_word(token, term):
                    found.append((match.start(), match.end(), term))
                    break
    if terms.grams:
        lowered = text.lower()
        if len(lowered) == len(text):
            for gram in terms.grams:
                start = lowered.find(gram)
                while start >= 0:
                    found.append((start, start + len(gram), gram))
                    start = lowered.find(gram, start + 1)
    found.sort()
    return found


def best_window(text: str, terms: QueryTerms, width: int) -> tuple[int, int]:
    """The [start, end) span of about `width` characters holding the most distinct query terms."""
    if len(text) <= width:
        return 0, len(text)
    hits = term_positions(text, terms)
    if not hits:
        return 0, width
    best = (0, -1, 0)  # (distinct terms, -start, start index into hits)
    for i, (start, _end, _term) in enumerate(hits):
        distinct = {t for s, _e, t in hits[i:] if s < start + width}
        best = max(best, (len(distinct), -start, i))
    first = hits[best[2]][0]
    last_end = max(e for s, e, _t in hits[best[2] :] if s < first + width)
    # Some context before the first match, without running past the last match in the window.
    lead = min(width // 4, max(0, width - (last_end - first)))
    begin = max(0, min(first - lead, len(text) - width))
    space = text.rfind(" ", max(0, begin - 20), begin + 1)
    if 0 < space < first:
        begin = space + 1
    end = min(len(text), begin + width)
    if end < len(text):
        space = text.rfind(" ", end - 20, end)
        end = space if space > last_end else end
    return begin, end


def excerpt(text: str, terms: QueryTerms, width: int) -> tuple[str, int]:
    """(excerpt, offset): about `width` characters around the best-matching passage, with ellipses
    where the text was cut; `offset` is where the excerpt starts in `text`."""
    start, end = best_window(text, terms, width)
    body = text[start:end]
    if start == 0 and end == len(text):
        return body, 0
    return ("…" if start else "") + body.strip() + ("…" if end < len(text) else ""), start
