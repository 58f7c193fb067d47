"""Reading ``run.meta.json``, whoever wrote it: tolerant of missing, unknown and mistyped
fields, refusing only what is not an episode metadata file (or a newer major version of one),
and naming each problem in one sentence. The format is documented in
:mod:`smoldata_tui.store.metadata`. Pure: no Textual, no network."""

from __future__ import annotations

import json
import os

import orjson

from smoldata_tui.masking import redact, redact_text
from smoldata_tui.store.metadata import (
    FORMAT,
    SCHEMA_VERSION,
    STATUSES,
    EpisodeMetadata,
    Grade,
    lock_path_for,
    redacted_error,
)
from smoldata_tui.trace.numbers import counted, describe
from smoldata_tui.trace.reader import read_at_most

MAX_METADATA_BYTES = 4 << 20  # a metadata file is small; anything bigger is not one


class _Reader:
    """Takes fields out of the decoded JSON, noting every one of the wrong type."""

    def __init__(self, data: dict, problems: list[str]) -> None:
        self.data = data
        self.problems = problems

    def text(self, name: str, source: dict | None = None) -> str | None:
        value = (self.data if source is None else source).get(name)
        if value is None or isinstance(value, str):
            return value
        self.problems.append(f"{name} should be a string, not {type(value).__name__}: ignored")
        return None

    def number(self, name: str, source: dict | None = None, *, label: str | None = None) -> float | None:
        value = (self.data if source is None else source).get(name)
        if value is None:
            return None
        if counted(value):  # finite and within ±2**53, as the trace's numbers (trace/numbers.py)
            return value
        shown = describe(value) if isinstance(value, (int, float)) else repr(value)
        self.problems.append(f"{label or name} should be a finite number within ±2^53, not {shown}: ignored")
        return None

    def integer(self, name: str) -> int | None:
        value = self.number(name)
        if value is None:
            return None
        if float(value).is_integer():
            return int(value)
        self.problems.append(f"{name} should be a whole number, not {value!r}: ignored")
        return None


def _grade(reader: _Reader) -> Grade | None:
    raw = reader.data.get("grade")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        reader.problems.append(f"grade should be an object, not {type(raw).__name__}: ignored")
        return None
    output, error = reader.text("grader_output", raw), reader.text("grader_error", raw)
    return Grade(
        env_reward=reader.number("env_reward", raw),
        correctness=reader.number("correctness", raw),
        grader_output=redact_text(output) if output is not None else None,
        grader_error=redact_text(error) if error is not None else None,
    )


def _timings(reader: _Reader) -> dict[str, float]:
    raw = reader.data.get("timings")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        reader.problems.append(f"timings should be an object, not {type(raw).__name__}: ignored")
        return {}
    timings = {}
    for stage in raw:
        seconds = reader.number(stage, raw, label=f"timings.{stage}")
        if seconds is not None:
            timings[str(stage)] = seconds
    return timings


def metadata_from_json(data: object, problems: list[str]) -> EpisodeMetadata | None:
    """Build the metadata from decoded JSON; what cannot be used is described in ``problems``."""
    if not isinstance(data, dict):
        problems.append(f"expected a JSON object, found {type(data).__name__}")
        return None
    if data.get("format") not in (None, FORMAT):
        problems.append(f"format is {data.get('format')!r}, not {FORMAT!r}")
        return None
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        problems.append(f"schema_version {version!r} is not a number; reading it as version {SCHEMA_VERSION}")
        version = SCHEMA_VERSION
    elif version > SCHEMA_VERSION:
        problems.append(
            f"schema_version {version} is newer than this smoldata-tui reads ({SCHEMA_VERSION}); upgrade it"
        )
        return None
    reader = _Reader(data, problems)
    status = reader.text("status")
    if status is not None and status not in STATUSES:
        problems.append(f"status {status!r} is not one of {', '.join(STATUSES)}")
    return EpisodeMetadata(
        task=reader.text("task"),
        backend=reader.text("backend"),
        model=reader.text("model"),
        harness=reader.text("harness"),
        opencode_version=reader.text("opencode_version"),
        started_at=reader.text("started_at"),
        finished_at=reader.text("finished_at"),
        status=status,
        exit_code=reader.integer("exit_code"),
        grade=_grade(reader),
        timings=_timings(reader),
        config=_object(data, "config", problems),
        trace=reader.text("trace"),
        recovered_calls=_objects(data, "recovered_calls", problems),
        cancelled_calls=_objects(data, "cancelled_calls", problems),
        sandbox=_object(data, "sandbox", problems),
        proxy_trace=reader.text("proxy_trace"),
        error=_read_error(data, problems),
        stop_reason=reader.text("stop_reason"),
        owner=_object(data, "owner", problems),
        caps_hit=_objects(data, "caps_hit", problems),
        capture=_object(data, "capture", problems),
        prompt=reader.text("prompt"),
        fork=_object(data, "fork", problems) or None,
        schema_version=version,
    )


def _read_error(data: dict, problems: list[str]) -> dict | None:
    raw = data.get("error")
    if raw is not None and not isinstance(raw, dict):
        problems.append(f"error should be an object, not {type(raw).__name__}: ignored")
        return None
    return redacted_error(raw)



def _object(data: dict, name: str, problems: list[str]) -> dict:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{name} should be an object, not {type(value).__name__}: ignored")
        return {}
    return redact(value)


def _objects(data: dict, name: str, problems: list[str]) -> list[dict]:
    items = data.get(name)
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        problems.append(f"{name} should be a list of objects: ignored")
        return []
    return items


def load_metadata(path: str | os.PathLike[str], problems: list[str] | None = None) -> EpisodeMetadata | None:
    """Read a metadata file; None when it is absent or unusable.

    Never raises for a bad file: each reason the file (or a field of it) could not be used is
    appended to ``problems`` as one sentence, for the caller to show.
    """
    notes: list[str] = []
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            data = read_at_most(handle, MAX_METADATA_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        notes.append(f"cannot read it: {exc.strerror or exc}")
        data = None
    metadata = None
    if data is not None:
        if len(data) > MAX_METADATA_BYTES:
            notes.append(f"it is larger than {MAX_METADATA_BYTES >> 20} MB, so it is not an episode metadata file")
        else:
            try:
                decoded = _decode_json(data)
            except UnicodeDecodeError:
                notes.append("it is not UTF-8 text")
            except ValueError as exc:  # json.JSONDecodeError, RecursionError is not expected here
                notes.append(f"it is not valid JSON ({exc})")
            else:
                metadata = metadata_from_json(decoded, notes)
                if metadata is not None:
                    metadata.lock_path = lock_path_for(path)  # whether a running owner lives
    if problems is not None:
        problems.extend(f"{os.path.basename(path)}: {note}" for note in notes)
    return metadata


def _decode_json(data: bytes) -> object:
    """``json.loads(data.decode("utf-8"))``, by orjson where the two agree.

    orjson refuses NaN, lone surrogates and a BOM, which json reads (or reports in its own
    words): those go to json. It reads an integer past 64 bits as a float where json keeps it
    whole, so a document with a 19-digit run goes to json too. What is left, both read alike.
    """
    if _DIGIT_RUN not in data.translate(_DIGITS_AS_ONES):  # no 19-digit run; two passes in C, not a regex
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data.decode("utf-8"))


_DIGITS_AS_ONES = bytes(0x31 if 0x30 <= byte <= 0x39 else 0x30 for byte in range(256))  # digit -> "1", else "0"
_DIGIT_RUN = b"1" * 19
