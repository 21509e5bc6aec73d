"""Agent core: compaction (`agent.compaction`), prompt-cache policy and the tool loop (no I/O of its own).

The context engine modules that plugins import by their earlier names (before they moved into
`agent.compaction`) still import under those names: each is the same module object as its new home, so
a plugin registering an engine or subclassing one sees the gateway's own registry and classes.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

MOVED_MODULES = {
    "agent.context_engine": "agent.compaction.engine",
    "agent.engines": "agent.compaction.registry",
    "agent.context_compressor": "agent.compaction.compressor",
    "agent.server_compaction": "agent.compaction.server",
    "agent.summary": "agent.compaction.prompt",
}
"""Earlier module name -> where it lives now (imported only when a plugin asks for the earlier name)."""


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an earlier module name as its new module: the import system returns whatever
    `exec_module` leaves in `sys.modules` under the name asked for."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(MOVED_MODULES[module.__name__])


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())
