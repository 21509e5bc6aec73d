"""The order tests run in: longest first.

`make test` hands tests to its workers one at a time (`--maxschedchunk=1`), so what starts last decides
how long one worker goes on alone at the end. The slow-marked tests come first, then the rest of
tests/e2e and tests/faults (each starts gateway processes), then the others, each group in its usual
order; a minute-long test started near the end would otherwise keep one worker busy while the other
has nothing left to do.
"""

from __future__ import annotations

import pytest


def _weight(item: pytest.Item) -> int:
    if item.get_closest_marker("slow") is not None:
        return 0
    return 1 if item.nodeid.startswith(("tests/e2e/", "tests/faults/")) else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_weight)
