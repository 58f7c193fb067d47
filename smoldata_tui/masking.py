"""Secrets kept out of everything saved or shown: the one module every layer that masks calls.
Pure: no I/O, nothing of the project imported.

1. A task's named secrets (the host variables its ``task.toml`` passes in): each value becomes
   ``[$NAME]`` in a grader's output and report (:func:`redact_secrets`, :func:`redact_json`).
2. Credentials in saved episode data: config keys by their names, values by their shapes
   (:func:`redact` for a config, :func:`redact_text` for free text such as an error), replaced
   by ``[redacted]``; an ``opencode.json`` keeps its keys with their values as ``***``
   (:func:`masked_config`), a URL its host (:func:`masked_url`).
3. The model endpoint's key, in every stream that leaves a sandbox or a grader
   (:class:`SecretScrubber`). The key must sit in the sandbox's ``opencode.json`` (OpenCode reads
   it there; opencode_env also puts it in the agent's environment), so an agent that runs
   ``cat ~/.config/opencode/opencode.json`` or ``env``, or writes it into its answer, hands it to
   us. Each occurrence becomes ``*`` of the same length, so line lengths, offsets and the JSON
   structure (hence the verdict) stay as they were.

   Forms caught (see :func:`secret_forms`): the key as is, and the key as JSON writes it inside a
   string, nested up to :data:`MAX_JSON_NESTING` deep (a trace quoting a file that quotes the
   key), both as ``json.dumps`` writes it with ``ensure_ascii=False`` (as OpenCode's
   ``JSON.stringify`` does) and with ``ensure_ascii=True`` (``\\uXXXX``, either case). Then the key
   spelt out (:class:`Spelling`): with invisible characters, spaces or line breaks between its
   letters (``fold -w 8``, ``od -c``), or as the hex of its bytes (``xxd -p``, ``od -An -tx1``,
   ``od -tx1`` with its offsets, ``key.encode().hex()``). A spelling is the key's units (each
   character in any form JSON writes it in, or each byte's two hex digits) with up to
   :data:`MAX_GAP` gap tokens between two units; one regular expression (in C) finds whole
   spellings, and for a stream cut into chunks :meth:`Spelling.open_start` says where the earliest
   spelling the next chunk could complete begins. Other encodings (base64, a key printed
   backwards) are not recognised: nothing can recognise every encoding of a string
   (docs/episode-format.md lists what is not).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# -- 1. named secrets --------------------------------------------------------------------------

MIN_REDACTED_LENGTH = 4  # shorter values ("1", "on") are not secrets and would garble output


def redact_secrets(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with each secret value replaced by ``[$NAME]``, longest first (one may contain another)."""
    for var, value in sorted(secrets.items(), key=lambda item: -len(item[1])):
        if len(value) >= MIN_REDACTED_LENGTH:
            text = text.replace(value, f"[${var}]")
    return text


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A parsed JSON value with ``change`` applied to every string in it (keys, numbers and booleans kept)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    return value


def redact_json(value: Any, secrets: Mapping[str, str]) -> Any:
    """A parsed JSON value with secrets redacted in every string (numbers and booleans kept)."""
    return map_strings(value, lambda text: redact_secrets(text, secrets))


# -- 2. credentials by shape and config keys by name -------------------------------------------

REDACTED = "[redacted]"
MASKED = "***"  # a credential-named config value, kept as a key with its value hidden

