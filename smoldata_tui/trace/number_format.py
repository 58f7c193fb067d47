"""Times and counts written for people: ``+12.345s`` offsets, ``4m05s`` durations, ``12,345``.

Pure functions with no dependencies, so a widget that only shows a duration loads nothing else.
"""

from __future__ import annotations


def format_offset(ms: float | None) -> str:
    """Time since the trace's first event: ``+12.345s``; blank when unknown."""
    if ms is None:
        return ""
    sign = "-" if ms < 0 else "+"
    seconds = abs(ms) / 1000
    if seconds < 100:
        return f"{sign}{seconds:.3f}s"
    if seconds < 10_000:
        return f"{sign}{seconds:.1f}s"
    return f"{sign}{seconds:.0f}s"


def format_duration(ms: float | None) -> str:
    """A short duration: ``850ms``, ``12.3s``, ``4m05s``, ``2h03m``; blank when unknown."""
    if ms is None or ms < 0:
        return ""
    if ms < 1000:
        return f"{ms:.0f}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_count(value: float) -> str:
    """``12,345`` for whole numbers, ``1.5`` otherwise."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"
