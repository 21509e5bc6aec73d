"""The one `Settings` object, built at start-up from the environment, `.env` and an optional `config.yaml`.

Precedence (highest first): explicit keyword arguments, environment variables, `.env`, `config.yaml`,
defaults. Nested keys use `__` in the environment (`COMPRESSION__THRESHOLD=0.4`) and nesting in YAML
(`compression: {threshold: 0.4}`). Nothing else in the project reads the environment.

Names follow one rule: a setting's environment name is its path in capitals, sections joined to their
keys by `__` (`DATABASE_URL`, `TELEGRAM_BOT_TOKEN` at the top; `COMPRESSION__THRESHOLD`,
`DISCORD__SHARD_COUNT` in a section). Older names are still accepted and named in `Settings.renamed`
(`OLDER_NAMES`, and a section key written with one `_`, such as `DISCORD_SHARD_COUNT`), so the start-up
can say once which name to use instead.

Invalid values raise `ConfigError` with one line naming the key and what is allowed.
"""

from gateway.config.dashboard import DashboardSettings
from gateway.config.defaults import (
    DEFAULT_DATABASE_URL,
    DEFAULT_EFFORT,
    DEFAULT_MODEL,
    DEFAULT_PLANNED_WINDOW,
    DEFAULT_SUMMARY_MODEL,
    OLDER_NAMES,
)
from gateway.config.embeddings import EmbeddingsSettings
from gateway.config.loading import ConfigError, load_settings, older_names
from gateway.config.reminders import RemindersSettings
from gateway.config.sections import (
    AgentSettings,
    AuxiliaryModelSettings,
    AuxiliarySettings,
    CompressionSettings,
    ConsoleSettings,
    ContextSettings,
    DiscordSettings,
    FleetSettings,
    LimitsSettings,
    MediaSettings,
    ObservabilitySettings,
    PinsSettings,
    PromptCachingSettings,
    ReplySettings,
    SchedulerSettings,
    StreamingSettings,
    TranscriptionSettings,
)
from gateway.config.settings import Settings
from gateway.config.tools import ToolsSettings, UserLocation, WebFetchSettings, WebSearchSettings

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DEFAULT_EFFORT",
    "DEFAULT_MODEL",
    "DEFAULT_PLANNED_WINDOW",
    "DEFAULT_SUMMARY_MODEL",
    "OLDER_NAMES",
    "AgentSettings",
    "AuxiliaryModelSettings",
    "AuxiliarySettings",
    "CompressionSettings",
    "ConfigError",
    "ConsoleSettings",
    "ContextSettings",
    "DashboardSettings",
    "DiscordSettings",
    "EmbeddingsSettings",
    "FleetSettings",
    "LimitsSettings",
    "MediaSettings",
    "ObservabilitySettings",
    "PinsSettings",
    "PromptCachingSettings",
    "RemindersSettings",
    "ReplySettings",
    "SchedulerSettings",
    "Settings",
    "StreamingSettings",
    "ToolsSettings",
    "TranscriptionSettings",
    "UserLocation",
    "WebFetchSettings",
    "WebSearchSettings",
    "load_settings",
    "older_names",
]
