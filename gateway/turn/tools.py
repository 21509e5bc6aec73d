"""The tools the gateway gives the agent in one chat: `recall` over the chat's own history, the current
time (the turn's clock), `view_media` where the chat has media to look at again, and `schedule_message`
where reminders are on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from agent.tools.current_time import current_time_tool
from agent.tools.recall import recall_tool
from agent.tools.registry import ToolRegistry
from agent.tools.view_media import view_media_tool
from gateway.media.lookup import ChatMediaLookup
from gateway.media.presence import MediaPresence
from gateway.store import Store
from gateway.store.messages.media import MediaStore
from gateway.turn.recall_history import ChatHistorySearch, SemanticRank
from gateway.turn.reminder_tool import ReminderDesk


class ChatTools:
    """chat_pk -> the chat's tools (recall and view_media are bound to that one chat)."""

    def __init__(
        self,
        *,
        store: Store,
        media_store: MediaStore,
        presence: MediaPresence,
        semantic: SemanticRank | None,
        shown_whole_below: int,
        clock: Callable[[], datetime],
        reminders: ReminderDesk | None = None,
    ) -> None:
        self.store = store
        self.media_store = media_store
        self.presence = presence
        self.semantic = semantic
        self.shown_whole_below = shown_whole_below
        """Recall shows shorter messages whole (longer ones may be cut to head and tail)."""
        self.clock = clock
        self.reminders = reminders

    def __call__(self, chat_pk: int) -> ToolRegistry:
        history = ChatHistorySearch(
            self.store, chat_pk, semantic=self.semantic, shown_whole_below=self.shown_whole_below
        )
        tools = [recall_tool(history), current_time_tool(self.clock)]
        if self.reminders is not None:
            tools.append(self.reminders.tool(chat_pk))
        if chat_pk in self.presence:  # only where there is something to look at again
            tools.append(view_media_tool(ChatMediaLookup(self.media_store, chat_pk)))
        return ToolRegistry(tools)
