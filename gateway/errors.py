"""The gateway's error hierarchy. Library exceptions are translated into these where they are caught.

GatewayError
├── StoreError                    the database refused or failed an operation
│   ├── DatabaseUnavailableError  connection lost / server down (messages go to the spool)
│   └── NothingToUndoError        `/compact undo` with no compaction to restore
├── SendError                     a platform could not deliver a reply
│   ├── SendRetryLater            flood control; carries retry_after seconds
│   ├── SendRejected              the platform rejected the content (e.g. bad markup)
│   └── SendGone                  the chat is closed to the bot (blocked by the user, chat deleted,
│                                 bot removed): retrying cannot help
├── PlatformStartError            an adapter could not connect at start-up
│   └── PlatformConfigError       the platform refused the token or a permission: fix the configuration
├── MediaFetchError               an attachment could not be downloaded (too big, gone, unreachable)
├── ChatLockTimeout               another turn holds the chat for too long
├── EmbeddingsError               the embeddings endpoint failed; carries status and retry_after
└── TranscriptionError            a voice note was not transcribed; carries `cause` (for counting) and
                                  `reason` (worded for the sender)
"""

from __future__ import annotations


class GatewayError(Exception):
    """Base of every error raised by the gateway package."""


class StoreError(GatewayError):
    pass


class DatabaseUnavailableError(StoreError):
    pass


class NothingToUndoError(StoreError):
    pass


class SendError(GatewayError):
    def __init__(self, message: str, *, chat_id: str | None = None) -> None:
        super().__init__(message)
        self.chat_id = chat_id


class SendRetryLater(SendError):
    def __init__(self, message: str, *, retry_after: float, chat_id: str | None = None) -> None:
        super().__init__(message, chat_id=chat_id)
        self.retry_after = retry_after


class SendRejected(SendError):
    pass


class SendGone(SendError):
    """The chat no longer accepts the bot's messages (blocked, deleted, bot removed)."""


class PlatformStartError(GatewayError):
    pass


class PlatformConfigError(PlatformStartError):
    """The platform refused our credentials or a permission; the message says what to change."""


class MediaFetchError(GatewayError):
    """The platform did not hand over an attachment; `reason` is worded for the sender."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ChatLockTimeout(GatewayError):
    pass


class EmbeddingsError(GatewayError):
    """The embeddings endpoint failed or answered something unusable (recall falls back to keywords)."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def permanent(self) -> bool:
        """The request itself was refused (4xx other than auth and rate limits): retrying cannot help."""
        status = self.status
        return status is not None and 400 <= status < 500 and status not in (401, 403, 408, 429)


class TranscriptionError(GatewayError):
    """A voice note could not be transcribed.

    `cause` is one short word for metrics and `/stats` (`unreachable`, `timeout`, `auth`, `too_long`,
    `too_large`, `rejected`, `failed`, `malformed`, `download`); `reason` is worded for the sender.
    """

    def __init__(self, reason: str, *, cause: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause
        self.status = status
