"""Built events → the bytes OpenCode 1.18.31 writes: ``JSON.stringify``'s, numbers included."""

from __future__ import annotations

import orjson

_APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE


def dumps_event(event: dict) -> bytes:
    """Encode one event as OpenCode writes it: ``JSON.stringify(event) + "\\n"``.

    Compact separators, UTF-8, non-ASCII kept raw (U+2028/U+2029/U+0085 included, exactly as
    ``JSON.stringify`` leaves them). One known difference from JavaScript remains for events
    given to ``raw``/``event``: an integral float such as ``5.0`` is written ``5.0`` where
    JavaScript writes ``5``; the builder's own methods never produce such floats.
    """
    return orjson.dumps(event, option=_APPEND_NEWLINE)


def js_number(value: float | int) -> float | int:
    """Return ``value`` so that it serialises as ``JSON.stringify`` would (``0.0`` → ``0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
