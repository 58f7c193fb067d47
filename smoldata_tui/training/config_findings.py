"""Findings about the environment's configuration, from an episode's sidecars.

A trace says what the agent did; its sidecars say what it was offered and under which policy:
``run.meta.json`` (``config``: the ``opencode.json`` the agent ran with, or opencode_env's
``OpenCodeConfig``; ``capture``; ``sandbox.opencode_version``) and ``run.requests.jsonl`` (what
each model call asked for: :mod:`requests`), or for ``--harness opencode-env`` the requests in
opencode_env's proxy trace. From them:

* ``disabled_tool_offered`` (warning): a tool the config disables was in a request's tool list.
  OpenCode 1.18.31 with ``"permission": {"*": "allow"}`` turns ``webfetch`` and ``task`` back on
  although ``tools`` switches them off — the environment's own configuration, so training has it.
* ``disabled_tool_called`` (error): the agent called such a tool (the trace's line).
* ``opencode_version_mismatch`` (warning): ``opencode --version`` inside the sandbox is not the
  version the episode asked for.
* ``opencode_version_drift`` (warning): the episode ran an OpenCode other than the environment's pin.
* ``offered_tools_drift`` (warning): the tools offered to the model (every request with tools) are
  not those its version offers with the environment's configuration (``opencode/tools.py``).
* ``output_cap_missing`` / ``thinking_enabled`` (warning): a tool-bearing request reached the model
  without training's policy (``max_tokens`` ≤ 4096, ``enable_thinking`` false): ``--no-capture``,
  or an episode recorded elsewhere. Without a requests file, an episode the built-in driver ran
  without the capture proxy is reported from its metadata.

Line and event are None except for ``disabled_tool_called`` (its line). Pure but for reading the
sidecars; no Textual, no openenv.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

import orjson

from smoldata_tui.store.metadata import METADATA_SUFFIX, EpisodeMetadata, sibling_path
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.opencode.install import DEFAULT_OPENCODE_VERSION
from smoldata_tui.opencode.tools import offered_tools
from smoldata_tui.training.trace_shape import offered_tool_names
from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.text import clip
from smoldata_tui.training.requests import REQUESTS_SUFFIX, TRAINING_OUTPUT_CAP, read_requests, request_summary

MAX_TRACE_SCAN_BYTES = 256 << 20


def disabled_tools(config: dict) -> list[str]:
    """The tools a config switches off: opencode.json's ``tools: {name: false}`` or
    opencode_env's ``disabled_tools``."""
    names = [name for name, on in (config.get("tools") or {}).items() if on is False] if isinstance(config.get("tools"), dict) else []
    listed = config.get("disabled_tools")
    if isinstance(listed, list):
        names += [name for name in listed if isinstance(name, str) and name not in names]
    return names


def _permission_note(config: dict) -> str:
    permission = config.get("permission")
    if permission is None:
        permission = (config.get("extra_opencode_json") or {}).get("permission") if isinstance(config.get("extra_opencode_json"), dict) else None
    if isinstance(permission, dict) and permission.get("*") == "allow":
        return ' (OpenCode 1.18.31 re-enables them under "permission": {"*": "allow"})'
    return ""


def _offered(config: dict, requests: list[dict], disabled: list[str]) -> list[Finding]:
    offered: dict[str, list[int]] = {}
    for number, request in enumerate(requests, 1):
        for name in request.get("tools") or []:
            if name in disabled:
                offered.setdefault(name, []).append(number)
    if not offered:
        return []
    names = sorted(offered)
    first = min(numbers[0] for numbers in offered.values())
    with_tools = sum(1 for request in requests if request.get("tools"))
    message = (
        f"disabled tool{'s' if len(names) > 1 else ''} {', '.join(names)} offered to the model: "
        f"in {max(len(v) for v in offered.values())} of {with_tools} requests with tools, first in request {first}"
        + _permission_note(config)
    )
    return [Finding("disabled_tool_offered", Severity.WARNING, None, None, message)]


