"""What the fake Discord records of the bot's side: messages it made visible and interactions it was sent."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tests.fakes.discord.payloads import Json


@dataclass
class SentMessage:
    """A message the bot made visible: a channel post, an interaction reply or a followup."""

    channel_id: int
    content: str
    allowed_mentions: Json | None
    message_reference: Json | None
    message_id: int
    interaction_id: int | None = None
    kind: str = "message"
    """"message", "interaction_reply" (callback type 4), "followup", "original_edit" or "edit"."""
    at: float = field(default_factory=time.monotonic)


@dataclass
class InteractionRecord:
    interaction_id: int
    token: str
    channel_id: int
    guild_id: int | None
    command: str
    responses: list[Json] = field(default_factory=list)
