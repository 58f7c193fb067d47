"""What differs between two episodes only because they ran in different sandboxes, removed.

A call is keyed on its tool and its *normalised* input; the outputs of two paired calls are
compared normalised too. The rules (docs/diff.md lists them with examples) are applied to the
value's JSON text; a placeholder replaces what they match:

In inputs and outputs (``SANDBOX_RULES``):

* OpenCode ids ``ses_``/``msg_``/``prt_``/``tool_`` + 12 hex digits + 14 base-62 characters → ``ses_*`` …;
* provider call ids ``call_…`` / ``toolu_…`` (16 or more characters, at least one digit) → ``call_*``;
* names made by ``mktemp`` (``/tmp/tmp.XXXXXXXXXX``) or Python's ``tempfile`` (``/tmp/tmpXXXXXXXX``),
  also under ``/var/tmp`` → ``/tmp/tmp*``;
* the sandbox's own names: a local sandbox ``sbx-`` + 12 hex, a Daytona sandbox ``smoldata-`` + 12
  to 16 hex (and the Daytona shell's ``smoldata-err-…`` files) → ``sbx-*``, ``smoldata-*``;
* a saved run's folder stamp ``YYYYMMDD-HHMMSS-`` (``runs/20260101-120000-task``) → ``<run>-``.

In outputs only (``TIME_RULES``; a model that types a date means it):

* ISO 8601 date-times with a time part (``2026-01-01T12:00:00Z``, ``2026-01-01 12:00:00.123``) → ``<time>``;
* ``ls -l`` times (``Jan  1 12:00``) → ``<time>``;
* 13-digit epoch milliseconds (years 2001–2286) → ``<ms>``.

A match that starts with a letter or digit must start a word (``recall_…`` is not a call id).
Dict keys are kept, and sorted when fingerprinting, so the order a model wrote its arguments in
does not matter. Numbers, booleans and null are kept. The call's own callID, its part and message
ids, event timestamps and ``state.time`` are never compared (see ``calls``).

Each rule has literal *triggers*: a string that holds none of them is not scanned, so the cost
stays near a substring search for the usual command or output.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

import orjson


@dataclass(frozen=True, slots=True)
class Rule:
    triggers: tuple[str, ...]  # the text must contain one of these for the rule to apply
    pattern: re.Pattern[str]  # starts with a literal where it can: the regex engine then skips fast
    replacement: str

    def apply(self, text: str) -> str:
        for trigger in self.triggers:  # a plain loop: any() over a generator costs more, per call
            if trigger in text:
                break
        else:
            return text

        def replace(match: re.Match[str]) -> str:
            start = match.start()
            if start and _word(text[start]) and _word(text[start - 1]):
                return match.group()  # inside a longer word: not one of ours
            return match.expand(self.replacement)

        return self.pattern.sub(replace, text)


def _word(character: str) -> bool:
    return character.isalnum() or character == "_"


def _rule(triggers: tuple[str, ...], pattern: str, replacement: str) -> Rule:
    return Rule(triggers, re.compile(pattern), replacement)


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

SANDBOX_RULES = (
    _rule(("ses_", "msg_", "prt_", "tool_"), r"(ses|msg|prt|tool)_[0-9a-f]{12}[0-9A-Za-z]{14}(?![0-9A-Za-z])", r"\1_*"),
    _rule(("call_", "toolu_"), r"(call|toolu)_(?=[0-9A-Za-z_-]*[0-9])[0-9A-Za-z_-]{16,}", r"\1_*"),
    _rule(("/tmp/tmp",), r"/tmp/tmp(?:\.[0-9A-Za-z]{6,}|[0-9a-z_]{8})(?![0-9A-Za-z_])", "/tmp/tmp*"),
    _rule(("sbx-",), r"sbx-[0-9a-f]{12}(?![0-9A-Za-z])", "sbx-*"),
    _rule(("smoldata-",), r"smoldata-(?:err-)?[0-9a-f]{12,16}(?![0-9A-Za-z])", "smoldata-*"),
    _rule(("-",), r"20[0-9]{6}-[0-9]{6}-", "<run>-"),
)
TIME_RULES = (
    _rule(
        (":",),
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?",
        "<time>",
    ),
    _rule((":",), r"(?:" + "|".join(_MONTHS) + r") [ 0-9][0-9] [0-9]{2}:[0-9]{2}(?![0-9])", "<time>"),
    _rule(tuple("123456789"), r"[1-9][0-9]{12}(?![0-9])", "<ms>"),
)
OUTPUT_RULES = SANDBOX_RULES + TIME_RULES


def normalize_text(text: str, rules: tuple[Rule, ...] = SANDBOX_RULES) -> str:
    """One string with every sandbox-only difference replaced by its placeholder."""
    for rule in rules:
        text = rule.apply(text)
    return text


def _json_bytes(value: object) -> bytes:
    """The value as compact UTF-8 JSON with sorted keys."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):  # ints beyond 64 bits, nesting beyond orjson's limit
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
        except (ValueError, RecursionError):
            return b"(nested too deeply to compare)"
        return text.encode("utf-8", "surrogatepass")


def canonical_text(value: object, rules: tuple[Rule, ...] | None = SANDBOX_RULES) -> str:
    """The value as compact JSON with sorted keys, normalised unless ``rules`` is None.

    The rules run once over the JSON text rather than string by string: what they match (ids,
    paths, stamps, times) is made of characters JSON never escapes, and it is one pass.
    """
    text = _json_bytes(value).decode("utf-8", "surrogatepass")
    return text if rules is None else normalize_text(text, rules)


def fingerprint(value: object, rules: tuple[Rule, ...] | None = SANDBOX_RULES) -> bytes:
    """16 bytes that stand for the (normalised) value: kept per call instead of the value."""
    if rules is None:  # the JSON bytes as they are: no round trip through str
        data = _json_bytes(value)
    else:
        data = canonical_text(value, rules).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()
