"""Settings: defaults, nested keys from env and YAML, one-line errors, secrets kept out of reprs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.app.wiring import server_tools
from gateway.config import DEFAULT_DATABASE_URL, DEFAULT_MODEL, ConfigError, Settings, load_settings

KEYS = [
    "DATABASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "MODEL",
    "MODEL_CONTEXT_LENGTH",
    "TELEGRAM_BOT_TOKEN",
    "DISCORD_BOT_TOKEN",
    "TELEGRAM_ADMIN_IDS",
    "LOG_LEVEL",
    "COMPRESSION__THRESHOLD",
    "COMPRESSION__ENABLED",
    "PROMPT_CACHING__CACHE_TTL",
    "AUXILIARY__COMPRESSION__MODEL",
    "CONTEXT__ENGINE",
    "EMBEDDINGS__PROVIDER",
    "EMBEDDINGS__API_KEY",
    "EMBEDDINGS__BASE_URL",
    "EMBEDDINGS__MODEL",
    "AGENT__EFFORT",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Run every test in an empty directory (no .env, no config.yaml) with no gateway keys set."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults() -> None:
    settings = load_settings()
    assert settings.database_url == DEFAULT_DATABASE_URL
    assert settings.model == DEFAULT_MODEL
    assert settings.compression.threshold == 0.5
    assert settings.compression.target_ratio == 0.2
    assert settings.compression.protect_last_n == 20
    assert settings.prompt_caching.cache_ttl == "auto"
    assert settings.context.engine == "compressor"
    assert settings.agent.effort == "medium"  # chosen by `python -m bench.bench_effort`
    assert settings.platforms_configured() == []


@pytest.mark.parametrize(("value", "effort"), [("high", "high"), ("default", None), ("Default", None)])
def test_effort_can_be_any_level_or_the_models_own(
    monkeypatch: pytest.MonkeyPatch, value: str, effort: str | None
) -> None:
    monkeypatch.setenv("AGENT__EFFORT", value)
    assert load_settings().agent.effort == effort


def test_unknown_effort_names_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT__EFFORT", "extreme")
    with pytest.raises(ConfigError, match=r"agent\.effort \(AGENT__EFFORT\)"):
        load_settings()


def test_threshold_above_one_names_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPRESSION__THRESHOLD", "1.7")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    assert "compression.threshold" in message
    assert "COMPRESSION__THRESHOLD" in message
    assert "1.7" in message


def test_unknown_cache_ttl_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMPT_CACHING__CACHE_TTL", "10m")
    with pytest.raises(ConfigError, match=r"prompt_caching\.cache_ttl.*'5m'.*'1h'"):
        load_settings()


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("ANTHROPIC_BASE_URL", "not a url", "anthropic_base_url"),
        ("DATABASE_URL", "mysql://db/x", "database_url"),
    ],
)
def test_malformed_urls_are_rejected(
    monkeypatch: pytest.MonkeyPatch, key: str, value: str, named: str
) -> None:
    monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError, match=named):
        load_settings()


def test_plain_postgres_url_gets_the_async_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@db:5432/gw")
    settings = load_settings()
    assert settings.database_url == "postgresql+asyncpg://u:p@db:5432/gw"
    assert settings.is_postgres


def test_nested_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPRESSION__THRESHOLD", "0.4")
    monkeypatch.setenv("COMPRESSION__ENABLED", "false")
    monkeypatch.setenv("AUXILIARY__COMPRESSION__MODEL", "claude-haiku-4-5")
    monkeypatch.setenv("PROMPT_CACHING__CACHE_TTL", "1h")
    settings = load_settings()
    assert settings.compression.threshold == 0.4
    assert settings.compression.enabled is False
    assert settings.summary_model == "claude-haiku-4-5"
    assert settings.prompt_caching.cache_ttl == "1h"


def test_yaml_file_with_environment_taking_precedence(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    path = clean_env / "custom.yaml"
    path.write_text(
        "compression:\n  threshold: 0.3\n  protect_last_n: 8\n"
        "context:\n  engine: my_engine\nmodel: claude-opus-4-5\n"
    )
    settings = load_settings(yaml_path=path)
    assert settings.compression.threshold == 0.3
    assert settings.compression.protect_last_n == 8
    assert settings.context.engine == "my_engine"
    assert settings.model == "claude-opus-4-5"

    monkeypatch.setenv("COMPRESSION__THRESHOLD", "0.45")
    assert load_settings(yaml_path=path).compression.threshold == 0.45


def test_config_yaml_in_the_working_directory_is_read(clean_env: Path) -> None:
    (clean_env / "config.yaml").write_text("prompt_caching:\n  cache_ttl: 1h\n")
    assert load_settings().prompt_caching.cache_ttl == "1h"


def test_invalid_yaml_value_and_missing_file(clean_env: Path) -> None:
    path = clean_env / "bad.yaml"
    path.write_text("compression:\n  target_ratio: 5\n")
    with pytest.raises(ConfigError, match=r"compression\.target_ratio"):
        load_settings(yaml_path=path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(yaml_path=clean_env / "missing.yaml")


def test_dotenv_file_is_read(clean_env: Path) -> None:
    (clean_env / ".env").write_text("MODEL_CONTEXT_LENGTH=150000\nTELEGRAM_ADMIN_IDS=1, 2;3\n")
    settings = load_settings()
    assert settings.model_context_length == 150_000
    assert settings.telegram_admin_ids == frozenset({1, 2, 3})


def test_non_numeric_admin_id_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_ADMIN_IDS", "12,alice")
    with pytest.raises(ConfigError, match=r"telegram_admin_ids.*alice"):
        load_settings()


def test_secrets_never_appear_in_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-verysecret")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:telegramsecret")
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "discordsecret")
    settings = load_settings()
    for text in (repr(settings), str(settings), repr(settings.model_dump())):
        assert "verysecret" not in text
        assert "telegramsecret" not in text
        assert "discordsecret" not in text
    assert settings.anthropic_api_key is not None
    assert settings.anthropic_api_key.get_secret_value() == "sk-ant-verysecret"
    assert settings.platforms_configured() == ["telegram", "discord"]


def test_settings_are_immutable() -> None:
    settings = Settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.model = "other"  # type: ignore[misc]


def test_embeddings_are_off_by_default_and_checked_when_on(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().embeddings.provider == "off"
    monkeypatch.setenv("EMBEDDINGS__PROVIDER", "voyage")
    with pytest.raises(ConfigError, match=r"voyage needs embeddings\.api_key"):
        load_settings()
    monkeypatch.setenv("EMBEDDINGS__API_KEY", "pa-secret")
    voyage = load_settings().embeddings
    assert voyage.api_key is not None
    assert "pa-secret" not in repr(voyage)
    monkeypatch.setenv("EMBEDDINGS__PROVIDER", "openai")
    with pytest.raises(ConfigError, match=r"needs embeddings\.base_url and embeddings\.model"):
        load_settings()
    monkeypatch.setenv("EMBEDDINGS__BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("EMBEDDINGS__MODEL", "bge-m3")
    assert load_settings().embeddings.model == "bge-m3"
    monkeypatch.setenv("EMBEDDINGS__PROVIDER", "cohere")
    with pytest.raises(ConfigError, match=r"embeddings\.provider"):
        load_settings()


def test_env_example_copied_as_dot_env_changes_no_default() -> None:
    """The README says to copy `.env.example` to `.env`: its values are the defaults, so a copy changes
    nothing until the operator edits it (a stale prompt there once dropped the recall instruction)."""
    example = Path(__file__).resolve().parents[2] / ".env.example"
    assert Settings(_env_file=example).model_dump() == Settings(_env_file=None).model_dump()


def test_web_tools_on_by_default_both_domain_lists_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(anthropic_api_key="k")
    tools = server_tools(settings)
    assert tools.search is not None
    assert tools.fetch is not None
    monkeypatch.setenv("TOOLS__WEB_SEARCH__ENABLED", "false")
    monkeypatch.setenv("TOOLS__WEB_FETCH__ALLOWED_DOMAINS", '["a.example"]')
    monkeypatch.setenv("TOOLS__WEB_FETCH__BLOCKED_DOMAINS", '["b.example"]')
    with pytest.raises(ConfigError) as caught:
        load_settings(anthropic_api_key="k")
    message = str(caught.value)
    assert "\n" not in message
    assert "tools.web_fetch: set allowed_domains or blocked_domains, not both" in message
    monkeypatch.delenv("TOOLS__WEB_FETCH__BLOCKED_DOMAINS")
    tools = server_tools(load_settings(anthropic_api_key="k"))
    assert tools.search is None
    assert tools.fetch is not None
    assert tools.fetch.allowed_domains == ("a.example",)