def _called(trace_path: str, disabled: list[str]) -> list[Finding]:
    found = []
    try:
        with open(trace_path, "rb") as handle:
            data = handle.read(MAX_TRACE_SCAN_BYTES)
    except OSError:
        return []
    for number, line in enumerate(data.split(b"\n"), 1):
        if b'"tool_use"' not in line:
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        part = event.get("part") if isinstance(event, dict) else None
        tool = part.get("tool") if isinstance(part, dict) else None
        if event.get("type") == "tool_use" and tool in disabled:
            found.append(Finding("disabled_tool_called", Severity.ERROR, number, None,
                                 f"the agent called {tool}, which the config disables"))  # fmt: skip
    return found


def _policy(requests: list[dict]) -> list[Finding]:
    uncapped, thinking = [], []
    for number, request in enumerate(requests, 1):
        if not request.get("tools"):
            continue
        caps = [value for value in (request.get("max_tokens"), request.get("max_completion_tokens")) if value is not None]
        if not caps or any(not isinstance(v, int) or v > TRAINING_OUTPUT_CAP for v in caps):
            uncapped.append((number, caps))
        if request.get("enable_thinking") is not False:
            thinking.append(number)
    findings = []
    if uncapped:
        number, caps = uncapped[0]
        asked = f"max_tokens {caps[0]}" if caps else "no max_tokens"
        findings.append(Finding("output_cap_missing", Severity.WARNING, None, None,
                                f"{len(uncapped)} request(s) with tools reached the model without training's output cap "
                                f"({TRAINING_OUTPUT_CAP}): request {number} asked for {asked}"))  # fmt: skip
    if thinking:
        findings.append(Finding("thinking_enabled", Severity.WARNING, None, None,
                                f"{len(thinking)} request(s) with tools reached the model without enable_thinking false "
                                f"(training disables thinking), first request {thinking[0]}"))  # fmt: skip
    return findings


def _policy_from_metadata(metadata: EpisodeMetadata) -> list[Finding]:
    """No requests: what the configuration says about the policy, when it says anything."""
    config, capture = metadata.config, metadata.capture
    if metadata.harness == "opencode-env":  # opencode_env's own proxy applies its configured policy
        cap, thinking_off = config.get("proxy_max_tokens_cap"), config.get("proxy_disable_thinking")
        uncapped = not isinstance(cap, int) or cap > TRAINING_OUTPUT_CAP
        why = "opencode_env's proxy was configured"
        return ([Finding("output_cap_missing", Severity.WARNING, None, None,
                         f"{why} with proxy_max_tokens_cap {cap}, not ≤ {TRAINING_OUTPUT_CAP}")] if uncapped else []) + (
            [] if thinking_off is True else
            [Finding("thinking_enabled", Severity.WARNING, None, None, f"{why} without proxy_disable_thinking")])  # fmt: skip
    if not config.get("provider") or (capture and capture.get("enabled") is not False):
        return []
    why = "ran without the capture proxy (--no-capture)" if capture else "was recorded without the capture proxy"
    return [
        Finding("output_cap_missing", Severity.WARNING, None, None,
                f"the episode {why}: nothing capped its requests' max_tokens at {TRAINING_OUTPUT_CAP}"),
        Finding("thinking_enabled", Severity.WARNING, None, None,
                f"the episode {why}: nothing disabled thinking on its requests"),
    ]  # fmt: skip


def _proxy_requests(trace_path: str, metadata: EpisodeMetadata | None, problems: list[str] | None) -> list[dict] | None:
    """opencode_env's proxy trace (``--harness opencode-env``) holds each forwarded request whole."""
    if metadata is None or not metadata.proxy_trace:
        return None
    records = read_requests(os.path.join(os.path.dirname(trace_path), Path(metadata.proxy_trace).name), problems)
    if records is None:
        return None
    return [request_summary(record["request"]) for record in records if isinstance(record.get("request"), dict)]


_UNREAD = object()


