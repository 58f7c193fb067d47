"""The endpoint key spelt out in ways a search for its exact forms misses: invisible characters
between its letters, broken across lines (``fold -w 8``), or as the hex of its bytes (``xxd -p``,
``od -An -tx1``, ``od -tx1`` with its offsets, ``key.encode().hex()``, either case).

A :class:`Spelling` is one such way for one key: the key's units (each character in any of the
forms JSON writes it in, or each byte's two hex digits) with up to :data:`MAX_GAP` gap tokens
between two units (spaces, tabs, line breaks raw or JSON-escaped at any depth, an ``od``/``xxd``
offset, and for the letters also the invisible characters below, raw or as ``\\uXXXX``). It finds
whole spellings in a text (one regular expression, in C) and, for a stream cut into chunks, where
the earliest spelling that the next chunk could complete begins (:meth:`Spelling.open_start`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_GAP = 12  # gap tokens between two units: od -c puts 3 spaces, a line break, an offset, 3 spaces
# Characters that show as nothing (Unicode's default-ignorable ones an agent can type or print).
INVISIBLE = [0x00AD, 0x034F, 0x061C, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
             *range(0x2060, 0x2065), *range(0x2066, 0x206A), *range(0xFE00, 0xFE10), 0xFEFF]  # fmt: skip
_LINE_BREAK = r"[\n\r]|\\{1,8}[nr]"  # raw, or as JSON writes it inside a string, nested up to 3 deep
_OFFSET = r"[0-9a-fA-F]{6,8}:?"  # the offset column od and xxd begin each line with
_ESCAPED_INVISIBLE = r"\\{1,8}u(?i:" + "|".join(f"{code:04x}" for code in INVISIBLE) + ")"
HEX_GAP_TOKEN = rf"(?:[ \t]|{_LINE_BREAK}|{_OFFSET})"
TEXT_GAP_TOKEN = rf"(?:[ \t]|{_LINE_BREAK}|{_OFFSET}|{_ESCAPED_INVISIBLE}|{{raw}})"


def _raw_invisible(as_bytes: bool) -> str:
    """The invisible characters themselves: a class for text; for bytes, their UTF-8 forms by lead
    byte (one alternation of 45 sequences made every candidate position try each in turn)."""
    if not as_bytes:
        return "[" + "".join(re.escape(chr(code)) for code in INVISIBLE) + "]"
    by_lead: dict[int, list[bytes]] = {}
    for code in INVISIBLE:
        encoded = chr(code).encode()
        by_lead.setdefault(encoded[0], []).append(encoded[1:])
    branches = []
    for lead, rests in sorted(by_lead.items()):
        tails = "|".join("".join(f"\\x{byte:02x}" for byte in rest) for rest in rests)
        branches.append(f"\\x{lead:02x}(?:{tails})")
    return "|".join(branches)


# What the end of a chunk may hold of a gap token not yet complete: a run of backslashes and the
# start of an escape, part of an offset, the first bytes of an invisible character in UTF-8.
_PARTIAL_GAP = rb"\\{1,8}(?:u[0-9a-fA-F]{0,3})?|[0-9a-fA-F]{1,8}|" + b"|".join(
    re.escape(chr(code).encode()[:size]) for code in INVISIBLE for size in range(1, len(chr(code).encode()))
)


class Spelling:
    """One way of spelling out one key: ``units`` are the alternatives for each unit, in order."""

    def __init__(self, units: list[list[str]], gap_token: str) -> None:
        unit_texts = [_alternation(alternatives) for alternatives in units]
        text_gap, bytes_gap = gap_token.replace("{raw}", _raw_invisible(False)), gap_token.replace("{raw}", _raw_invisible(True))
        self.text_pattern = re.compile(f"{text_gap}{{0,{MAX_GAP}}}".join(unit_texts))
        self.bytes_pattern = re.compile(f"{bytes_gap}{{0,{MAX_GAP}}}".join(unit_texts).encode("utf-8", "surrogatepass"))
        self._units = [re.compile(text.encode()) for text in unit_texts]
        self._gap = re.compile(bytes_gap.encode())
        # where a spelling may begin: its first unit, then its second after a gap (overlapping)
        self._two_units = re.compile(f"{unit_texts[0]}(?={bytes_gap}{{0,{MAX_GAP}}}{unit_texts[1] if len(units) > 1 else ''})".encode())
        self._partial_gap = re.compile(_PARTIAL_GAP)
        self._unit_prefixes = [{form.encode()[:size] for form in alternatives for size in range(1, len(form.encode()))}
                               for alternatives in units]  # fmt: skip
        longest_unit = max(len(form.encode()) for alternatives in units for form in alternatives)
        self.max_length = longest_unit * len(units) + (len(units) - 1) * MAX_GAP * 18  # a gap token is ≤ 18 bytes
        self._longest_first_prefix = max((len(prefix) for prefix in self._unit_prefixes[0]), default=0)
        self._short_tail = 2 * longest_unit + MAX_GAP * 18  # a start this near the end may lack its second unit

    def mask(self, data: bytes) -> bytes:
        return self.bytes_pattern.sub(_stars, data)

    def mask_text(self, text: str) -> str:
        return self.text_pattern.sub(lambda match: "*" * len(match.group(0)), text)

    def open_start(self, data: bytes) -> int | None:
        """Where, in ``data`` (already masked), the earliest spelling the stream's next bytes could
        complete begins; None when none could."""
        start = max(0, len(data) - self.max_length)
        tail = max(start, len(data) - self._short_tail)
        first, first_prefixes = self._units[0], self._unit_prefixes[0]
        for match in self._two_units.finditer(data, start):
            if match.start() >= tail:
                break
            if self._continues_to_the_end(data, match.end(), 1):
                return match.start()
        for match in first.finditer(data, tail):
            if self._continues_to_the_end(data, match.end(), 1):
                return match.start()
        for size in range(min(len(data), self._longest_first_prefix), 0, -1):  # the first unit cut by the end
            if data[-size:] in first_prefixes:
                return len(data) - size
        return None

    def _continues_to_the_end(self, data: bytes, position: int, unit: int) -> bool:
        gaps = 0
        end = len(data)
        units, gap = self._units, self._gap
        while position < end:
            if unit == len(units):
                return False  # a whole spelling: already masked, nothing to hold
            match = units[unit].match(data, position)
            if match is not None:
                position, unit, gaps = match.end(), unit + 1, 0
                continue
            match = gap.match(data, position) if gaps < MAX_GAP else None
            if match is not None:
                position, gaps = match.end(), gaps + 1
                continue
            rest = data[position:]
            return unit < len(units) and (rest in self._unit_prefixes[unit] or self._partial_gap.fullmatch(rest) is not None)
        return True


def spellings(secret: str, forms: Callable[[str], set[str]]) -> list[Spelling]:
    """The key with gaps between its characters (each in any of its ``forms``), and its bytes in hex."""
    letters = Spelling([sorted(forms(character)) for character in secret], TEXT_GAP_TOKEN)
    hex_digits = Spelling([[f"{byte:02x}", f"{byte:02X}", f"{byte:02x}".upper()[:1] + f"{byte:02x}"[1:],
                            f"{byte:02x}"[:1] + f"{byte:02x}".upper()[1:]] for byte in secret.encode()], HEX_GAP_TOKEN)  # fmt: skip
    return [letters, hex_digits]


def _alternation(texts: list[str]) -> str:
    return "(?:" + "|".join(re.escape(text) for text in sorted(set(texts), key=len, reverse=True)) + ")"


def _stars(match: re.Match) -> bytes:
    return b"*" * (match.end() - match.start())
