"""openenv's verdict on a ``run.training.json``: what the viewer's Training tab and ``check`` say.

:func:`read_training_document` reads the file (size-capped, JSON); :func:`validate_training` runs
openenv's own checks on it — the ``TrainingTrace`` model, then ``capture.validate.check_turn`` on
every turn — so a failure reads exactly as openenv would report it. openenv (about a second
to import) is imported inside the function; without it the answer is None (unvalidated).
:func:`training_findings` turns the problems into ``check`` findings.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.text import clip
from smoldata_tui.store.metadata import sibling_path
from smoldata_tui.training.trace_file import TRAINING_SUFFIX, CaptureProblem, read_training_document

__all__ = ["CaptureProblem", "document_problems", "training_findings", "validate_training"]
SEVERITY = {"FATAL": Severity.ERROR, "WARN": Severity.WARNING, "INFO": Severity.INFO}


def as_list(value: object) -> list:
    return value if isinstance(value, list) else []


def as_dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def first_choice(response: object) -> dict:
    choices = as_dict(response).get("choices")
    return as_dict(choices[0]) if isinstance(choices, list) and choices else {}


def validate_training(document: dict) -> list[CaptureProblem] | None:
    """openenv's problems with a TrainingTrace document (``turns`` a list); None without openenv."""
    try:
        from pydantic import ValidationError

        from smoldata_tui.training.capture_policy import import_openenv

        check_turn = import_openenv("openenv.core.harness.capture.validate").check_turn
        TrainingTrace = import_openenv("openenv.core.harness.training").TrainingTrace
    except Exception:  # noqa: BLE001 - without openenv the file stays unvalidated
        return None
    problems: list[CaptureProblem] = []
    try:
        TrainingTrace.model_validate(document)
    except ValidationError as exc:
        for error in exc.errors()[:50]:
            location = error.get("loc") or ()
            turn = location[1] if len(location) > 1 and location[0] == "turns" and isinstance(location[1], int) else None
            where = ".".join(str(part) for part in location)
            problems.append(CaptureProblem("FATAL", "schema", f"{where}: {error.get('msg')}".strip(": "), turn))
    for index, turn in enumerate(as_list(document.get("turns"))):
        turn = as_dict(turn)
        finish = first_choice(turn.get("response")).get("finish_reason")
        logps = turn.get("per_token_logps")
        try:
            report = check_turn(as_list(turn.get("prompt_token_ids")), as_list(turn.get("completion_token_ids")),
                                logps if isinstance(logps, list) else None,
                                finish_reason=finish if isinstance(finish, str) else None, index=index + 1)  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - a value check_turn cannot compare is itself the finding
            problems.append(CaptureProblem("FATAL", "unreadable_turn", f"{type(exc).__name__}: {exc}", index))
            continue
        for finding in report.findings:
            if finding.level == "FATAL" and _already_said(problems, index):
                continue  # the model's error above names the same field
            problems.append(CaptureProblem(finding.level, finding.code, finding.detail, index))
    return problems


def _already_said(problems: Iterable[CaptureProblem], turn: int) -> bool:
    return any(problem.turn == turn and problem.code == "schema" for problem in problems)


def document_problems(document: Any) -> tuple[list[CaptureProblem], bool]:
    """(problems, validated by openenv) for a parsed file: one FATAL when it is no TrainingTrace."""
    if not isinstance(document, dict) or not isinstance(document.get("turns"), list):
        return [CaptureProblem("FATAL", "not_a_training_trace", "no \"turns\" list: not openenv's TrainingTrace")], False
    problems = validate_training(document)
    return (problems or []), problems is not None


def training_findings(trace_path: str | os.PathLike[str]) -> list[Finding]:
    """``check``'s findings for the ``run.training.json`` beside ``trace_path`` ([] without one):
    kind ``capture_validation``, severity from openenv's level (FATAL error, WARN warning, INFO info)."""
    # a string, not training_path_for's Path: check asks this of every trace in a fleet
    path = sibling_path(trace_path, TRAINING_SUFFIX)
    read = read_training_document(path)
    if read is None:
        return []
    document, broken = read
    problems = [broken] if broken is not None else document_problems(document)[0]
    return [Finding("capture_validation", SEVERITY.get(problem.level, Severity.WARNING), None, None,
                    f"{os.path.basename(path)}" + (f" turn {problem.turn + 1}" if problem.turn is not None else "")
                    + f": [{problem.level}] {problem.code}: {clip(problem.detail, 300)}")
            for problem in problems]  # fmt: skip
