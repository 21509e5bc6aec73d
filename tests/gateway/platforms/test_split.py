"""Reply splitting: under the limit, code fences intact in every chunk, nothing lost."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.platforms.split import FENCE, measure, split_text


def _fences_balanced(chunk: str) -> bool:
    return sum(1 for line in chunk.split("\n") if line.lstrip().startswith(FENCE)) % 2 == 0


def _strip_fence_repairs(chunks: list[str]) -> str:
    """Undo the close/reopen lines the splitter adds so the original text can be compared."""
    return "".join(chunks)


def test_short_text_is_one_chunk() -> None:
    assert split_text("hello", 100) == ["hello"]


def test_empty_text_gives_no_chunks() -> None:
    assert split_text("  \n ", 100) == []


def test_long_text_splits_on_lines_under_limit() -> None:
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(100))
    chunks = split_text(text, 500)
    assert len(chunks) > 1
    assert all(len(c) <= 500 for c in chunks)
    assert "\n".join(chunks).replace("\n", "") == text.replace("\n", "")


def test_code_block_is_closed_and_reopened_with_language() -> None:
    code = "\n".join(f"print({i})" for i in range(200))
    text = f"Here:\n```python\n{code}\n```\nDone."
    chunks = split_text(text, 300)
    assert len(chunks) > 2
    for c in chunks:
        assert len(c) <= 300
        assert _fences_balanced(c), c
    assert chunks[1].startswith("```python")
    assert chunks[-1].endswith("Done.")


def test_utf16_counts_astral_emoji_as_two_units() -> None:
    text = "😀" * 3000  # 6000 UTF-16 units, no spaces or lines
    chunks = split_text(text, 4096, unit="utf16")
    assert len(chunks) == 2
    assert all(measure(c, "utf16") <= 4096 for c in chunks)
    assert "".join(chunks) == text  # no surrogate pair was cut


def test_overlong_single_line_prefers_spaces() -> None:
    words = " ".join(["word"] * 1000)
    chunks = split_text(words, 200)
    assert all(len(c) <= 200 for c in chunks)
    assert all(not c.startswith(" ") for c in chunks[1:])
    assert "".join(chunks).split() == words.split()


def test_limit_too_small_is_rejected() -> None:
    with pytest.raises(ValueError, match="too small"):
        split_text("abc", 5)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300),
            st.sampled_from(["```", "```python", "", "    ```js"]),
        ),
        max_size=60,
    ),
    st.integers(min_value=40, max_value=500),
    st.sampled_from(["chars", "utf16"]),
)
def test_property_chunks_fit_and_keep_all_text(lines: list[str], limit: int, unit: str) -> None:
    text = "\n".join(lines)
    chunks = split_text(text, limit, unit=unit)  # type: ignore[arg-type]
    for c in chunks:
        assert measure(c, unit) <= limit  # type: ignore[arg-type]
    original = "".join(text.split())
    rebuilt = "".join("".join(chunks).split())
    # Every original non-space character survives in order (fence repairs only add ``` lines).
    it = iter(rebuilt)
    assert all(ch in it for ch in original)


def test_fence_opened_at_chunk_end_leaves_room_to_close() -> None:
    lines = ["𐀀", "000𐀀", "", "", "", "0", "000", "000000000", "```000000", "000"]
    chunks = split_text("\n".join(lines), 40, unit="utf16")
    assert all(measure(c, "utf16") <= 40 for c in chunks)
    assert all(_fences_balanced(c) for c in chunks)


def test_trailing_fence_opener_is_not_dropped() -> None:
    lines = ["𐀀", "000", "", "", "", "000", "000", "000", "000000000", "```000000"]
    chunks = split_text("\n".join(lines), 40, unit="utf16")
    assert "```000000" in "\n".join(chunks)
