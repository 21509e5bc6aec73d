"""Reading `Settings` from the environment, `.env` and YAML; one line per invalid value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from dotenv import dotenv_values
from pydantic import ValidationError
from pydantic_settings import SettingsConfigDict

from gateway.config.defaults import OLDER_NAMES
from gateway.config.sections import Section
from gateway.config.settings import Settings


class ConfigError(Exception):
    """A configuration value is invalid; the message is one line naming the key."""


def _describe(error: Any) -> str:
    loc = ".".join(str(p) for p in error.get("loc", ()) if not isinstance(p, int))
    key = loc or "configuration"
    env_key = key.upper().replace(".", "__")
    value = error.get("input")
    secret = any(w in key for w in ("token", "key", "secret", "password"))
    shown = "<secret>" if secret and value is not None else repr(value)
    msg = error.get("msg", "invalid value")
    if isinstance(shown, str) and len(shown) > 80:
        shown = shown[:77] + "..."
    return f"invalid configuration: {key} ({env_key}) = {shown}: {msg}"


def _section_keys() -> dict[str, tuple[str, str]]:
    """`SECTION_KEY` (one underscore) -> (section, key) for every key of a section, where that spelling
    names no top-level setting."""
    found: dict[str, tuple[str, str]] = {}
    for section, field in Settings.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, Section):
            for key in kind.model_fields:
                if f"{section}_{key}" not in Settings.model_fields:
                    found[f"{section}_{key}".upper()] = (section, key)
    return found


def older_names(names: Mapping[str, str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """From environment `names` (name -> value): the section values set under a one-underscore name
    (as nested overrides; a value under the `SECTION__KEY` name wins), and each (older, newer) name."""
    given = {name.upper(): value for name, value in names.items()}
    keys = _section_keys()
    values: dict[str, Any] = {}
    renamed = [(name, OLDER_NAMES[name]) for name in sorted(given) if name in OLDER_NAMES]
    for name in sorted(given):
        if name not in keys:
            continue
        section, key = keys[name]
        newer = f"{section}__{key}".upper()
        renamed.append((name, newer))
        if newer not in given:
            values.setdefault(section, {})[key] = given[name]
    return values, renamed


def _environment_names(env_file: Path) -> dict[str, str]:
    """The process environment over `.env`: what the settings are read from."""
    found = {k: v for k, v in dotenv_values(env_file).items() if v} if env_file.is_file() else {}
    found.update({k: v for k, v in os.environ.items() if v})  # noqa: TID251 - the one reader of settings
    return found


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)  # an explicit override wins over an older name
        elif key not in merged:
            merged[key] = value
    return merged


def load_settings(*, yaml_path: Path | None = None, **overrides: Any) -> Settings:
    """Build and validate settings; raise `ConfigError` with one clear line on the first invalid key."""
    try:
        older, renamed = older_names(_environment_names(Path(".env")))
        overrides = _merged(overrides, older)
        if yaml_path is not None:
            if not yaml_path.is_file():
                raise ConfigError(f"invalid configuration: config file {yaml_path} does not exist")
            settings = _settings_with_yaml(yaml_path, overrides)
        else:
            settings = Settings(**overrides)
        settings._renamed = tuple(renamed)
        return settings
    except ValidationError as exc:
        raise ConfigError(_describe(exc.errors()[0])) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid configuration: config.yaml is not valid YAML: {exc}") from None
    except ValueError as exc:  # e.g. a malformed JSON value for a nested key in the environment
        raise ConfigError(f"invalid configuration: {exc}") from None


def _settings_with_yaml(yaml_path: Path, overrides: dict[str, Any]) -> Settings:
    class _Custom(Settings):
        model_config = SettingsConfigDict(**{**Settings.model_config, "yaml_file": str(yaml_path)})

    return _Custom(**overrides)
