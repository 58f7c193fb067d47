"""OpenCode's identifiers, made deterministically for built traces: ``prt_…``/``msg_…`` ids that
sort in creation order (12 hex digits of ``ms * 0x1000 + counter``, then 14 base-62 characters),
and provider-style ``call_…`` tool call ids.
"""

from __future__ import annotations

import random
import string

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_ID_MASK = (1 << 48) - 1  # OpenCode keeps the low 6 bytes of ms * 0x1000 + counter
_RANDOM_ID_CHARS = 14  # OpenCode ids are 26 characters after the prefix: 12 hex + 14 base-62
_CALL_ID_CHARS = 24


class IdMaker:
    """The ids of one session, all drawn from one ``random.Random`` seeded with ``seed``."""

    def __init__(self, seed: str) -> None:
        self._rng = random.Random(seed)
        self._last_id_value = -1

    def ascending(self, prefix: str, clock_ms: int) -> str:
        """A ``prefix_…`` id made at ``clock_ms`` that sorts after every id made before it."""
        # Same layout as OpenCode's Identifier.ascending, but the counter never resets, so ids
        # stay strictly increasing even when many are made within one fake millisecond.
        value = max(clock_ms * 0x1000, self._last_id_value + 1)
        if self._last_id_value >= 0 and (value & _ID_MASK) < (self._last_id_value & _ID_MASK):
            raise ValueError(
                "the 48-bit id space wrapped around; ids would no longer sort in creation "
                "order: choose another start_ms"
            )
        self._last_id_value = value
        tail = "".join(self._rng.choices(_BASE62, k=_RANDOM_ID_CHARS))
        return f"{prefix}_{value & _ID_MASK:012x}{tail}"

    def call_id(self) -> str:
        """A fresh provider-style tool call id: ``call_`` + 24 base-62 characters."""
        return "call_" + "".join(self._rng.choices(_BASE62, k=_CALL_ID_CHARS))
