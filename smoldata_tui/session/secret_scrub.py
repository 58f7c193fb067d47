"""Keep the model endpoint's key out of everything we save or show, even when the agent prints it.

The key must sit in the sandbox's ``opencode.json`` (OpenCode reads it there; opencode_env also puts
it in the agent's environment), so an agent that runs ``cat ~/.config/opencode/opencode.json`` or
``env``, or writes it into its answer, hands it to us. Every text that leaves a sandbox or a grader
passes through a :class:`SecretScrubber` before it reaches disk or the screen: each occurrence
becomes ``*`` of the same length, so line lengths, offsets and the JSON structure (hence the
verdict) stay as they were.

Forms caught (see :func:`secret_forms`): the key as is, and the key as JSON writes it inside a
string, nested up to :data:`MAX_JSON_NESTING` deep (a trace quoting a file that quotes the key),
both as ``json.dumps`` writes it with ``ensure_ascii=False`` (as OpenCode's ``JSON.stringify``
does: ``"``, ``\\`` and control characters escaped) and with ``ensure_ascii=True`` (every
non-ASCII character as ``\\uXXXX``, lower- or upper-case hex). Then the key spelt out
(:mod:`.secret_spellings`): with invisible characters, spaces or line breaks between its letters
(``fold -w 8``, ``od -c``), or as the hex of its bytes (``xxd -p``, ``od -An -tx1``, ``od -tx1``).
Other encodings (base64, a key printed backwards) are not recognised: nothing can recognise every
encoding of a string (docs/episode-format.md lists what is not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from smoldata_tui.session.secret_spellings import spellings

MIN_SECRET_LENGTH = 8  # shorter "keys" (vLLM's EMPTY, "none") are placeholders, and would mask words
MAX_JSON_NESTING = 3  # JSON inside JSON inside JSON: a tool output in a trace quoting opencode.json
_HEX_ESCAPE = re.compile(r"\\u[0-9a-f]{4}")


def _json_escaped(value: str, *, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)[1:-1]


def secret_forms(secret: str) -> set[str]:
    """``secret`` and each way JSON (nested up to MAX_JSON_NESTING) may write it."""
    forms, level = {secret}, {secret}
    for _ in range(MAX_JSON_NESTING):
        level = {_json_escaped(form, ascii_only=flag) for form in level for flag in (False, True)}
        forms |= level
    forms |= {_HEX_ESCAPE.sub(lambda match: match.group(0)[:2] + match.group(0)[2:].upper(), form) for form in forms}
    return forms


class SecretScrubber:
    def __init__(self, secrets: Iterable[str | None]) -> None:
        self._plain = tuple(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)
        texts = {form for secret in self._plain for form in secret_forms(secret)}
        self._texts = sorted(texts, key=len, reverse=True)  # longest first: one form may hold another
        self._secrets = sorted({text.encode() for text in texts}, key=len, reverse=True)
        self._spellings = [spelling for secret in self._plain for spelling in spellings(secret, secret_forms)]
        self._pending = b""

    @property
    def active(self) -> bool:
        return bool(self._secrets)

    def fresh(self) -> SecretScrubber:
        """A scrubber for the same secrets with no stream state: one per stream."""
        return SecretScrubber(self._plain)

    def feed(self, data: bytes) -> bytes:
        """The part of the stream that is safe to pass on now. Bytes that may be the start of a
        secret cut by the chunk boundary wait for the next chunk (or :meth:`flush`)."""
        if not self._secrets:
            return data
        buffer = self._mask(self._pending + data)
        held = self._partial_suffix(buffer)
        for spelling in self._spellings:  # a spelling the next chunk may complete is held from its start
            start = spelling.open_start(buffer)
            if start is not None:
                held = max(held, len(buffer) - start)
        self._pending = buffer[len(buffer) - held :] if held else b""
        return buffer[: len(buffer) - held]

    def flush(self) -> bytes:
        """The held bytes, at the end of the stream: a cut-off secret (the agent was killed while
        printing it) is masked too once it is long enough to give part of the key away."""
        rest, self._pending = self._pending, b""
        return b"*" * len(rest) if len(rest) >= MIN_SECRET_LENGTH else rest

    def text(self, value: str) -> str:
        """``value`` with the secrets masked (for strings that are not part of the stream)."""
        for secret in self._texts:
            if secret in value:
                value = value.replace(secret, "*" * len(secret))
        for spelling in self._spellings:
            value = spelling.mask_text(value)
        return value

    def _mask(self, data: bytes) -> bytes:
        for secret in self._secrets:
            if secret in data:
                data = data.replace(secret, b"*" * len(secret))
        for spelling in self._spellings:
            data = spelling.mask(data)
        return data

    def _partial_suffix(self, data: bytes) -> int:
        """The length of the longest end of ``data`` that begins some secret."""
        longest = 0
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(data)), longest, -1):
                if data.endswith(secret[:size]):
                    longest = size
                    break
        return longest
