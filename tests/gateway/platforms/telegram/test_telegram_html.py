"""Markdown -> Telegram HTML: what users see rendered, and output Telegram always accepts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.platforms.telegram.html import markdown_to_telegram_html as render
from tests.fakes.telegram.html_parser import HtmlParseError, parse_html


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("**bold** and __also__", "<b>bold</b> and <b>also</b>"),
        ("*italic* and _this_", "<i>italic</i> and <i>this</i>"),
        ("~~gone~~", "<s>gone</s>"),
        ("use `x < y && z`", "use <code>x &lt; y &amp;&amp; z</code>"),
        (
            "see [docs](https://example.com/a?b=1&c=2)",
            'see <a href="https://example.com/a?b=1&amp;c=2">docs</a>',
        ),
        ("## Title", "<b>Title</b>"),
        ("> quoted\n> more", "<blockquote>quoted\nmore</blockquote>"),
        ("snake_case_name stays", "snake_case_name stays"),
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("- item\n* item", "- item\n* item"),
        ("a <b> tag & co", "a &lt;b&gt; tag &amp; co"),
        ("**unclosed bold", "**unclosed bold"),
    ],
)
def test_common_markdown_renders_as_telegram_html(markdown: str, html: str) -> None:
    assert render(markdown) == html
    parse_html(render(markdown))


def test_fenced_code_keeps_language_and_escapes_body() -> None:
    html = render("Run:\n```python\nif a < b and c & d:\n    print('**not bold**')\n```\ndone")
    assert html == (
        'Run:\n<pre><code class="language-python">if a &lt; b and c &amp; d:\n'
        "    print(&#x27;**not bold**&#x27;)</code></pre>\ndone"
    )
    assert "print('**not bold**')" in parse_html(html)


def test_unclosed_fence_runs_to_the_end_and_still_parses() -> None:
    html = render("text\n```\ncode <here>")
    assert html == "text\n<pre>code &lt;here&gt;</pre>"


def test_odd_language_names_are_dropped_not_injected() -> None:
    html = render('```py" onclick="x\nbody\n```')
    assert html == "<pre>body</pre>"


def test_links_with_quotes_or_unsafe_schemes_stay_text() -> None:
    assert "<a" not in render("[x](javascript:alert(1))")
    html = render('[x](https://e.com/"><b>)')
    parse_html(html)


def test_link_label_keeps_formatting_but_not_nested_links() -> None:
    html = render("[**bold** [in](https://b.c)](https://a.b)")
    parse_html(html)
    assert html.count("<a ") <= 1


def test_parser_rejects_what_telegram_rejects() -> None:
    for bad in [
        "<b>open",
        "a < b",
        "fish & chips",
        "<b><i>x</b></i>",
        "<script>x</script>",
        "<pre><b>x</b></pre>",
    ]:
        with pytest.raises(HtmlParseError):
            parse_html(bad)


_pieces = [*list("*_~`[]()<>&#>\n -.:/\"'ab1😀"), "```", "**", "https://x.y", "```py\n", "> ", "## "]
_markdownish = st.lists(st.sampled_from(_pieces), max_size=80).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(_markdownish, st.text(max_size=200)))
def test_any_text_renders_to_html_telegram_accepts(text: str) -> None:
    html = render(text)
    visible = parse_html(html)
    # Nothing the model wrote disappears except markdown syntax (including a fence's language name).
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            continue
        for word in line.split(" "):
            if word.isalnum():
                assert word in visible