def sidecar_findings(
    trace_path: str | os.PathLike[str],
    problems: list[str] | None = None,
    *,
    metadata: object = _UNREAD,
    tools_called: Collection[str] | None = None,
) -> list[Finding]:
    """The configuration findings for the episode whose trace is ``trace_path``; [] without sidecars.

    ``metadata``: the episode's ``run.meta.json`` as the caller already loaded it (None: absent),
    so a fleet reads it once per episode. ``tools_called``: the tools the trace's analysis counted
    calls of (its ``calls_by_tool``); when none of them is disabled, the trace is not read again to
    find the lines of such calls (every saved episode's config disables some tools).
    """
    trace_path = os.fspath(trace_path)
    if metadata is _UNREAD:
        metadata = load_metadata(sibling_path(trace_path, METADATA_SUFFIX), problems)
    requests = read_requests(sibling_path(trace_path, REQUESTS_SUFFIX), problems)
    if requests is None:
        requests = _proxy_requests(trace_path, metadata, problems)
    findings: list[Finding] = []
    config = metadata.config if metadata is not None else {}
    disabled = disabled_tools(config)
    if disabled:
        if requests:
            findings += _offered(config, requests, disabled)
        if tools_called is None or any(name in tools_called for name in disabled):
            findings += _called(trace_path, disabled)
    if requests:
        findings += _policy(requests)
    elif metadata is not None:
        findings += _policy_from_metadata(metadata)
    if metadata is not None:
        findings += _version_findings(metadata)
        findings += _offered_tools_drift(metadata, requests)
    return findings


def _version_ran(metadata: EpisodeMetadata) -> str | None:
    """The OpenCode the episode ran: what ``--version`` said in the sandbox, else what was asked for."""
    seen = (metadata.sandbox or {}).get("opencode_version")
    if isinstance(seen, str) and seen.strip():
        return seen.strip()
    return metadata.opencode_version.strip() if isinstance(metadata.opencode_version, str) and metadata.opencode_version.strip() else None


def _version_findings(metadata: EpisodeMetadata) -> list[Finding]:
    """One finding about the version, at most: the sandbox ran another OpenCode than the episode
    asked for (mismatch), else the episode asked for a version other than the environment's pin (drift)."""
    seen = (metadata.sandbox or {}).get("opencode_version")
    asked = metadata.opencode_version
    if isinstance(seen, str) and asked and seen.strip() != asked:
        why = "pinned" if asked == DEFAULT_OPENCODE_VERSION else "requested"
        pin = "" if asked == DEFAULT_OPENCODE_VERSION else f" (the environment pins {DEFAULT_OPENCODE_VERSION})"
        return [Finding("opencode_version_mismatch", Severity.WARNING, None, None,
                        f"the sandbox ran OpenCode {seen.strip() or '(unknown)'}, not the {why} {asked}{pin}")]  # fmt: skip
    ran = _version_ran(metadata)
    if ran is not None and ran != DEFAULT_OPENCODE_VERSION:
        return [Finding("opencode_version_drift", Severity.WARNING, None, None,
                        f"recorded with OpenCode {ran}; the environment pins {DEFAULT_OPENCODE_VERSION}: what the model "
                        "was offered and what the trace holds may differ from training's (smoldata-tui opencode compare)")]  # fmt: skip
    return []


def _offered_tools_drift(metadata: EpisodeMetadata, requests: list[dict] | None) -> list[Finding]:
    """The tools offered (every request with tools) are not those the version offers under the
    environment's configuration (measured: opencode/tools.py)."""
    ran = _version_ran(metadata)
    expected = offered_tools(ran)
    offered = set(offered_tool_names(requests or []))
    if expected is None or not offered:
        return []
    extra, missing = sorted(offered - expected), sorted(expected - offered)
    if not extra and not missing:
        return []
    said = "; ".join(part for part in (f"offered {', '.join(extra)} besides" if extra else "",
                                       f"not offered {', '.join(missing)}" if missing else "") if part)  # fmt: skip
    return [Finding("offered_tools_drift", Severity.WARNING, None, None,
                    clip(f"the model's tools differ from what OpenCode {ran} offers with the environment's "
                         f"configuration: {said}", 600))]  # fmt: skip
