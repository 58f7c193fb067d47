"""What the capture itself said about an episode, as findings: ``run.meta.json``'s ``capture``
record holds openenv's probe (the endpoint's capture level, the parameters it refused and how
they were rewritten, what the probe noticed) and its export's validation (e.g. ``multiple_roots``).

Kinds: ``capture_failed`` (error: the proxy could not start, the episode ended in error),
``capture_not_trainable`` (warning: the endpoint returns no token ids), ``capture_probe`` and
``capture_param_fix`` (warning: openenv's probe; a rewritten parameter changes the sampling),
``capture_export`` (openenv's export validation, its severity from its level: FATAL error, WARN
warning, INFO info). One exception: ``multiple_roots`` whose extra roots are OpenCode's own side
requests (its session title: a request that offers no tools, in ``run.requests.jsonl``) is info,
since every honest run has them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.text import clip
from smoldata_tui.training.validation import SEVERITY

_LEVEL = re.compile(r"^\[(FATAL|WARN|INFO)\]\s*(\w+)?")
_ROOTS = re.compile(r"(\d+) roots")
MAX_ITEMS = 20  # of each list: a hostile sandbox may write many


def _texts(value: object) -> list[str]:
    return [item for item in value[:MAX_ITEMS] if isinstance(item, str)] if isinstance(value, list) else []


def capture_findings(metadata: EpisodeMetadata | None,
                     requests: Callable[[], list[dict] | None] = lambda: None) -> list[Finding]:  # fmt: skip
    """The capture record's findings ([] without a record, or with --no-capture). ``requests``
    gives ``run.requests.jsonl``'s summaries (read only for a ``multiple_roots``), to tell
    OpenCode's side requests from the agent's."""
    record = metadata.capture if metadata is not None else None
    if not isinstance(record, dict) or not record or record.get("enabled") is False:
        return []
    found: list[Finding] = []

    def add(kind: str, severity: Severity, message: str) -> None:
        found.append(Finding(kind, severity, None, None, clip(message, 500)))

    if isinstance(record.get("failed"), str):
        add("capture_failed", Severity.ERROR, f"the capture proxy could not start: {record['failed']}")
    level, why = record.get("level"), record.get("not_trainable_because")
    if isinstance(level, str) and level and level != "tokens":
        add("capture_not_trainable", Severity.WARNING, why if isinstance(why, str) and why else f"capture level {level}")
    for item in _texts(record.get("probe_findings")):
        add("capture_probe", Severity.WARNING, f"openenv's probe of the endpoint: {item}")
    for item in _texts(record.get("param_fixes")):
        add("capture_param_fix", Severity.WARNING, f"the endpoint refused a parameter, so requests were rewritten: {item}")
    for item in _texts(record.get("validation")):
        matched = _LEVEL.match(item)
        severity = SEVERITY.get(matched.group(1), Severity.WARNING) if matched else Severity.WARNING
        code = matched.group(2) if matched else None
        roots = _ROOTS.search(item)
        summaries = requests() if code == "multiple_roots" and roots else None
        side_requests = sum(1 for request in summaries or [] if isinstance(request, dict) and request.get("tools") == [])
        if summaries is not None and int(roots.group(1)) <= 1 + side_requests:
            severity = Severity.INFO
            item += f" (the extra roots are OpenCode's {side_requests} side request(s), which offer no tools: its session title)"
        add("capture_export", severity, f"openenv's export of the capture: {item}")
    return found
