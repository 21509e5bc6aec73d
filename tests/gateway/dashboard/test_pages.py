"""The dashboard's pages and actions through a real gateway: login, what an outsider sees, the chat
list and page, escaping, Compact and Undo with their audit lines, and refused forged requests."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from markupsafe import escape

from gateway.store.locks.leases import default_worker_name
from gateway.store.reminders import NewReminder
from tests.fakes.anthropic import FakeAnthropic
from tests.gateway.dashboard.conftest import PASSWORD, Board, open_board
from tests.support.memory_adapter import ADMIN, ALICE, group_chat

EVIL_TITLE = "<b>Ops</b> & co"
XSS = "<img src=x onerror=alert(1)>"


async def chatter(board: Board, n: int = 6) -> None:
    for i in range(n):
        await board.bot.adapter.say(f"fact{i}: " + " ".join(f"item{j}" for j in range(150)), user=ADMIN)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page carries a CSRF token"
    return found.group(1)


async def test_nothing_without_login_and_a_wrong_password_fails(board: Board) -> None:
    await board.bot.adapter.say("secret plans for tuesday", user=ALICE)
    for path in ("/", "/chats", "/chats/1"):
        status, body = await board.page(path)
        assert status == 303
        assert "secret plans" not in body
    status, body = await board.page("/login")
    assert status == 200
    assert "secret plans" not in body
    assert await board.login("wrong") == 401
    assert (await board.page("/chats"))[0] == 303
    assert await board.login() == 303
    status, body = await board.page("/chats")
    assert status == 200
    assert "Alice" in body


async def test_every_response_carries_the_security_headers(board: Board) -> None:
    for path in ("/login", "/static/chart.js"):
        response = await board.client.get(path)
        assert response.headers["X-Frame-Options"] == "DENY"
        csp = response.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp
        assert "unsafe-inline" not in csp


async def test_login_cookie_is_httponly_and_strict(board: Board) -> None:
    response = await board.client.post(
        "/login",
        data={"password": PASSWORD},
        headers={"Origin": board.origin},
        allow_redirects=False,
    )
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Secure" not in cookie  # plain http on loopback; behind TLS it is set (test_guard)


async def test_login_attempts_are_limited_per_client(board: Board) -> None:
    for _ in range(5):
        assert await board.login("nope") == 401
    assert await board.login() == 429, "even the right password waits once the attempts are used up"


async def test_chats_list_names_each_chat_with_its_context_fill(board: Board) -> None:
    await board.bot.adapter.say("hello there", user=ALICE)
    await board.bot.adapter.say("@bot hi", user=ALICE, chat=group_chat("-5", EVIL_TITLE), mentions_bot=True)
    await board.login()
    status, body = await board.page("/chats")
    assert status == 200
    assert "&lt;b&gt;Ops&lt;/b&gt; &amp; co" in body, "a title's markup is shown as text"
    assert "<b>Ops</b>" not in body
    assert "Alice" in body
    assert len(re.findall(r'<td class="fill">\d+%</td>', body)) == 2


async def test_a_message_with_markup_stays_text(board: Board) -> None:
    await board.bot.adapter.say(XSS, user=ALICE)
    await board.login()
    chat_pk = await board.bot.chat_pk("telegram", "42")
    status, body = await board.page(f"/chats/{chat_pk}")
    assert status == 200
    assert "&lt;img src=x onerror=alert(1)&gt;" in body
    assert "<img" not in body
    assert re.search(r"<td>user messages</td><td>[\d,]+</td><td>\d+%</td>", body), "the window by part"


async def test_unknown_chats_and_paths_outside_static_are_not_found(board: Board) -> None:
    await board.login()
    for path in ("/chats/999", "/chats/abc", "/static/../guard.py", "/static/%2e%2e/guard.py", "/static/"):
        status, body = await board.page(path)
        assert status in (403, 404), (path, status)
        assert "compare_digest" not in body


async def test_compact_and_undo_from_the_page_are_audited(board: Board) -> None:
    await chatter(board)
    await board.login()
    chat_pk = await board.bot.chat_pk("telegram", "1")
    _, page = await board.page(f"/chats/{chat_pk}")
    token = csrf_of(page)
    response = await board.client.post(
        f"/chats/{chat_pk}/compact",
        data={"csrf": token},
        headers={"Origin": board.origin},
        allow_redirects=False,
    )
    assert response.status == 303
    _, page = await board.page(f"/chats/{chat_pk}")
    assert "manual" in page
    assert re.search(r"<td>compact</td><td>ok</td>", page)
    assert await board.bot.scalar("SELECT count(*) FROM compactions WHERE \"trigger\" = 'manual'") == 1
    summary = await board.bot.scalar(
        "SELECT m.text FROM compactions c JOIN messages m ON m.id = c.summary_message_id"
    )
    assert summary
    assert str(escape(summary)) in page, "the summary is shown whole (escaped)"
    assert 'id="chart-data"' in page

    response = await board.client.post(
        f"/chats/{chat_pk}/undo",
        data={"csrf": token},
        headers={"Origin": board.origin},
        allow_redirects=False,
    )
    assert response.status == 303
    _, page = await board.page(f"/chats/{chat_pk}")
    assert re.search(r"<td>undo</td><td>ok</td>", page)
    assert await board.bot.scalar("SELECT count(*) FROM dashboard_actions") == 2


@pytest.mark.parametrize(
    ("headers", "with_token"),
    [
        ({"Origin": "http://evil.example"}, True),
        ({}, True),  # no Origin, no Referer
        (None, False),  # own origin, no token
    ],
    ids=["other-origin", "no-origin", "no-token"],
)
async def test_forged_posts_are_refused_and_change_nothing(
    board: Board, headers: dict[str, str] | None, with_token: bool
) -> None:
    await chatter(board)
    await board.login()
    chat_pk = await board.bot.chat_pk("telegram", "1")
    _, page = await board.page(f"/chats/{chat_pk}")
    data = {"csrf": csrf_of(page)} if with_token else {}
    sent = {"Origin": board.origin} if headers is None else headers
    response = await board.client.post(
        f"/chats/{chat_pk}/compact", data=data, headers=sent, allow_redirects=False
    )
    assert response.status == 403
    assert await board.bot.scalar("SELECT count(*) FROM compactions") == 0
    assert await board.bot.scalar("SELECT count(*) FROM dashboard_actions") == 0


async def test_a_foreign_host_name_is_refused(board: Board) -> None:
    await board.login()
    response = await board.client.get("/chats", headers={"Host": f"rebound.example:{board.port}"})
    assert response.status == 421


async def test_overview_shows_spend_workers_backlog_and_nothing_due(board: Board) -> None:
    await board.bot.adapter.say("hello", user=ALICE)
    await board.login()
    status, body = await board.page("/")
    assert status == 200
    for part in ("today", "this month", "compactions today", "cache read share", "reply parts waiting"):
        assert part in body
    assert re.search(r'id="reminders-due">.*nothing due', body, re.S)
    assert board.bot.gateway.settings.fleet.worker_name is None
    assert "<td>" + default_worker_name() + "</td>" in body, "this worker is listed"


async def remind(board: Board, chat_pk: int, text: str, due: timedelta, rrule: str | None = None) -> int:
    new = NewReminder(chat_pk, "reminder", text, rrule, "Europe/Berlin", board.bot.gateway.now() + due)
    record = await board.bot.store.add_reminder(new, max_active=10)
    assert record is not None
    return record.id


async def test_reminders_due_today_are_on_the_overview_and_each_chats_on_its_page(board: Board) -> None:
    await board.bot.adapter.say("hello", user=ALICE)
    await board.bot.adapter.say("@bot hi", user=ALICE, chat=group_chat("-5", EVIL_TITLE), mentions_bot=True)
    private = await board.bot.chat_pk("telegram", "42")
    group = await board.bot.chat_pk("telegram", "-5")
    soon = await remind(board, group, "call the bank " + XSS, timedelta(hours=2))
    later = await remind(board, private, "renew the passport", timedelta(days=3), "FREQ=WEEKLY")
    await board.bot.store.set_chat_timezone(private, "Asia/Tokyo")
    await board.login()

    _, overview = await board.page("/")
    due = overview.split('id="reminders-due"', 1)[1]
    assert f'<a href="/chats/{group}">{escape(EVIL_TITLE)}</a>' in due, "the chat, by its title, linked"
    assert f"#{soon} " in due
    assert "call the bank &lt;img src=x" in due
    assert "<img" not in overview
    assert "renew the passport" not in due, "three days away is not due today"

    _, page = await board.page(f"/chats/{private}")
    section = page.split('id="reminders"', 1)[1].split("</section>", 1)[0]
    assert f"#{later} " in section
    assert "renew the passport" in section
    assert " JST" in section, "times in the chat's own zone"
    _, group_page = await board.page(f"/chats/{group}")
    assert "renew the passport" not in group_page


@pytest.fixture
async def open_board_without_password(fake: FakeAnthropic, sqlite_url: str) -> AsyncIterator[Board]:
    async for opened in open_board(fake, sqlite_url):
        yield opened


async def test_loopback_without_a_password_needs_no_login_but_still_a_token(
    open_board_without_password: Board,
) -> None:
    board = open_board_without_password
    await chatter(board)
    status, body = await board.page("/chats")
    assert status == 200
    assert "open to anyone who can reach its port" in body
    chat_pk = await board.bot.chat_pk("telegram", "1")
    response = await board.client.post(
        f"/chats/{chat_pk}/compact", data={}, headers={"Origin": board.origin}, allow_redirects=False
    )
    assert response.status == 403


@pytest.fixture
async def proxied_board(fake: FakeAnthropic, sqlite_url: str) -> AsyncIterator[Board]:
    async for opened in open_board(fake, sqlite_url, password=PASSWORD, trusted_proxies=("127.0.0.1",)):
        yield opened


async def test_behind_a_trusted_tls_proxy_the_cookie_is_secure(proxied_board: Board) -> None:
    proxy = {
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "dash.example.org",
        "X-Forwarded-For": "198.51.100.4",
    }
    response = await proxied_board.client.post(
        "/login",
        data={"password": PASSWORD},
        headers={**proxy, "Origin": "https://dash.example.org"},
        allow_redirects=False,
    )
    assert response.status == 303
    assert "Secure" in response.headers["Set-Cookie"]
    refused = await proxied_board.client.post(
        "/login", data={"password": PASSWORD}, headers={**proxy, "Origin": proxied_board.origin}
    )
    assert refused.status == 403, "the page's origin is the proxy's, not the backend's"
