"""Make untrusted agent text safe to show: no escape sequences, no control characters, no credentials.

Agent output reaches the screen, findings and reports. It may hold ANSI escape
sequences, BEL, backspaces, C1 controls or bidi overrides. Every such character
is replaced with a visible stand-in, so nothing is interpreted and nothing is
silently hidden. It may hold a credential the agent read or printed: each is shown
as ``[redacted]`` (:func:`smoldata_tui.masking.redact_shown_text`). Rich markup is a separate concern: callers put this text in a
``rich.text.Text`` (never ``from_markup``), which does not parse ``[bold]``.
"""

from __future__ import annotations

import re

from smoldata_tui.masking import redact_shown_text

# C0 controls except tab/newline, DEL, C1 controls, and bidi/format controls that reorder text.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ ␇ ␈ ...
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def neutralize(text: str, *, keep_newlines: bool = True) -> str:
    """Replace every control character with a visible stand-in.

    Tabs become spaces (their width depends on the terminal). Newlines are kept
    for multi-line views, or shown as ``⏎`` when the text must fit one line.
    Credentials become ``[redacted]``.
    """
    text = redact_shown_text(text).replace("\t", "    ")
    if not keep_newlines:
        text = text.replace("\r\n", "\u23ce").replace("\n", "\u23ce")
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_stand_in, text)


def clip(text: str, limit: int) -> str:
    """One safe line of at most ``limit`` characters."""
    if len(text) > limit * 4:
        text = text[: limit * 4]  # bound the work on huge inputs before scanning
    text = neutralize(text, keep_newlines=False)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def byte_size(count: int) -> str:
    """``512 bytes``, ``64 KiB``, ``1.5 GiB``: a size for people (binary units)."""
    if count < 1024:
        return f"{count} bytes"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}" if value < 10 and value != int(value) else f"{value:.0f} {unit}"
    raise AssertionError("unreachable")
