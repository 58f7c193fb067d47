"""Which numbers in a trace (or a sidecar) the analysis counts.

OpenCode writes costs, token counts and times as plain JSON numbers, but a trace can hold
anything json.loads accepts: ``NaN``, ``Infinity``, ``1e309`` (read as infinity), integers of
hundreds of digits. Such a value is not a cost or a count: summed, it makes every total NaN or
infinite, which JSON cannot hold (orjson writes ``null``, so a cached result would differ from a
fresh one) and which no formatting expects. So a number is *counted* only when it is finite and
within ±2**53, the largest range in which every integer is exact as a float (and so in every JSON
reader); anything else is left out of the stats and said as a ``bad_number`` finding. A total of
counted values can still pass 64 bits (thousands of 2**53 token counts), which orjson cannot write:
:func:`json_safe` writes such a total as a float.
"""

from __future__ import annotations

COUNTED_LIMIT = 2**53
_INT64 = (-(2**63), 2**64 - 1)  # what orjson writes as an integer


def counted(value: object) -> bool:
    """Whether ``value`` is a number the stats count (``true``/``false`` are not numbers)."""
    # NaN fails both comparisons; ints and floats compare exactly, however large the int.
    return (type(value) is int or type(value) is float) and -COUNTED_LIMIT <= value <= COUNTED_LIMIT


def json_safe(total: int | float) -> int | float:
    """A total as JSON can hold it: an integer past 64 bits becomes a float."""
    if type(total) is int and not _INT64[0] <= total <= _INT64[1]:
        return float(total)
    return total


def describe(value: object) -> str:
    """The value as a finding names it, short whatever its size."""
    if type(value) is float and value != value:
        return "NaN"
    if type(value) is float and value in (_INFINITY, -_INFINITY):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}… ({len(text.lstrip('-'))} digits)"


_INFINITY = float("inf")
