"""The Rich console a command prints its text tables on, and how wide they may be.

On a terminal, its width. Elsewhere (a pipe, a file, a CI log) nobody's screen bounds the lines:
Rich would guess 80 columns and cut a row's end (the attempt count, the finding's sentence), so the
width is ``COLUMNS`` when set, else unbounded.
"""

from __future__ import annotations

import os
from typing import TextIO

from rich.console import Console

UNBOUNDED = 1_000_000  # wider than any line we print; Rich needs a number
ANY_TEXT = 2_000  # the cap on one cell when unbounded: it bounds agent-written text, not a layout


def text_console(out: TextIO, *, soft_wrap: bool = True) -> Console:
    console = Console(file=out, highlight=False, soft_wrap=soft_wrap)
    if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        console.width = UNBOUNDED
    return console


def bounded(console: Console) -> bool:
    """Whether the lines must fit a width (a terminal's, or COLUMNS)."""
    return console.width < UNBOUNDED


def cell_limit(console: Console, on_screen: int) -> int:
    """``on_screen`` characters where lines are bounded, else :data:`ANY_TEXT`."""
    return on_screen if bounded(console) else ANY_TEXT
