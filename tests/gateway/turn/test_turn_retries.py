"""A turn that fails on storage is retried; after the retries the chat is told, messages stay pending."""

from __future__ import annotations

import pytest

from gateway.errors import ChatLockTimeout, StoreError
from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.reply.wording import TURN_FAILED_REPLY
from gateway.turn import tasks as tasks_module
from gateway.turn.tasks import ChatTasks
from tests.support.memory_adapter import MemoryAdapter

CHAT = ChatRef("telegram", "1", kind=ChatKind.PRIVATE)


class FlakyTurns:
    """A second implementation of the TurnRunner seam that fails a set number of times."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.calls = 0

    async def answer_pending(self, chat: ChatRef, chat_pk: int) -> int:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return 1


def make_tasks(turns: FlakyTurns, sent: list[OutgoingMessage]) -> ChatTasks:
    platforms = Platforms([MemoryAdapter(name=CHAT.platform, sent=sent)])
    return ChatTasks(turns=turns, platforms=platforms)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks_module, "TURN_RETRY_DELAYS_S", (0.01, 0.01, 0.01))


async def test_a_transient_storage_failure_is_retried_until_the_turn_runs() -> None:
    turns, sent = FlakyTurns([StoreError("deadlock"), ChatLockTimeout("busy")]), []
    p = make_tasks(turns, sent)
    p.schedule(CHAT, 1)
    await p.drain(wait_s=5)
    assert turns.calls == 3
    assert sent == []


async def test_persistent_failure_tells_the_chat_once_and_stops() -> None:
    turns, sent = FlakyTurns([StoreError("broken")] * 4), []
    p = make_tasks(turns, sent)
    p.schedule(CHAT, 1)
    await p.drain(wait_s=5)
    assert turns.calls == 4
    assert [m.text for m in sent] == [TURN_FAILED_REPLY]
