"""The agent's error hierarchy. Library exceptions (anthropic.*) are translated into these in `llm.py`.

AgentError
├── LLMError                      a call to the model failed
│   ├── LLMAuthError              bad or missing API key / permission (not retryable)
│   ├── LLMBadRequestError        the request was rejected as invalid (not retryable)
│   │   ├── ContextOverflowError  the prompt does not fit the model's window
│   │   ├── ThinkingBindingError  a thinking block sent back is bound to a different prefix
│   │   └── LLMNotFoundError      404: the API does not know what the request names (the model)
│   ├── LLMRateLimitError         429 after the SDK's retries (carries retry_after)
│   ├── LLMOverloadedError        529 after retries
│   ├── LLMServerError            5xx after retries
│   ├── LLMUnavailableError       timeout or connection failure after retries
│   │   └── LLMStreamCutError     the connection dropped while the answer was streaming
│   └── BudgetExceededError       not sent: the call's worst case does not fit a spending cap
├── SummarizerError               the summary call failed or returned nothing usable
└── ToolError                     a tool raised; reported to the model as an error result
"""

from __future__ import annotations

from datetime import datetime


class AgentError(Exception):
    """Base of every error raised by the agent package."""


class LLMError(AgentError):
    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class LLMAuthError(LLMError):
    pass


class LLMBadRequestError(LLMError):
    pass


class ContextOverflowError(LLMBadRequestError):
    pass


class ThinkingBindingError(LLMBadRequestError):
    """The prefix check refused a thinking block (its prefix changed since it was produced)."""


class LLMNotFoundError(LLMBadRequestError):
    """404 `not_found_error`: the API does not know what the request names (on a Messages call, the
    model); retrying cannot help until the configuration changes."""


class LLMRateLimitError(LLMError):
    def __init__(
        self, message: str, *, status_code: int | None = 429, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.retry_after = retry_after


class LLMOverloadedError(LLMError):
    pass


class LLMServerError(LLMError):
    pass


class BudgetExceededError(LLMError):
    """The call was not sent: its worst case would take `budget` past its cap of `cap_usd` (spent plus
    held by calls in flight: `used_usd`) before `resets_at`."""

    def __init__(self, budget: str, *, cap_usd: float, used_usd: float, resets_at: datetime) -> None:
        super().__init__(f"{budget} (${cap_usd:.2f}) is spent (${used_usd:.2f} used)")
        self.budget = budget
        self.cap_usd = cap_usd
        self.used_usd = used_usd
        self.resets_at = resets_at


class LLMUnavailableError(LLMError):
    pass


class LLMStreamCutError(LLMUnavailableError):
    """The answer stopped mid-stream (the connection dropped): what had arrived is incomplete. The SDK
    retries a request that fails before its answer starts, never one whose answer it is reading."""


class SummarizerError(AgentError):
    """The summarizer failed; `abort` is True for auth/quota/network faults, where compaction must not run."""

    def __init__(self, message: str, *, abort: bool = False, too_small: bool = False) -> None:
        super().__init__(message)
        self.abort = abort
        self.too_small = too_small


class ToolError(AgentError):
    pass
