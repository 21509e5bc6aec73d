"""One task per chat that answers its pending messages, and what happens when a turn fails.

Turns run in one task per chat in this process (and under a database lock across processes), so a
chat never has two turns at once and nothing is answered twice. A turn that fails on storage or the
chat lock is retried after `TURN_RETRY_DELAYS_S`, then the chat is told once; during a database
outage it waits for the database. The messages stay pending either way.
"""

from __future__ import annotations

import asyncio
import logging
import time

from gateway.errors import ChatLockTimeout, DatabaseUnavailableError, SendError, StoreError
from gateway.platforms.base import ChatRef, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.reply.wording import TURN_FAILED_REPLY
from gateway.turn.runner import TurnRunner

logger = logging.getLogger(__name__)

TURN_RETRY_DELAYS_S = (2.0, 8.0, 30.0)


class ChatTasks:
    """Schedules each chat's turns; at shutdown stops new ones, waits for and cancels the rest."""

    def __init__(
        self,
        *,
        turns: TurnRunner,
        platforms: Platforms,
        db_retry_s: float = 1.0,
    ) -> None:
        self.turns = turns
        self.platforms = platforms
        self.db_retry_s = db_retry_s
        self._tasks: dict[tuple[str, str, str], asyncio.Task[None]] = {}
        self._dirty: set[tuple[str, str, str]] = set()
        self._stopping = False

    def schedule(self, chat: ChatRef, chat_pk: int) -> None:
        """Make sure a turn task runs for the chat; a running one picks the new message up."""
        key = chat.key
        self._dirty.add(key)
        if self._stopping:
            return  # shutting down: the message is stored and is answered after the restart
        task = self._tasks.get(key)
        if task is None or task.done():
            self._tasks[key] = asyncio.create_task(self._chat_loop(chat, chat_pk), name=f"turns:{key}")

    async def _chat_loop(self, chat: ChatRef, chat_pk: int) -> None:
        key = chat.key
        failures = 0
        try:
            while key in self._dirty and not self._stopping:
                self._dirty.discard(key)
                try:
                    await self.turns.answer_pending(chat, chat_pk)
                    failures = 0
                except DatabaseUnavailableError:
                    # The messages are stored and still unanswered: try again once the database is back.
                    logger.warning(
                        "turn in chat %s:%s waits for the database; retrying in %.0fs",
                        chat.platform,
                        chat.chat_id,
                        self.db_retry_s,
                    )
                    self._dirty.add(key)
                    await asyncio.sleep(self.db_retry_s)
                except (ChatLockTimeout, StoreError) as exc:
                    # The messages are stored and still unanswered: retry a few times, then tell the
                    # chat; they stay pending and are answered with the next message or after a restart.
                    failures += 1
                    if failures > len(TURN_RETRY_DELAYS_S):
                        logger.error(
                            "giving up on chat %s:%s after %d failed turns: %s",
                            chat.platform,
                            chat.chat_id,
                            failures,
                            exc,
                        )
                        await self._notify(chat, TURN_FAILED_REPLY)
                        continue
                    delay = TURN_RETRY_DELAYS_S[failures - 1]
                    logger.warning(
                        "turn failed in chat %s:%s (%s: %s); retrying in %.0fs",
                        chat.platform,
                        chat.chat_id,
                        type(exc).__name__,
                        exc,
                        delay,
                    )
                    self._dirty.add(key)
                    await asyncio.sleep(delay)
        except Exception:
            logger.exception("turn failed in chat %s:%s", chat.platform, chat.chat_id)
        finally:
            if self._tasks.get(key) is asyncio.current_task():
                del self._tasks[key]

    async def _notify(self, chat: ChatRef, text: str) -> None:
        try:
            await self.platforms.send(OutgoingMessage(chat=chat, text=text))
        except SendError as exc:
            logger.error("could not notify %s:%s: %s", chat.platform, chat.chat_id, exc)

    def stop_new_turns(self) -> None:
        """At shutdown: running turns may finish; messages stored from now on wait for the restart."""
        self._stopping = True

    async def cancel_turns(self) -> int:
        """Cancel the turns still running (their messages stay unanswered, for the restart)."""
        tasks = [t for t in self._tasks.values() if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return len(tasks)

    async def drain(self, wait_s: float | None = None) -> None:
        """Wait for running turns (used at shutdown and in tests)."""
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while self._tasks:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if remaining == 0.0:
                return
            await asyncio.wait(list(self._tasks.values()), timeout=remaining)
