"""A fetched page ages like a photo, through the real gateway on Sonnet 5.5: four turns later it stops
travelling (the call and its result left out whole, a note naming the address in their place), the
answer's words stay, no request is refused, and only the request after the change loses thinking."""

from __future__ import annotations

from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import running_bot
from tests.support.thinking_trail import losses

URL = "https://docs.example.com/tide-guide"
WEB = {"web_search": {"enabled": False}, "web_fetch": {"enabled": True}}


def kinds(body: dict[str, object]) -> set[str]:
    messages = body["messages"]
    assert isinstance(messages, list)
    return {b["type"] for m in messages if isinstance(m["content"], list) for b in m["content"]}


async def test_an_old_fetched_page_stops_travelling_and_nothing_is_refused(db_url: str) -> None:
    async with (
        FakeAnthropic() as fake,
        running_bot(fake, db_url, model="claude-sonnet-5-5", tools=WEB) as bot,
    ):
        fake.web.page_tokens = 8_000
        await bot.adapter.say(f"fetch: {URL}")
        assert "web_fetch_tool_result" not in kinds(bot.replies()[-1].body)  # the call that fetched it
        await bot.adapter.say("thanks, what else?")
        assert "web_fetch_tool_result" in kinds(bot.replies()[-1].body), "the page goes back verbatim"
        for i in range(4):
            await bot.adapter.say(f"question {i}")
        last = bot.replies()[-1].body
        assert not kinds(last) & {"web_fetch_tool_result", "server_tool_use"}
        sent = str(last["messages"])
        assert f"earlier web lookup no longer attached: {URL}" in sent
        assert f"The page {URL} says hello." in sent, "the answer's words stay"
        stored = [r for r in await bot.window() if r.role == "assistant"]
        assert stored[0].pruned
        assert "web_fetch_tool_result" in str(stored[0].content), "the stored row keeps the page"
        assert [r.status for r in bot.replies()] == [200] * 6
        assert {c["outcome"] for r in fake.requests for c in r.thinking_checks} == {"kept"}
        assert len(losses(bot.replies())) == 1
