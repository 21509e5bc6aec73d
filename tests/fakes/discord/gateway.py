"""The websocket half of the fake Discord: HELLO, IDENTIFY -> READY + GUILD_CREATE, heartbeats, RESUME.

Shards as Discord has them: an IDENTIFY with `shard: [id, count]` opens a session of that shard, which
receives only the events of guilds with `(guild_id >> 22) % count == id` (DMs on shard 0); a session
without `shard` receives everything. Each session resumes on its own.

Every session keeps a log of its dispatches with their sequence numbers, so a client that RESUMEs
after a forced disconnect receives what it missed (and, on request, some of what it already had).
Frames are uncompressed JSON text, which discord.py accepts although it asks for zlib.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

Json = dict[str, Any]

logger = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_MS = 41_250
AUTHENTICATION_FAILED = 4004
DISALLOWED_INTENTS = 4014
"""Discord closes with this when IDENTIFY asks for a privileged intent the application may not use."""


@dataclass
class _Session:
    id: str
    seq: int = 0
    log: list[Json] = field(default_factory=list)
    conn: _Conn | None = None
    replay_extra: int = 0
    shard: tuple[int, int] | None = None

    def receives(self, guild_id: int | None) -> bool:
        """Whether this session's shard carries events of `guild_id` (None: a DM)."""
        if self.shard is None:
            return True
        shard_id, count = self.shard
        return shard_of(guild_id, count) == shard_id

    def frame(self, event: str, data: Json) -> Json:
        """Number and log a dispatch; it is sent only if a connection is attached."""
        self.seq += 1
        frame = {"op": 0, "t": event, "s": self.seq, "d": data}
        self.log.append(frame)
        if self.conn is not None:
            self.conn.queue.put_nowait(frame)
        return frame


def shard_of(guild_id: int | None, count: int) -> int:
    """Discord's rule: `(guild_id >> 22) % shard_count`; DMs arrive on shard 0."""
    return 0 if guild_id is None else (guild_id >> 22) % count


def _guild_of(event: str, data: Json) -> int | None:
    raw = data.get("id") if event == "GUILD_CREATE" else data.get("guild_id")
    return int(raw) if raw is not None else None


@dataclass(eq=False)
class _Conn:
    ws: web.WebSocketResponse
    queue: asyncio.Queue[Json] = field(default_factory=asyncio.Queue)
    session: _Session | None = None


class FakeGateway:
    """Serves /gateway. `ready` builds READY's payload for a session id; `guilds` the GUILD_CREATEs."""

    def __init__(
        self,
        *,
        token: str,
        ready: Callable[[str, tuple[int, int] | None], Json],
        guilds: Callable[[tuple[int, int] | None], list[Json]],
    ) -> None:
        self._token = token
        self._ready = ready
        self._guilds = guilds
        self.identifies: list[Json] = []
        self.resumes: list[Json] = []
        self.replayed: list[int] = []
        """Sequence numbers sent again after a RESUME."""
        self._sessions: dict[str, _Session] = {}
        self._conns: set[_Conn] = set()
        self._closing: set[asyncio.Task[bool]] = set()
        self.close_on_identify: int | None = None
        """Close the socket with this code instead of answering IDENTIFY (e.g. `DISALLOWED_INTENTS`)."""
        self.withhold_ready = False
        """Accept IDENTIFY but never send READY (a gateway that hangs during start-up)."""

    @property
    def has_sessions(self) -> bool:
        return bool(self._sessions)

    def connected_shards(self) -> list[int | None]:
        """The shard of every session with a live connection (None: an unsharded session)."""
        return sorted(
            (c.session.shard[0] if c.session.shard else None for c in self._conns if c.session is not None),
            key=lambda s: -1 if s is None else s,
        )

    def dispatch(self, event: str, data: Json) -> None:
        """Send an event to the sessions of its shard; detached sessions keep it for their RESUME."""
        guild_id = _guild_of(event, data)
        for session in self._sessions.values():
            if session.receives(guild_id):
                session.frame(event, data)

    def disconnect(self, code: int, *, replay_last: int = 0) -> None:
        for conn in list(self._conns):
            if conn.session is not None:
                conn.session.replay_extra = replay_last
                conn.session.conn = None
                conn.session = None
            task = asyncio.ensure_future(conn.ws.close(code=code))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        for conn in list(self._conns):
            await conn.ws.close(code=1001)
        await asyncio.gather(*self._closing, return_exceptions=True)

    async def handler(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        conn = _Conn(ws)
        self._conns.add(conn)
        writer = asyncio.ensure_future(self._writer(conn))
        conn.queue.put_nowait({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}})
        try:
            async for msg in ws:
                if msg.type is WSMsgType.TEXT:
                    await self._on_frame(conn, json.loads(msg.data))
        finally:
            self._conns.discard(conn)
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            session = conn.session
            if session is not None:
                session.conn = None
                if ws.close_code in (1000, 1001):
                    # A client that closes normally ends its session (it cannot be resumed).
                    self._sessions.pop(session.id, None)
        return ws

    async def _writer(self, conn: _Conn) -> None:
        while True:
            frame = await conn.queue.get()
            if conn.ws.closed:
                return
            await conn.ws.send_str(json.dumps(frame))

    async def _on_frame(self, conn: _Conn, frame: Json) -> None:
        op = frame.get("op")
        data = frame.get("d")
        if op == 1:
            conn.queue.put_nowait({"op": 11})
        elif op == 2 and isinstance(data, dict):
            await self._identify(conn, data)
        elif op == 6 and isinstance(data, dict):
            self._resume(conn, data)
        else:
            logger.info("fake discord: ignoring gateway op %s", op)

    async def _identify(self, conn: _Conn, data: Json) -> None:
        self.identifies.append(data)
        if data.get("token") != self._token:
            await conn.ws.close(code=AUTHENTICATION_FAILED, message=b"Authentication failed.")
            return
        if self.close_on_identify is not None:
            await conn.ws.close(code=self.close_on_identify, message=b"Disallowed intent(s).")
            return
        if self.withhold_ready:
            return
        shard = data.get("shard")
        session = _Session(
            id=secrets.token_hex(16),
            conn=conn,
            shard=(int(shard[0]), int(shard[1])) if isinstance(shard, list) and len(shard) == 2 else None,
        )
        conn.session = session
        self._sessions[session.id] = session
        session.frame("READY", self._ready(session.id, session.shard))
        for guild in self._guilds(session.shard):
            session.frame("GUILD_CREATE", guild)

    def _resume(self, conn: _Conn, data: Json) -> None:
        self.resumes.append(data)
        session = self._sessions.get(str(data.get("session_id")))
        if session is None or data.get("token") != self._token:
            conn.queue.put_nowait({"op": 9, "d": False})
            return
        seq = int(data.get("seq") or 0)
        delivered = [f for f in session.log if f["s"] <= seq and f["t"] not in ("READY", "RESUMED")]
        again = delivered[len(delivered) - session.replay_extra :] if session.replay_extra else []
        session.replay_extra = 0
        for frame in [*again, *(f for f in session.log if f["s"] > seq)]:
            self.replayed.append(frame["s"])
            conn.queue.put_nowait(frame)
        session.conn = conn
        conn.session = session
        session.frame("RESUMED", {})
