"""Building millions of small objects without the cyclic garbage collector in the way."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic collector for a block; restore it as it was.

    Millions of new dicts and turns trigger full collections over and over (quadratic in effect,
    3-4x the decode time of a 60 MB export) while none of them is garbage yet. Nothing the
    pipeline builds holds reference cycles, so pausing it for one input is safe. Callers leave the
    block before they yield, so the pause never outlives their own work.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
