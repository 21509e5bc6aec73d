"""Engine selection: the built-in compressor by default, plugins only when named, clear errors otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

import agent.compaction.registry as engines
from agent.compaction.compressor import ContextCompactor
from agent.compaction.engine import CompactionConfig, CompactionResult, ContextEngine, EngineState
from agent.compaction.registry import (
    ENTRY_POINT_GROUP,
    UnknownEngineError,
    register_context_engine,
    resolve_engine,
    unregister_context_engine,
)
from agent.types import Message
from agent.usage import Usage
from tests.agent.compressor_support import make

NOT_CALLABLE = 42
loaded: list[str] = []


class LosslessEngine(ContextEngine):
    """A plugin engine as a third party would write it."""

    name = "lossless"

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    async def compress(
        self, messages: Sequence[Message], *, focus: str | None = None, force: bool = False
    ) -> CompactionResult:
        raise NotImplementedError


class _RecordingEntryPoint(EntryPoint):
    def load(self) -> Any:
        loaded.append(self.name)
        return super().load()


def _plugins(*names_and_targets: tuple[str, str]) -> Any:
    def fake_entry_points(*, group: str) -> list[EntryPoint]:
        if group != ENTRY_POINT_GROUP:
            return []  # no general plugins installed
        return [_RecordingEntryPoint(name, target, group) for name, target in names_and_targets]

    return fake_entry_points


@pytest.fixture(autouse=True)
def _reset_loaded() -> None:
    loaded.clear()


def test_builtin_compressor_is_the_default_even_when_a_plugin_claims_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        engines,
        "entry_points",
        _plugins(("compressor", f"{__name__}:LosslessEngine"), ("lossless", f"{__name__}:LosslessEngine")),
    )
    assert resolve_engine("compressor") is ContextCompactor
    assert loaded == []  # no plugin is even imported unless named


def test_named_plugin_is_loaded_through_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        engines,
        "entry_points",
        _plugins(("other", f"{__name__}:NOT_CALLABLE"), ("lossless", f"{__name__}:LosslessEngine")),
    )
    assert resolve_engine("lossless") is LosslessEngine
    assert loaded == ["lossless"]


def test_unknown_engine_names_the_available_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "entry_points", _plugins(("lossless", f"{__name__}:LosslessEngine")))
    with pytest.raises(
        UnknownEngineError, match=r"unknown context engine 'lcm'; available: compressor, lossless"
    ):
        resolve_engine("lcm")


def test_plugin_that_is_not_callable_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "entry_points", _plugins(("broken", f"{__name__}:NOT_CALLABLE")))
    with pytest.raises(UnknownEngineError, match="not callable"):
        resolve_engine("broken")


def test_the_engine_learns_the_reported_prompt_size() -> None:
    engine = make(context_length=200_000)
    assert engine.state.last_prompt_tokens is None
    engine.update_from_usage(Usage(input_tokens=1_000, cache_read_input_tokens=49_000, output_tokens=500))
    assert engine.state.last_prompt_tokens == 50_000
    assert engine.threshold_tokens == 100_000
    assert not engine.should_compress()
    assert engine.should_compress(100_000)
    assert engine.tool_schemas() == []


def test_engine_state_survives_a_json_round_trip() -> None:
    state = EngineState(
        previous_summary="S", compression_count=3, paused_at_tokens=9_000, awaiting_effect=True
    )
    assert EngineState.from_json(state.to_json() | {"unknown_key": 1}) == state
    assert EngineState.from_json(None) == EngineState()


PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
"""The test plugin folder: `plugins/context_engine/keeper/` registers the `keeper` engine."""


@pytest.fixture
def no_entry_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(engines, "entry_points", _plugins())
    yield
    unregister_context_engine("keeper")
    unregister_context_engine("lossless")
    # the plugin registers itself when imported: forget the import with the registration, so a later
    # test in this process (a gateway with context.engine: keeper) imports it and registers it again
    sys.modules.pop("chat_gateway_plugins.context_engine.keeper", None)


def test_a_plugin_folder_is_found_first(no_entry_points: None) -> None:
    factory = resolve_engine("keeper", plugins_dir=PLUGINS)
    assert getattr(factory, "name", None) == "keeper"
    assert resolve_engine("compressor", plugins_dir=PLUGINS) is ContextCompactor


def test_an_engine_registered_by_the_plugin_system_is_found(no_entry_points: None) -> None:
    with pytest.raises(UnknownEngineError):
        resolve_engine("lossless")
    register_context_engine("lossless", LosslessEngine)
    assert resolve_engine("lossless") is LosslessEngine


def test_registering_compressor_never_replaces_the_builtin(no_entry_points: None) -> None:
    register_context_engine("compressor", LosslessEngine)
    try:
        assert resolve_engine("compressor") is ContextCompactor
    finally:
        unregister_context_engine("compressor")


def test_unknown_engine_lists_folder_engines_too(no_entry_points: None) -> None:
    with pytest.raises(
        UnknownEngineError, match=r"unknown context engine 'lcm'; available: compressor, keeper"
    ):
        resolve_engine("lcm", plugins_dir=PLUGINS)


def test_a_folder_without_an_engine_is_rejected(no_entry_points: None, tmp_path: Path) -> None:
    folder = tmp_path / "context_engine" / "empty"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("VALUE = 1\n")
    with pytest.raises(UnknownEngineError, match="neither defines ENGINE"):
        resolve_engine("empty", plugins_dir=tmp_path)


def test_a_folder_may_name_its_factory_engine(no_entry_points: None, tmp_path: Path) -> None:
    folder = tmp_path / "context_engine" / "named"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        "from agent.compaction.compressor import ContextCompactor\nENGINE = ContextCompactor\n"
    )
    assert resolve_engine("named", plugins_dir=tmp_path) is ContextCompactor


def test_a_plugin_written_against_the_earlier_names_loads(no_entry_points: None, tmp_path: Path) -> None:
    """The engine modules' and classes' names before they moved into `agent.compaction` (and took the
    word compaction) still import, as the same modules and classes: the plugin registers into the
    gateway's own registry and subclasses its own classes."""
    folder = tmp_path / "context_engine" / "older"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        "from agent.context_compressor import ContextCompressor\n"
        "from agent.context_engine import CompressionConfig, CompressionResult, ContextEngine, Outcome\n"
        "from agent.engines import register_context_engine\n"
        "from agent.server_compaction import ServerCompaction\n"
        "from agent.summary import frame\n"
        "class Older(ContextCompressor):\n"
        "    name = 'older'\n"
        "register_context_engine('older', Older)\n"
    )
    try:
        factory = resolve_engine("older", plugins_dir=tmp_path)
        assert isinstance(factory, type)
        assert issubclass(factory, ContextCompactor)
        assert issubclass(factory, ContextEngine)
        assert sys.modules["agent.engines"] is engines
        plugin = sys.modules["chat_gateway_plugins.context_engine.older"]
        assert plugin.CompressionResult is CompactionResult
        assert plugin.CompressionConfig is CompactionConfig
    finally:
        unregister_context_engine("older")
