"""Finding a context engine by name (`context.engine`): the built-in `compressor`, or a plugin found in
the `chat_gateway.context_engines` entry-point group. A plugin is only ever used when named explicitly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import entry_points

from agent.context_compressor import ContextCompressor
from agent.context_engine import ContextEngine

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "chat_gateway.context_engines"
BUILTIN_ENGINE = "compressor"

EngineFactory = Callable[..., ContextEngine]


class UnknownEngineError(LookupError):
    pass


def resolve_engine(name: str) -> type[ContextEngine] | EngineFactory:
    """The engine class for `name`: the built-in compressor, or a plugin named explicitly."""
    if name == BUILTIN_ENGINE:
        return ContextCompressor
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            loaded = ep.load()
            if not callable(loaded):
                raise UnknownEngineError(f"context engine plugin {name!r} is not callable")
            logger.info("context engine plugin %s loaded from %s", name, ep.value)
            return loaded  # type: ignore[no-any-return]
    available = sorted({BUILTIN_ENGINE, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})
    raise UnknownEngineError(f"unknown context engine {name!r}; available: {', '.join(available)}")
