"""`opencode export` output is agent-controlled (its session can be huge): at most the cap crosses
to the host, and a larger export is reported with its size, in a real bubblewrap sandbox."""

from __future__ import annotations

import pytest

from smoldata_tui.session.export import ExportTooLarge, export_session

from .test_sandbox_support import backend, base_dir, sandbox  # noqa: F401 - fixtures

FAKE = "/root/fake-opencode"


def _install_fake(sandbox, script: str) -> None:
    """Written by the sandbox's own shell: a file the host wrote could still be open in a process
    another thread of this test worker forks at that moment, and exec'ing it would then fail
    with "text file busy"."""
    sandbox.write_text("/root/fake.txt", script)
    done = sandbox.exec(f"cp /root/fake.txt {FAKE} && chmod 755 {FAKE}")
    assert done.exit_code == 0, done.stderr


def _fake_opencode(sandbox, size: int) -> int:
    """An `opencode` whose export is ``size`` NULs after a JSON head; returns the bytes it prints."""
    body = '{"messages": [], "pad": "' + "x" * 16 + '"}'
    _install_fake(sandbox, f"#!/bin/sh\nprintf '%s' '{body}'\nhead -c {size} /dev/zero\n")
    return len(body) + size


def test_an_export_over_the_cap_is_refused_with_its_size(sandbox):
    printed = _fake_opencode(sandbox, 3 << 20)
    with pytest.raises(ExportTooLarge) as raised:
        export_session(sandbox, FAKE, "ses_1", {}, max_bytes=1 << 20)
    assert raised.value.limit == 1 << 20 and raised.value.seen == printed


def test_an_export_under_the_cap_is_read(sandbox):
    _install_fake(sandbox, "#!/bin/sh\necho 'notice: migrating'\necho '{\"messages\": []}'\n")
    problems: list[str] = []
    assert export_session(sandbox, FAKE, "ses_1", {}, max_bytes=1 << 20, report=problems.append) == {"messages": []}, problems


def test_an_agent_that_replaces_head_still_brings_no_more_than_the_exec_cap(sandbox):
    # The cap inside the sandbox is `head -c`, which an agent that can write to a folder early
    # on PATH (any folder, in a sandbox where it is root) can replace; what crosses to the host
    # is then bounded by what exec keeps, and the export is still refused with its size.
    from smoldata_tui.sandbox.protocol import MAX_CAPTURE

    mib = (MAX_CAPTURE >> 20) + 8
    _install_fake(sandbox, f"#!/bin/sh\ndd if=/dev/zero bs=1M count={mib} status=none\n")  # dd: head is the agent's below
    printed = mib << 20
    sandbox.write_text("/root/head.txt", '#!/bin/sh\nshift 2\nexec cat "$@"\n')  # `head -c N FILE`: all of FILE
    done = sandbox.exec("mkdir -p /root/bin && cp /root/head.txt /root/bin/head && chmod 755 /root/bin/head")
    assert done.exit_code == 0, done.stderr
    hostile_path = {"PATH": "/root/bin:/usr/local/bin:/usr/bin:/bin"}
    assert sandbox.exec("head -c 1 /etc/passwd | wc -c", envs=hostile_path).stdout.strip() != "1"  # really replaced
    with pytest.raises(ExportTooLarge) as raised:
        export_session(sandbox, FAKE, "ses_1", hostile_path, max_bytes=1 << 20)
    assert raised.value.limit == 1 << 20 and raised.value.seen == printed
    crossed = sandbox.exec(FAKE, envs=hostile_path).stdout  # the most that crosses: the cap, then a note
    assert crossed.startswith("\0" * MAX_CAPTURE + "\n[sandbox: 8388608 more bytes") and len(crossed) < MAX_CAPTURE + 100


def test_recovered_calls_from_a_hostile_export_keep_run_meta_json_readable(tmp_path):
    from smoldata_tui.session.export import MAX_RECOVERED, unfinished_calls
    from smoldata_tui.store.metadata import EpisodeMetadata, metadata_path_for
    from smoldata_tui.store.metadata_reader import load_metadata
    from smoldata_tui.store.metadata_writer import save_metadata

    running = {"type": "tool", "callID": "c" * 100_000, "tool": "bash",
               "state": {"status": "running", "input": {"command": "x" * 3_000_000}}}  # fmt: skip
    export = {"messages": [{"parts": [running] * 200}]}
    calls = unfinished_calls(export)
    assert len(calls) == MAX_RECOVERED
    assert len(calls[0].call_id) == 200 and "characters of JSON, clipped" in calls[0].input
    trace = tmp_path / "episode.jsonl"
    trace.write_text("")
    save_metadata(metadata_path_for(trace), EpisodeMetadata(recovered_calls=[call.to_json() for call in calls]))
    loaded = load_metadata(metadata_path_for(trace))
    assert loaded is not None and len(loaded.recovered_calls) == MAX_RECOVERED
    small = unfinished_calls({"messages": [{"parts": [{**running, "callID": "c1", "state": {"status": "running", "input": {"a": 1}}}]}]})
    assert small[0].input == {"a": 1} and small[0].call_id == "c1"  # small inputs are kept as they are