SECRET_NAME = re.compile(r"key|token|secret|password|passwd|authorization|credential|cookie", re.IGNORECASE)
_SECRET_NAME = SECRET_NAME
# A count such as max_tokens is not a secret: "tokens" (plural) holding a number is kept.
_TOKEN_COUNT_NAME = re.compile(r"tokens(?![a-z])", re.IGNORECASE)
_HEADER_VALUE = r"\b(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"  # an Authorization header value
# In what an agent writes, "basic analysis" and "token counting" have a header's shape: there a
# header value is one only where the text says it is, or where it looks like a credential.
_HEADER_VALUE_IN_PROSE = (
    r"\bauthorization\s*[:=]\s*(?:(?:bearer|basic|token)\s+)?[A-Za-z0-9._~+/=-]{8,}"
    r"|\b(?:bearer|basic|token)\s+(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}"
)
_KEY_SHAPES = (
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"  # OpenAI / Anthropic style keys
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bdtn_[A-Za-z0-9]{16,}"  # Daytona
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # a JWT
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"  # user:password@ in a URL
)
_CREDENTIAL = re.compile(f"(?:{_HEADER_VALUE}|{_KEY_SHAPES})", re.IGNORECASE)
_CREDENTIAL_IN_PROSE = re.compile(f"(?:{_HEADER_VALUE_IN_PROSE}|{_KEY_SHAPES})", re.IGNORECASE)
# Every match of _CREDENTIAL_IN_PROSE begins with one of these (in any case), or just after "://".
_PROSE_CREDENTIAL_STARTS = ("authorization", "bearer", "basic", "token", "sk-", "pk-", "rk-", "hf_", "ghp_",
                            "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "akia", "dtn_", "eyj")  # fmt: skip


def masked_config(config: Any) -> Any:
    """A deep copy of ``config`` (an ``opencode.json``) with every credential-named string value
    replaced by ``***``: the shape stays, so a reader sees which keys were set."""
    if isinstance(config, Mapping):
        return {
            key: MASKED if isinstance(value, str) and value and SECRET_NAME.search(str(key)) else masked_config(value)
            for key, value in config.items()
        }
    if isinstance(config, list):
        return [masked_config(item) for item in config]
    return copy.deepcopy(config)


def masked_url(url: str) -> str:
    """``url`` with a user, a password and query values replaced by ``***``."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(a malformed URL)"
    netloc = ("***@" if "@" in parts.netloc else "") + (f"[{host}]" if ":" in host else host)
    netloc += f":{port}" if port is not None else ""
    query = urlencode([(name, "***") for name, _ in parse_qsl(parts.query, keep_blank_values=True)], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def looks_like_credential(text: str) -> bool:
    return _CREDENTIAL.search(text) is not None


def redact_text(text: str) -> str:
    """Free text (grader output, an error) with anything credential-like replaced."""
    return _CREDENTIAL.sub(REDACTED, text)


def redact_shown_text(text: str) -> str:
    """What an agent wrote, as it is shown or reported: keys by their shapes, header values where
    the text names them (see ``_HEADER_VALUE_IN_PROSE``), each replaced by ``[redacted]``.

    The same as ``_CREDENTIAL_IN_PROSE.sub``, which costs about 190 ms a megabyte in Python's
    ``re``: the pattern is tried only where a match can begin (a start found by ``str.find`` in
    the case-folded text, about 5 ms a megabyte), so clean output costs next to nothing.
    """
    folded = text.casefold()
    # A character folded to two ("ß", "İ") would put the places out of line, and "ı" is an "i" to
    # the pattern but not to casefold: such rare text is scanned whole.
    if len(folded) != len(text) or "\u0131" in folded:
        return _CREDENTIAL_IN_PROSE.sub(REDACTED, text)
    starts = []
    for needle in _PROSE_CREDENTIAL_STARTS:
        at = folded.find(needle)
        while at != -1:
            starts.append(at)
            at = folded.find(needle, at + 1)
    at = text.find("://")
    while at != -1:
        starts.append(at + 3)
        at = text.find("://", at + 1)
    if not starts:
        return text
    pieces, end = [], 0
    for start in sorted(starts):
        if start < end:
            continue
        match = _CREDENTIAL_IN_PROSE.match(text, start)
        if match is not None:
            pieces += (text[end:start], REDACTED)
            end = match.end()
    return "".join(pieces) + text[end:] if pieces else text


def _secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def redact(value: object, _name: str = "") -> object:
    """A copy of a config value without secrets (see the module docstring)."""
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            name = str(key)
            if _secret_name(name):
                is_count = isinstance(item, (int, float)) and not isinstance(item, bool)
                if not (
                    is_count and _TOKEN_COUNT_NAME.search(name) and not _secret_name(_TOKEN_COUNT_NAME.sub("", name))
                ):
                    continue
            if isinstance(item, str) and looks_like_credential(item):
                continue
            kept[name] = redact(item, name)
        return kept
    if isinstance(value, (list, tuple)):
        return [REDACTED if isinstance(item, str) and looks_like_credential(item) else redact(item) for item in value]
    if isinstance(value, str) and looks_like_credential(value):
        return REDACTED
    return value


# -- 3a. the endpoint key spelt out ------------------------------------------------------------

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


# -- 3b. the endpoint key in streams -----------------------------------------------------------

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
