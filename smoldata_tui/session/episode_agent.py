"""The agent's two stages of an episode, once its sandbox is ready: "agent running" (the agent's
log followed into the trace until the agent ends, or is stopped at a cancel or the deadline)
and "recover calls" (what it left: calls it cut short, opencode_env's proxy trace). The
:class:`~smoldata_tui.session.episode.Episode` starts the agent and calls these."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from smoldata_tui.sandbox.errors import FileTooLarge
from smoldata_tui.session.episode_spec import EpisodeResult
from smoldata_tui.session.export import (
    ExportTooLarge,
    export_session,
    first_session_id,
    unfinished_calls,
)
from smoldata_tui.session.log_follower import LogFollower
from smoldata_tui.store.metadata import PROXY_TRACE_NAME
from smoldata_tui.opencode.config import agent_environment
from smoldata_tui.session.placement import HOME, OPENCODE_IN_HOME
from smoldata_tui.session.proxy_trace import summary_line, turn_of

POLL_S = 0.02  # how often the log is polled while the agent runs: a stat and a pidfd wait
CAPPED_POLL_S = 0.5  # once the log is capped only the agent's end is waited for


def follow_agent(sandbox, job, follower: LogFollower, result: EpisodeResult, say: Callable[[str], None], *,
                 cancel: threading.Event, deadline: Callable[[], float]) -> None:
    """Follow the agent's log until the agent ends, or stop it (TERM, then KILL) once ``cancel``
    is set or the monotonic time ``deadline()`` gives has passed (asked at every poll: the
    episode's deadline is its own to move); its exit code, status, the caps its log reached and
    what following it cost go into ``result``."""
    stopped_by_us = None
    try:
        while True:
            follower.poll()
            try:
                result.exit_code = job.wait(timeout=CAPPED_POLL_S if follower.capped else POLL_S)
                break
            except TimeoutError:
                pass
            if cancel.is_set():
                stopped_by_us = "cancelled"
            elif time.monotonic() > deadline():
                stopped_by_us = "timeout"
            if stopped_by_us:
                say(f"{stopped_by_us}: stopping the agent (TERM, then KILL)")
                interrupt = getattr(sandbox, "interrupt", None)
                if interrupt is not None:
                    interrupt.clear()  # from here on every remote call must complete
                job.kill()
                result.exit_code = job.wait(timeout=30)
                break
        follower.poll(final=True)  # what it wrote before it ended
    finally:
        follower.close()
        if follower.capped:
            seen = follower.remote_size() or follower.offset
            result.metadata.caps_hit.append({"cap": "agent_log", "limit": follower.limit, "seen": seen})
            say(f"the agent's log reached the {follower.limit}-byte trace cap ({seen} bytes in the sandbox): "
                "the rest was not read")  # fmt: skip
        if hasattr(sandbox, "wire_bytes"):
            result.metadata.sandbox["transfer"] = {"log_bytes": follower.offset, "wire_bytes": sandbox.wire_bytes}
    if stopped_by_us:
        result.status = stopped_by_us
    elif result.exit_code is not None and result.exit_code >= 128:
        result.status = "killed"
    else:
        result.status = "finished"
    say(f"agent ended: {result.status}, exit code {result.exit_code}, {follower.offset} bytes of log")


def recover_calls(result: EpisodeResult, say: Callable[[str], None], *, session, sandbox, opencode: str,
                  scrub: Callable[[str], str]) -> None:
    """What the agent left: opencode_env's proxy trace (with ``session``), then the calls it cut
    short, from ``opencode export`` (``opencode`` names the binary as the agent command did)."""
    if session is not None:
        save_proxy_trace(session, result, say, scrub)
    if result.status == "finished" and result.exit_code == 0:
        # `opencode run` ends on its own only once every call has an answer: nothing was cut
        # short, and asking the export (a start of OpenCode, ~2 s of CPU) would find nothing.
        say("the agent ended on its own (exit code 0): no call was cut short")
        return
    session_id = first_session_id(result.trace_path)
    if session_id is None:
        say("no sessionID in the log: nothing to recover")
        return
    try:
        export = export_session(sandbox, opencode_binary(opencode), session_id, agent_environment(HOME), scrub=scrub,
                                report=say)  # fmt: skip
    except ExportTooLarge as exc:
        result.metadata.caps_hit.append({"cap": "opencode_export", "limit": exc.limit, "seen": exc.seen})
        say(f"{exc}: unfinished calls not recovered")
        return
    if export is None:
        say("opencode export failed: unfinished calls cannot be recovered")
        return
    result.recovered = unfinished_calls(export)
    say(f"{len(result.recovered)} unfinished call(s) recovered from opencode export")


def opencode_binary(opencode: str) -> str:
    """The OpenCode a command other than the agent's runs: ``opencode`` names it as the agent
    command did, where the bare name is the one placed in the agent's home."""
    return OPENCODE_IN_HOME if opencode == "opencode" else opencode


def save_proxy_trace(session, result: EpisodeResult, say: Callable[[str], None], scrub: Callable[[str], str]) -> None:
    """opencode_env's per-turn proxy records, beside the trace (secrets masked)."""
    try:
        records = session.fetch_proxy_trace()
    except FileTooLarge as exc:  # the agent can write that file
        result.metadata.caps_hit.append({"cap": "proxy_trace", "limit": exc.limit, "seen": exc.size})
        say(f"proxy trace not saved: {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - the episode stands without it
        say(f"proxy trace unreadable: {type(exc).__name__}: {exc}")
        return
    if not records:
        say("no proxy trace")
        return
    path = result.trace_path.with_name(PROXY_TRACE_NAME)
    lines = (scrub(json.dumps(record, ensure_ascii=False, default=str)) for record in records)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result.metadata.proxy_trace = path.name
    say(summary_line([turn_of(record) for record in records if isinstance(record, dict)]))
