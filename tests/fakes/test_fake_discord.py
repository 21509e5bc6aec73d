"""The fake Discord speaks the wire protocol: checked here with a plain HTTP/websocket client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes.discord import FakeDiscord

GUILD, GENERAL, THREAD = 700, 701, 702


@pytest.fixture
async def dc() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(token="tkn", app_id=11, bot_user_id=22) as fake:
        fake.add_guild(GUILD, "Guild", channels=[(GENERAL, "general")])
        fake.add_thread(GUILD, GENERAL, THREAD, "a-thread")
        yield fake


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


AUTH = {"Authorization": "Bot tkn"}


async def recv(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    msg = await ws.receive(timeout=5)
    assert msg.type is aiohttp.WSMsgType.TEXT, msg
    payload: dict[str, Any] = json.loads(msg.data)
    return payload


async def identify(ws: aiohttp.ClientWebSocketResponse, token: str = "tkn") -> dict[str, Any]:
    hello = await recv(ws)
    await ws.send_json({"op": 2, "d": {"token": token, "intents": 33281, "properties": {}}})
    return hello


async def test_rest_requires_the_bot_token_and_answers_plain_application_json(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    async with http.get(f"{dc.api_base}/users/@me") as resp:
        assert resp.status == 401
        assert resp.headers["Content-Type"] == "application/json"
        assert await resp.json() == {"message": "401: Unauthorized", "code": 0}
    async with http.get(f"{dc.api_base}/users/@me", headers=AUTH) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json"
        body = await resp.json()
    assert (body["id"], body["bot"]) == ("22", True)


async def test_message_content_is_validated_like_discord(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    url = f"{dc.api_base}/channels/{GENERAL}/messages"
    async with http.post(url, json={"content": "x" * 2001}, headers=AUTH) as resp:
        assert resp.status == 400
        body = await resp.json()
        assert body["code"] == 50035
        assert "content" in body["errors"]
    async with http.post(url, json={"content": ""}, headers=AUTH) as resp:
        assert (resp.status, (await resp.json())["code"]) == (400, 50006)
    async with http.post(f"{dc.api_base}/channels/1/messages", json={"content": "hi"}, headers=AUTH) as resp:
        assert (resp.status, (await resp.json())["code"]) == (404, 10003)
    mentions = {"parse": ["users"]}
    async with http.post(
        url, json={"content": "x" * 2000, "allowed_mentions": mentions}, headers=AUTH
    ) as resp:
        assert resp.status == 200
        assert (await resp.json())["author"]["id"] == "22"
    assert [(s.channel_id, len(s.content), s.allowed_mentions) for s in dc.sent] == [
        (GENERAL, 2000, mentions)
    ]


async def test_rate_limit_fault_carries_the_headers_discord_py_reads(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    dc.fail_next(f"POST /channels/{GENERAL}/messages", status=429, retry_after=0.25)
    url = f"{dc.api_base}/channels/{GENERAL}/messages"
    async with http.post(url, json={"content": "a"}, headers=AUTH) as resp:
        assert resp.status == 429
        assert resp.headers["Via"]
        assert resp.headers["X-RateLimit-Remaining"] == "0"
        assert float(resp.headers["X-RateLimit-Reset-After"]) == 0.25
        assert (await resp.json())["retry_after"] == 0.25
    async with http.post(url, json={"content": "b"}, headers=AUTH) as resp:
        assert resp.status == 200
    assert [s.content for s in dc.sent] == ["b"]


async def test_fault_pattern_matches_only_its_route(dc: FakeDiscord, http: aiohttp.ClientSession) -> None:
    dc.fail_next(f"POST /channels/{THREAD}/messages", status=403)
    async with http.post(
        f"{dc.api_base}/channels/{GENERAL}/messages", json={"content": "a"}, headers=AUTH
    ) as r:
        assert r.status == 200
    async with http.post(
        f"{dc.api_base}/channels/{THREAD}/messages", json={"content": "a"}, headers=AUTH
    ) as r:
        assert (r.status, (await r.json())["code"]) == (403, 50013)


async def test_gateway_hello_identify_ready_guilds_and_heartbeats(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(dc.gateway_url + "?v=10&encoding=json") as ws:
        hello = await identify(ws)
        assert hello["op"] == 10
        assert hello["d"]["heartbeat_interval"] > 0
        ready = await recv(ws)
        assert (ready["t"], ready["s"]) == ("READY", 1)
        assert ready["d"]["resume_gateway_url"] == dc.gateway_url
        assert ready["d"]["guilds"] == [{"id": str(GUILD), "unavailable": True}]
        guild = await recv(ws)
        assert (guild["t"], guild["s"]) == ("GUILD_CREATE", 2)
        assert [c["id"] for c in guild["d"]["channels"]] == [str(GENERAL)]
        assert [(t["id"], t["parent_id"]) for t in guild["d"]["threads"]] == [(str(THREAD), str(GENERAL))]
        await ws.send_json({"op": 1, "d": 2})
        assert await recv(ws) == {"op": 11}
        dc.push_message(GENERAL, "hi <@22>", author_id=5, username="ann", guild_id=GUILD, mentions_bot=True)
        created = await recv(ws)
        assert (created["t"], created["s"]) == ("MESSAGE_CREATE", 3)
        assert created["d"]["content"] == "hi <@22>"
        assert [m["id"] for m in created["d"]["mentions"]] == ["22"]
    assert dc.identifies[0]["intents"] == 33281


async def test_identify_with_a_wrong_token_is_closed_4004(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(dc.gateway_url) as ws:
        await identify(ws, token="nope")
        msg = await ws.receive(timeout=5)
        assert msg.type is aiohttp.WSMsgType.CLOSE
        assert ws.close_code == 4004


async def test_resume_replays_missed_dispatches_with_their_sequence_numbers(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(dc.gateway_url) as ws:
        await identify(ws)
        session_id = (await recv(ws))["d"]["session_id"]
        await recv(ws)  # GUILD_CREATE, seq 2
        await dc.disconnect(code=4000)
        closing = await ws.receive(timeout=5)
        assert closing.type is aiohttp.WSMsgType.CLOSE
        assert ws.close_code == 4000
    first = dc.push_message(GENERAL, "one", author_id=5, username="ann", guild_id=GUILD)
    second = dc.push_message(GENERAL, "two", author_id=5, username="ann", guild_id=GUILD)
    async with http.ws_connect(dc.gateway_url) as ws:
        await recv(ws)  # HELLO
        await ws.send_json({"op": 6, "d": {"token": "tkn", "session_id": session_id, "seq": 2}})
        replayed = [await recv(ws) for _ in range(3)]
    assert [(f["t"], f["s"]) for f in replayed] == [
        ("MESSAGE_CREATE", 3),
        ("MESSAGE_CREATE", 4),
        ("RESUMED", 5),
    ]
    assert [f["d"]["id"] for f in replayed[:2]] == [str(first), str(second)]
    assert dc.replayed == [3, 4]


async def test_resume_of_an_unknown_session_is_invalidated(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(dc.gateway_url) as ws:
        await recv(ws)
        await ws.send_json({"op": 6, "d": {"token": "tkn", "session_id": "gone", "seq": 9}})
        assert await recv(ws) == {"op": 9, "d": False}


async def test_interaction_must_be_acknowledged_once_before_followups(
    dc: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(dc.gateway_url) as ws:
        await identify(ws)
        await recv(ws)
        await recv(ws)
        iid = dc.push_interaction("stats", "all", channel_id=GENERAL, guild_id=GUILD, user_id=5)
        event = await recv(ws)
    assert event["t"] == "INTERACTION_CREATE"
    data = event["d"]
    assert data["data"]["options"] == [{"name": "args", "type": 3, "value": "all"}]
    token = data["token"]
    followup = f"{dc.api_base}/webhooks/11/{token}?wait=true"
    callback = f"{dc.api_base}/interactions/{iid}/{token}/callback?with_response=1"
    async with http.post(followup, json={"content": "too early"}) as resp:
        assert (resp.status, (await resp.json())["code"]) == (404, 10015)
    async with http.post(callback, json={"type": 5, "data": {}}) as resp:
        assert resp.status == 200
        assert (await resp.json())["interaction"]["response_message_loading"] is True
    async with http.post(callback, json={"type": 5, "data": {}}) as resp:
        assert (resp.status, (await resp.json())["code"]) == (400, 40060)
    async with http.post(followup, json={"content": "the stats"}) as resp:
        assert resp.status == 200
    assert [(s.kind, s.content, s.interaction_id) for s in dc.sent] == [("followup", "the stats", iid)]
    assert [r["type"] for r in dc.interaction_responses] == [5]


async def test_unexpected_routes_are_recorded(dc: FakeDiscord, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{dc.api_base}/guilds/{GUILD}/members", headers=AUTH) as resp:
        assert resp.status == 404
    assert dc.unexpected == [f"GET /api/v10/guilds/{GUILD}/members"]
