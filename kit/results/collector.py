"""Python's cyclic garbage collector paused while a command builds the tens of thousands of objects it
keeps (a tree's cache entries, expectations, states): each of the collections their allocation sets off
walks every object held so far again, a sixth of a warm `kit status` of 20,000 pairs. Nothing built
there is cyclic garbage (reference counting frees the rest), and the collector resumes when the phase
ends. Standard library only."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The block runs with the cyclic collector off; it is on again afterwards if it was before (an error too)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
