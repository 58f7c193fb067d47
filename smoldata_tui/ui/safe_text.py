"""A fast path in front of :func:`smoldata_tui.trace.text.neutralize` for big, clean text.

``neutralize`` scans with a regular expression, about 15 ms per megabyte. Most tool output is
printable ASCII, which ``bytes.translate`` can prove in about 1 ms per megabyte; only text
that fails that check goes through ``neutralize``. The result is identical either way: clean
text still has its credentials redacted.
"""

from __future__ import annotations

from smoldata_tui.masking import redact_shown_text
from smoldata_tui.trace.text import neutralize

_PRINTABLE_ASCII_AND_NEWLINE = bytes(range(0x20, 0x7F)) + b"\n"


def safe_text(text: str) -> str:
    """``neutralize(text)`` (newlines kept, tabs as four spaces), faster on clean ASCII."""
    if text.isascii():
        if "\t" in text:
            text = text.replace("\t", "    ")
        if not text.encode("ascii").translate(None, _PRINTABLE_ASCII_AND_NEWLINE):
            return redact_shown_text(text)
    return neutralize(text)
