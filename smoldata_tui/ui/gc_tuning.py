"""Keep Python's cyclic garbage collector from stalling the UI on big traces.

The viewer holds hundreds of thousands of long-lived objects (a record per event) while a
reader thread allocates a dict per event it parses. With the default thresholds the collector
runs full passes over all of them often enough to freeze drawing for 50-150 ms at a time.
Two measures: rarer collections while the app runs, and freezing (``gc.freeze``) what has been
loaded, so full passes only walk what is new. The records are never cyclic garbage.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 5_000  # Python's default is 700
FREEZE_EVERY = 20_000  # events loaded between two freezes


class QuietCollector:
    """Raises the thresholds on start and puts them back on stop (tests run many apps)."""

    def __init__(self) -> None:
        self._saved = gc.get_threshold()

    def start(self) -> None:
        self._saved = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, 10, 100)

    def stop(self) -> None:
        gc.set_threshold(*self._saved)


class LoadFreezer:
    """Freezes after the first load and then every FREEZE_EVERY events; thaws when done."""

    def __init__(self) -> None:
        self.frozen_at = 0  # events loaded at the last freeze

    def loaded(self, count: int, caught_up: bool) -> None:
        if count - self.frozen_at >= FREEZE_EVERY or (caught_up and not self.frozen_at and count):
            gc.freeze()
            self.frozen_at = count

    def release(self) -> None:
        """The episode is closed: what was frozen is garbage now, cycles included."""
        if self.frozen_at:
            gc.unfreeze()
            self.frozen_at = 0
