"""Ports for servers a test starts, chosen where nothing else picks them.

A port the kernel hands out for `bind(("127.0.0.1", 0))` comes from the ephemeral range, the same range every
outgoing connection takes its local port from: between closing the probe socket and the server binding it, a
client connection of another test (or of the process under test) can take it, and the server fails with
"address already in use". These ports come from below the ephemeral range instead, a slice per xdist worker,
so only another of our own servers could want the same one, and each is checked free before it is handed out.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

_LOW, _HIGH = 20000, 32000  # below Linux's ephemeral range (32768-60999)
_SLICES = 16


def _slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) % _SLICES if worker.isdigit() else 0
    width = (_HIGH - _LOW) // _SLICES
    start = _LOW + index * width
    return range(start, start + width)


_SPAN = _slice()
_NEXT = itertools.count(random.randrange(len(_SPAN)))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now and that no other test of this run will be given."""
    for _ in range(len(_SPAN)):
        port = _SPAN[next(_NEXT) % len(_SPAN)]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_SPAN.start}-{_SPAN.stop - 1}")
