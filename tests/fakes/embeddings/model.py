"""A deterministic stand-in for an embedding model, for the fake server and the recall benchmark.

It hashes features of the text into a fixed number of dimensions (feature hashing): stemmed content
words, two-character pieces of unsegmented scripts, and for words in `CONCEPTS` the concept instead of
the word, so synonyms land on the same feature. That is the one thing a real model does that keyword
search cannot; it is a fixed, general list, but it knows nothing a real model would not, and a real
model knows far more. Results measured with it show that the fusion works, not how good a real
embedding model is.
"""

from __future__ import annotations

import hashlib
import math
import re

DIMS = 256

CONCEPTS: dict[str, str] = {
    word: group[0]
    for group in (
        ("car", "automobile", "vehicle"),
        ("doctor", "physician", "gp"),
        ("film", "movie", "cinema"),
        ("buy", "bought", "purchase", "purchased"),
        ("start", "begin", "began", "started"),
        ("big", "large", "huge"),
        ("job", "work", "career", "employment"),
        ("sofa", "couch"),
        ("holiday", "vacation", "trip", "journey"),
        ("child", "kid", "kids", "children"),
        ("lawyer", "attorney"),
        ("dinner", "supper", "meal"),
        ("shop", "store"),
        ("photo", "picture", "photograph"),
        ("gift", "present"),
        ("house", "home", "flat", "apartment"),
        ("dog", "puppy", "hound"),
        ("cat", "kitten"),
        ("sick", "ill", "unwell"),
        ("fix", "repair", "repaired", "fixed"),
        ("boss", "manager", "supervisor"),
        ("money", "cash", "funds"),
        ("wedding", "marriage"),
        ("exam", "test"),
        ("bike", "bicycle"),
        ("phone", "mobile", "smartphone"),
        ("sea", "ocean", "beach"),
        ("song", "tune", "track"),
        ("book", "novel"),
        ("teacher", "tutor", "instructor"),
        ("cook", "bake", "baked", "cooked"),
        ("run", "jog", "jogging", "marathon"),
        ("paint", "painting", "draw", "drawing", "sketch"),
        ("move", "moved", "relocate", "relocated"),
        ("quit", "resign", "resigned"),
        ("garden", "yard"),
        ("medicine", "medication", "pills"),
    )
    for word in group
}

_STOP_TEXT = (
    "a an and are as at be but by did do does for from had has have he her his i in is it its me my of "
    "on or our she so that the their them they this to us was we were what when where which who why "
    "will with you your"
)
_STOP = frozenset(_STOP_TEXT.split())
_UNSEGMENTED = "\u0e00-\u0eff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"([{_UNSEGMENTED}]+)|([^\W_{_UNSEGMENTED}]+)")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def features(text: str) -> list[str]:
    found: list[str] = []
    for run, word in _TOKEN.findall(text.lower()):
        if run:
            found += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        elif word not in _STOP and len(word) > 1:
            found.append(CONCEPTS.get(word) or CONCEPTS.get(_stem(word)) or _stem(word))
    return found or ["<empty>"]


def _slot(feature: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dims, (1.0 if value >> 63 else -1.0)


def embed(text: str, dims: int = DIMS) -> list[float]:
    """A unit vector for `text`; similar wording and synonyms from CONCEPTS point the same way."""
    vector = [0.0] * dims
    for feature in features(text):
        index, sign = _slot(feature, dims)
        vector[index] += sign
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]
