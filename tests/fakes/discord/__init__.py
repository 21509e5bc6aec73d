"""A protocol-level fake of Discord (``server``) that discord.py talks to: the REST API (``rest``,
``http``), the gateway websocket (``gateway``), wire payloads (``payloads``) and what the bot sent
(``records``)."""

from tests.fakes.discord.records import SentMessage
from tests.fakes.discord.server import FakeDiscord

__all__ = ["FakeDiscord", "SentMessage"]
