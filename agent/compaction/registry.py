"""Finding a context engine by name (`context.engine`), in this order:

1. a folder `<plugins_dir>/context_engine/<name>/` (a Python package: it either calls
   `register_context_engine(name, factory)` when imported, or defines `ENGINE`, the factory);
2. an engine registered with `register_context_engine()` by the general plugin system (any plugin
   module, including those published in the `chat_gateway.plugins` entry-point group, which are
   imported only when an engine name is not found in step 1);
3. the `chat_gateway.context_engines` entry-point group (name -> factory);
4. the built-in engines: `compressor` (which always means the built-in one, whatever a plugin claims)
   and `server` (the Messages API's server-side compaction, `agent.compaction.server`).

A plugin is never activated implicitly: only the configured name is looked up, and nothing is imported
for the default `compressor`. An unknown name raises `UnknownEngineError` naming the engines available.
A factory is called with the `ContextEngine` constructor's keyword arguments.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from agent.compaction.compressor import ContextCompactor
from agent.compaction.engine import ContextEngine
from agent.compaction.server import ServerCompaction

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "chat_gateway.context_engines"
PLUGIN_ENTRY_POINT_GROUP = "chat_gateway.plugins"
BUILTIN_ENGINE = "compressor"
FOLDER = "context_engine"

EngineFactory = Callable[..., ContextEngine]

BUILTINS: dict[str, EngineFactory] = {BUILTIN_ENGINE: ContextCompactor, "server": ServerCompaction}
_registered: dict[str, EngineFactory] = {}


class UnknownEngineError(LookupError):
    pass


def register_context_engine(name: str, factory: EngineFactory) -> None:
    """Make an engine available under `name` (the general plugin system's hook). It is used only when
    `context.engine` names it; registering `compressor` has no effect on the built-in default."""
    if not callable(factory):
        raise UnknownEngineError(f"context engine {name!r} registered with a factory that is not callable")
    if name in _registered and _registered[name] is not factory:
        logger.warning("context engine %r registered again; the newer registration wins", name)
    _registered[name] = factory


def unregister_context_engine(name: str) -> None:
    _registered.pop(name, None)


def resolve_engine(name: str, *, plugins_dir: Path | None = None) -> EngineFactory:
    """The factory for engine `name` (see the module docstring for the order)."""
    if name == BUILTIN_ENGINE:
        return ContextCompactor
    folder = plugins_dir / FOLDER / name if plugins_dir is not None else None
    if folder is not None and (folder / "__init__.py").is_file():
        return _from_folder(name, folder)
    if name not in _registered:
        _load_general_plugins()
    if name in _registered:
        return _registered[name]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            loaded = ep.load()
            if not callable(loaded):
                raise UnknownEngineError(f"context engine plugin {name!r} is not callable")
            logger.info("context engine plugin %s loaded from %s", name, ep.value)
            return loaded  # type: ignore[no-any-return]
    if name in BUILTINS:
        return BUILTINS[name]
    raise UnknownEngineError(
        f"unknown context engine {name!r}; available: {', '.join(available_engines(plugins_dir))}"
    )


def available_engines(plugins_dir: Path | None = None) -> list[str]:
    """Every engine name `resolve_engine` can find (without importing any plugin)."""
    names = {*BUILTINS, *_registered, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))}
    if plugins_dir is not None and (plugins_dir / FOLDER).is_dir():
        names.update(p.name for p in (plugins_dir / FOLDER).iterdir() if (p / "__init__.py").is_file())
    return sorted(names)


_folder_engines: dict[Path, EngineFactory] = {}
"""What each plugin folder provided when it was imported (a package is imported once per process)."""


def _from_folder(name: str, folder: Path) -> EngineFactory:
    key = folder.resolve()
    if key in _folder_engines:
        return _folder_engines[key]
    module = _import_package(f"chat_gateway_plugins.context_engine.{name}", folder)
    factory = _registered.get(name) or getattr(module, "ENGINE", None)
    if factory is None:
        raise UnknownEngineError(
            f"context engine folder {folder} neither defines ENGINE "
            f"nor calls register_context_engine({name!r})"
        )
    if not callable(factory):
        raise UnknownEngineError(f"context engine {name!r} in {folder}: ENGINE is not callable")
    logger.info("context engine plugin %s loaded from %s", name, folder)
    _folder_engines[key] = factory
    return factory


def _import_package(module_name: str, folder: Path) -> ModuleType:
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(
        module_name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise UnknownEngineError(f"context engine folder {folder} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[module_name]
        raise
    return module


def _load_general_plugins() -> None:
    """Import the general plugins (entry-point group `chat_gateway.plugins`); each may register engines."""
    for ep in entry_points(group=PLUGIN_ENTRY_POINT_GROUP):
        loaded = ep.load()
        if callable(loaded) and not isinstance(loaded, type):
            loaded()  # a `register()` function
        logger.info("plugin %s loaded from %s", ep.name, ep.value)
