"""What an adapter needs from the fleet: named leases shared by every worker on one database.

The store implements it (`gateway.store.locks.leases`: advisory locks on Postgres, this process alone on
SQLite); the app hands it to the adapters, which use it for what only one worker may do at a time:
changing the Telegram webhook, polling Telegram, connecting a Discord shard. `FleetTimings` are how
often a holder checks its leases and a standby or a shard keeper looks for free ones.

`Registrations` is the fleet's memory of what it registered with a platform (the Telegram webhook: the
platform never reports the secret), kept by the store (`gateway.store.webhooks`); `RegisteredHere` is
the memory of one process, for an adapter built without a database.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol


class Fleet(Protocol):
    """Named leases; a worker that dies loses its leases at once (see `gateway.store.locks.leases`)."""

    worker: str

    @property
    def held(self) -> frozenset[str]: ...

    async def try_take(self, name: str) -> bool:
        """True when this worker holds `name` now (taken, or already held)."""
        ...

    async def release(self, name: str) -> None: ...

    async def check(self) -> set[str]:
        """Heartbeat: the held leases another worker took meanwhile (raises `StoreError` while the
        database cannot be reached)."""
        ...

    async def holders(self, names: list[str]) -> dict[str, str]:
        """The worker holding each of `names`, where one does."""
        ...

    async def live_workers(self) -> int: ...

    def exclusive(self, name: str) -> AbstractAsyncContextManager[None]:
        """Hold `name` for a block, waiting while another worker holds it."""
        ...


@dataclass(frozen=True, slots=True)
class FleetTimings:
    check_s: float = 5.0
    """How often a lease holder checks its lease connection (the heartbeat)."""
    standby_s: float = 5.0
    """How often a standby tries to take a lease nobody holds (Telegram polling)."""
    rebalance_s: float = 10.0
    """How often the Discord shard keeper looks for free shards and its fair share."""


class SoleWorker:
    """The fleet of one (SQLite: one worker per database file): every lease is granted at once."""

    def __init__(self, *, worker: str | None = None) -> None:
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}"
        self._held: set[str] = set()

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    async def try_take(self, name: str) -> bool:
        self._held.add(name)
        return True

    async def release(self, name: str) -> None:
        self._held.discard(name)

    async def check(self) -> set[str]:
        return set()

    async def holders(self, names: list[str]) -> dict[str, str]:
        return {n: self.worker for n in names if n in self._held}

    async def live_workers(self) -> int:
        return 1

    @asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        yield


class Registered(Protocol):
    """A webhook as the fleet last registered it."""

    @property
    def url(self) -> str: ...

    @property
    def secret_hash(self) -> str: ...

    @property
    def allowed_updates(self) -> tuple[str, ...]: ...

    @property
    def max_connections(self) -> int: ...


class Registrations(Protocol):
    """What the fleet registered with a platform, per bot; raises `StoreError` when unreadable."""

    async def registered(self, platform: str, bot_id: str) -> Registered | None: ...

    async def record(
        self,
        platform: str,
        bot_id: str,
        *,
        url: str,
        secret_hash: str,
        allowed_updates: Sequence[str],
        max_connections: int,
        worker: str,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class _Kept:
    url: str
    secret_hash: str
    allowed_updates: tuple[str, ...]
    max_connections: int


class RegisteredHere:
    """`Registrations` kept in this process only (an adapter built without a database)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], _Kept] = {}

    async def registered(self, platform: str, bot_id: str) -> Registered | None:
        return self._kept.get((platform, bot_id))

    async def record(
        self,
        platform: str,
        bot_id: str,
        *,
        url: str,
        secret_hash: str,
        allowed_updates: Sequence[str],
        max_connections: int,
        worker: str,
    ) -> None:
        self._kept[(platform, bot_id)] = _Kept(url, secret_hash, tuple(allowed_updates), max_connections)
