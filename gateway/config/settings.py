"""`Settings`: everything configurable, validated once at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AnyHttpUrl,
    AnyUrl,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from gateway.config.dashboard import DashboardSettings
from gateway.config.defaults import DEFAULT_DATABASE_URL, DEFAULT_MODEL, DEFAULT_SUMMARY_MODEL
from gateway.config.embeddings import EmbeddingsSettings
from gateway.config.reminders import RemindersSettings
from gateway.config.sections import (
    AgentSettings,
    AuxiliarySettings,
    CompressionSettings,
    ConsoleSettings,
    ContextSettings,
    DiscordSettings,
    FleetSettings,
    IdSet,
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
from gateway.config.tools import ToolsSettings


class Settings(BaseSettings):
    """Everything configurable, validated once at start-up."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        env_nested_delimiter="__",
        env_ignore_empty=True,
        case_sensitive=False,
        extra="ignore",
        yaml_file="config.yaml",
        frozen=True,
    )
    _renamed: tuple[tuple[str, str], ...] = PrivateAttr(default=())

    database_url: str = DEFAULT_DATABASE_URL
    database_pool_size: int = Field(10, ge=1, description="Postgres connections kept open per process")
    database_max_overflow: int = Field(20, ge=0, description="extra Postgres connections under a burst")
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: AnyHttpUrl | None = None
    model: str = Field(DEFAULT_MODEL, min_length=1)
    model_context_length: int | None = Field(
        None, ge=1024, description="older name of context.planned_window (one of them, or both equal)"
    )

    telegram_bot_token: SecretStr | None = None
    telegram_base_url: AnyHttpUrl = AnyHttpUrl("https://api.telegram.org/bot")
    telegram_base_file_url: AnyHttpUrl | None = None
    """File downloads; default: next to `telegram_base_url` (".../bot" -> ".../file/bot")."""
    telegram_webhook_url: AnyHttpUrl | None = None
    telegram_webhook_listen: str = "0.0.0.0"  # noqa: S104 - a webhook must be reachable from outside
    telegram_webhook_port: int = Field(8443, ge=1, le=65535)
    telegram_webhook_secret: SecretStr | None = Field(None, validate_default=True)
    telegram_webhook_max_connections: int = Field(40, ge=1, le=100)
    """Telegram's simultaneous webhook connections to this deployment (its default is 40)."""

    discord_bot_token: SecretStr | None = None
    discord_api_base_url: AnyHttpUrl = AnyHttpUrl("https://discord.com/api/v10")
    discord_gateway_url: AnyUrl | None = None

    telegram_admin_ids: IdSet = frozenset()
    discord_admin_ids: IdSet = frozenset()
    telegram_allowed_users: IdSet = frozenset()
    discord_allowed_users: IdSet = frozenset()
    gateway_allow_all_users: bool = False

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    spool_dir: Path = Path("./spool")
    shutdown_timeout_s: float = Field(
        8.0,
        ge=2.0,
        le=600.0,
        description="SIGTERM/SIGINT to exit; keep it below the supervisor's kill timeout",
    )

    compression: CompressionSettings = CompressionSettings()
    auxiliary: AuxiliarySettings = AuxiliarySettings()
    prompt_caching: PromptCachingSettings = PromptCachingSettings()
    context: ContextSettings = ContextSettings()
    pins: PinsSettings = PinsSettings()
    agent: AgentSettings = AgentSettings()
    limits: LimitsSettings = LimitsSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    media: MediaSettings = MediaSettings()
    streaming: StreamingSettings = StreamingSettings()
    observability: ObservabilitySettings = ObservabilitySettings()
    reply: ReplySettings = ReplySettings()
    console: ConsoleSettings = ConsoleSettings()
    embeddings: EmbeddingsSettings = EmbeddingsSettings()
    transcription: TranscriptionSettings = TranscriptionSettings()
    fleet: FleetSettings = FleetSettings()
    discord: DiscordSettings = DiscordSettings()
    tools: ToolsSettings = ToolsSettings()
    dashboard: DashboardSettings = DashboardSettings()
    reminders: RemindersSettings = RemindersSettings()

    @field_validator("telegram_webhook_secret")
    @classmethod
    def _webhook_needs_secret(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        # Without it anyone who finds the URL can post updates as any user.
        if info.data.get("telegram_webhook_url") is not None and (
            value is None or not value.get_secret_value().strip()
        ):
            raise ValueError("must be set when TELEGRAM_WEBHOOK_URL is set (any 1-256 of A-Z a-z 0-9 _ -)")
        return value

    @field_validator(
        "telegram_admin_ids",
        "discord_admin_ids",
        "telegram_allowed_users",
        "discord_allowed_users",
        mode="before",
    )
    @classmethod
    def _id_list(cls, value: Any) -> Any:
        if isinstance(value, int):
            return frozenset({value})
        if isinstance(value, str):
            parts = [p.strip() for p in value.replace(";", ",").split(",") if p.strip()]
            bad = [p for p in parts if not p.lstrip("-").isdigit()]
            if bad:
                raise ValueError(f"expected comma-separated numeric user ids, got {bad[0]!r}")
            return frozenset(int(p) for p in parts)
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        allowed = ("sqlite+aiosqlite://", "postgresql+asyncpg://", "postgresql://", "postgres://")
        if not value.startswith(allowed):
            raise ValueError("must start with sqlite+aiosqlite:// or postgresql+asyncpg://")
        if value.startswith(("postgresql://", "postgres://")):
            value = "postgresql+asyncpg://" + value.split("://", 1)[1]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            YamlConfigSettingsSource(settings_cls),
            file_secret_settings,
        )

    # Derived values -------------------------------------------------------------------------------

    @property
    def renamed(self) -> tuple[tuple[str, str], ...]:
        """(older name, name to use) for each older environment name this configuration was read with."""
        return self._renamed

    @property
    def planned_window(self) -> int | None:
        """The operator's planned window (`context.planned_window`, or its older name
        `MODEL_CONTEXT_LENGTH`); None: the default for the model. `gateway.app.wiring.main_model` owns
        the decision (and refuses the two names disagreeing)."""
        return self.context.planned_window or self.model_context_length

    @property
    def summary_model(self) -> str:
        return self.auxiliary.compression.model or DEFAULT_SUMMARY_MODEL

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith("postgresql")

    def platforms_configured(self) -> list[str]:
        names = []
        if self.telegram_bot_token is not None:
            names.append("telegram")
        if self.discord_bot_token is not None:
            names.append("discord")
        return names
