"""Split a reply into chunks under a platform's length limit without breaking code blocks.

Splits prefer line boundaries, then spaces, then raw code units. A chunk that ends inside a
``` fence is closed with ``` and the next chunk reopens it with the same opener line (language kept),
so every chunk renders on its own. Lengths are measured in characters or UTF-16 code units
(Telegram counts UTF-16; an emoji outside the BMP is 2 units) and surrogate pairs are never cut.
"""

from __future__ import annotations

from typing import Literal

Unit = Literal["chars", "utf16"]
FENCE = "```"


def measure(text: str, unit: Unit) -> int:
    if unit == "chars":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _hard_cut(line: str, budget: int, unit: Unit) -> tuple[str, str]:
    """Cut `line` so the head fits `budget`, preferring the last space; never inside a character."""
    if budget <= 0:
        return "", line
    used = 0
    cut = 0
    for i, ch in enumerate(line):
        w = 1 if unit == "chars" or ord(ch) < 0x10000 else 2
        if used + w > budget:
            break
        used += w
        cut = i + 1
    space = line.rfind(" ", 0, cut)
    if space > cut // 2 and cut < len(line):
        return line[: space + 1], line[space + 1 :]
    return line[:cut], line[cut:]


def split_text(text: str, limit: int, *, unit: Unit = "chars") -> list[str]:
    """Chunks of `text`, each at most `limit` long in `unit`; an empty text gives no chunks."""
    if limit < 2 * len(FENCE) + 16:
        raise ValueError(f"limit {limit} is too small to split into")
    text = text.strip("\n")
    if not text.strip():
        return []
    if measure(text, unit) <= limit:
        return [text]

    chunks: list[str] = []
    current: list[str] = []
    size = 0
    has_content = False  # the chunk holds lines of the text, not only a reopened fence
    fence_opener: str | None = None  # the opener line of the fence we are inside, if any
    close_cost = measure("\n" + FENCE, unit)

    def flush() -> None:
        nonlocal current, size, has_content
        body = "\n".join(current)
        if fence_opener is not None:
            body = body + "\n" + FENCE
        if body.strip():
            chunks.append(body)
        current = [fence_opener] if fence_opener is not None else []
        size = measure(fence_opener, unit) if fence_opener is not None else 0
        has_content = False

    pending = text.split("\n")
    i = 0
    while i < len(pending):
        line = pending[i]
        sep = 1 if current else 0
        line_len = measure(line, unit)
        is_fence = line.lstrip().startswith(FENCE)
        # After this line, are we inside a fence (which the chunk must then be able to close)?
        inside_after = (fence_opener is None) == is_fence
        reserve = close_cost if inside_after else 0
        if size + sep + line_len + reserve <= limit:
            current.append(line)
            size += sep + line_len
            has_content = True
            if is_fence:
                fence_opener = None if fence_opener is not None else line.strip()
            i += 1
            continue
        if has_content:
            flush()
            continue
        # A single line longer than a whole chunk: cut it (a fence line is cut as plain text).
        reserve = close_cost if fence_opener is not None else 0
        head, tail = _hard_cut(line, limit - size - sep - reserve, unit)
        if not head:
            raise ValueError("cannot make progress splitting text")  # pragma: no cover
        current.append(head)
        size += sep + measure(head, unit)
        has_content = True
        pending[i] = tail
        flush()
    if has_content:
        flush()
    return chunks
