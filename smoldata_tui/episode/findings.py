"""Every finding of an episode that does not come from its stream: its configuration (the sidecar
files: ``run.meta.json``'s config, ``run.requests.jsonl`` or opencode_env's proxy trace), openenv's
validation of its ``run.training.json``, and what the capture itself said (``run.meta.json``'s
``capture`` record).

The one place these are gathered: ``check`` and the fleet (``fleet/work.py``), the viewer (the
trace follower, once the trace is read) and the headless final line all add exactly this to the
stream's own findings, so each shows the same kinds and counts for the same episode.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping

from smoldata_tui.episode.trace_rules import TraceRules, trace_rule_findings
from smoldata_tui.store.metadata import TRAINING_SUFFIX, EpisodeMetadata, sibling_path
from smoldata_tui.trace.finding import Finding
from smoldata_tui.training.capture_findings import capture_findings
from smoldata_tui.training.config_findings import sidecar_findings
from smoldata_tui.training.ledger import ledger_findings
from smoldata_tui.training.requests import REQUESTS_SUFFIX, read_requests
from smoldata_tui.training.validation import training_findings

# findings of a line the analysis could not read as one event: calls on it are not in its counts
_UNCOUNTED_LINES = frozenset({"malformed_line", "truncated_line", "wrapper_split", "undecodable", "wrapper_crash"})


def _absent(path: str) -> bool:
    """Whether no file is at ``path`` (what its readers take for "none": any other error they say)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def tools_called(stream_findings: Iterable[Finding], calls_by_tool: Mapping[str, int]) -> Collection[str] | None:
    """The tools the analysis counted calls of, when that count covers every line of the trace."""
    if any(finding.kind in _UNCOUNTED_LINES for finding in stream_findings):
        return None
    return calls_by_tool


def episode_findings(trace_path: str | os.PathLike[str], stream_findings: list[Finding],
                     calls_by_tool: Mapping[str, int], metadata: EpisodeMetadata | None,
                     rules: TraceRules | None = None) -> list[Finding]:  # fmt: skip
    """The findings to add to the stream's (``stream_findings``, ``calls_by_tool`` from its
    analysis) for the episode whose trace is ``trace_path`` and metadata ``metadata``; ``rules``:
    the trace rules, when that analysis fed them (else they read the trace themselves)."""
    path = os.fspath(trace_path)
    found = sidecar_findings(path, metadata=metadata, tools_called=tools_called(stream_findings, calls_by_tool))
    training = not _absent(sibling_path(path, TRAINING_SUFFIX))  # one stat, not a failed open for each reader
    if training:
        found += training_findings(path)
    found += trace_rule_findings(path, metadata, rules)  # integrity and the budget forecast
    if training:
        found += ledger_findings(path, metadata)
    if metadata is not None and metadata.capture:
        found += capture_findings(metadata, lambda: read_requests(sibling_path(path, REQUESTS_SUFFIX)))
    return found
