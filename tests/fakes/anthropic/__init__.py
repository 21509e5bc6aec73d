"""A protocol-level fake of the Anthropic Messages API (``server``) and the models behind it: requests
checked as the real API checks them (``validation``, ``media``, ``thinking_rules``), tokens and the prefix
cache (``tokens``, ``cache``, ``diagnostics``), replies (``replies``, ``thinking_reply``, ``effort``,
``binding``, ``compaction``), the wire (``wire``), control endpoints (``control_api``) and the separate
process (``process``; ``python -m tests.fakes.anthropic --port 0``)."""

from tests.fakes.anthropic.effort import ThinkingVolume
from tests.fakes.anthropic.server import FakeAnthropic, RecordedRequest
from tests.fakes.anthropic.wire import Pacing

__all__ = ["FakeAnthropic", "Pacing", "RecordedRequest", "ThinkingVolume"]
