"""The stand-in OpenCode against the real 1.18.31.

Tests about smoldata-tui's own code run the stand-in (tests/standin_agent) instead of OpenCode, to
spare ~4.5 s of CPU a start. What they prove holds only while the stand-in does what OpenCode does,
so both run here against the same replay model and the same proxy: on a recording with every tool
the stand-in runs but glob (whose result depends on the machine: 1.18.31 fetches ripgrep), their
requests are compared whole and each call's result field by field (ids, times and the working
directory aside); on a call id repeated across steps, their tool_use lines; on a run killed
mid-call, the export and where the killed command ran.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from smoldata_tui.opencode import config as opencode_config
from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.replay.server import ReplayServer
from smoldata_tui.session.export import unfinished_calls
from smoldata_tui.trace.build import TraceBuilder

from .opencode_fixture import FAKE_API_KEY, in_own_pid_namespace, opencode_bin, prepare_home, run_agent  # noqa: F401
from .standin_agent import standin_opencode  # noqa: F401 - a fixture
from .test_episode_local import pids_matching

pytestmark = pytest.mark.slow


def every_tool_recording() -> bytes:
    builder = TraceBuilder()
    builder.step_start()
    builder.text("Let me look around.")
    builder.bash("printf 'a\\nb\\n'; echo oops >&2; exit 3", "(recorded)")
    builder.tool("write", {"filePath": "notes/plan.txt", "content": "one\ntwo\n"}, "Wrote file successfully.")
    builder.step_finish("tool-calls")
    builder.step_start()  # one call a step where calls touch one file: OpenCode runs a step's calls at once
    builder.tool("read", {"filePath": "notes/plan.txt"}, "(recorded)")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.tool("edit", {"filePath": "notes/plan.txt", "oldString": "two", "newString": "three"}, "(recorded)")
    builder.tool("edit", {"filePath": "notes/plan.txt", "oldString": "one", "newString": "one"}, "(recorded)")
    builder.tool("todowrite", {"todos": [{"content": "check", "status": "pending", "priority": "high", "id": "1"}]},
                 "(recorded)")
    builder.tool("list", {"path": "."}, "(recorded)")
    builder.tool("bash", {"command": "sleep 5", "description": "Wait", "timeout": 1000}, "(recorded)")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.bash("cat notes/plan.txt", "(recorded)")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("Done.")
    builder.step_finish("stop")
    return builder.dumps()


class RecordingProxy:
    """Forwards every request to ``upstream`` and keeps its headers and JSON body."""

    def __init__(self, upstream: str) -> None:
        self.requests: list[dict] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {name.lower(): value for name, value in self.headers.items()}
                proxy.requests.append({"headers": headers, "body": json.loads(body)})
                forwarded = urllib.request.Request(upstream + self.path[len("/v1"):], data=body,
                                                   headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(forwarded) as answer:
                    data = answer.read()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def run_on_recording(binary: Path, home: Path, script: ReplayScript | None = None) -> tuple[list[dict], list[dict], int]:
    prepare_home(home, "Tidy the notes.\nThen stop.")
    with ReplayServer(script or ReplayScript.from_trace(every_tool_recording())) as replay:
        proxy = RecordingProxy(replay.base_url)
        try:
            run = run_agent(binary, home, proxy.base_url)
        finally:
            proxy.close()
    # the home's path aside, which OpenCode writes into titles, outputs and metadata
    trace = run.trace.replace(json.dumps(str(home))[1:-1].encode(), b"<home>").replace(
        json.dumps(str(home))[2:-1].encode(), b"<home>")
    events = [json.loads(line) for line in trace.splitlines()]
    return events, proxy.requests, run.returncode


@pytest.fixture(scope="module")
def both(tmp_path_factory, opencode_bin, standin_opencode):  # noqa: F811
    real = run_on_recording(opencode_bin, tmp_path_factory.mktemp("real"))
    standin = run_on_recording(standin_opencode, tmp_path_factory.mktemp("standin"))
    return real, standin


def settled_calls(events: list[dict]) -> dict[str, dict]:
    """Each call's tool and state without its times, by call id (OpenCode runs a step's calls at
    once and writes them as they end, so their order depends on timing)."""
    calls = {}
    for event in events:
        if event["type"] == "tool_use":
            state = {key: value for key, value in event["part"]["state"].items() if key != "time"}
            calls[event["part"]["callID"]] = {"tool": event["part"]["tool"], **state}
    return calls


def shape(events: list[dict]) -> list[str]:
    """The event types in order, with a step's tool_use events counted, not ordered."""
    kinds: list[str] = []
    for event in events:
        kind = event["type"] if event["type"] != "step_finish" else f"step_finish:{event['part']['reason']}"
        if kind == "tool_use" and kinds and kinds[-1].startswith("tool_use"):
            kinds[-1] = f"tool_use×{int(kinds[-1].partition('×')[2] or 1) + 1}"
        else:
            kinds.append(kind)
    return kinds


def test_the_standin_writes_the_events_opencode_writes(both):
    (real_events, _, real_code), (standin_events, _, standin_code) = both
    assert (standin_code, shape(standin_events)) == (real_code, shape(real_events))
    real_calls, standin_calls = settled_calls(real_events), settled_calls(standin_events)
    assert standin_calls == real_calls
    for events in (real_events, standin_events):
        assert {event["sessionID"] for event in events} == {events[0]["sessionID"]}
        assert all(event["part"]["sessionID"] == event["sessionID"] for event in events)
    assert [e["part"]["tokens"] for e in standin_events if e["type"] == "step_finish"] == \
        [e["part"]["tokens"] for e in real_events if e["type"] == "step_finish"]


def comparable(request: dict, home: Path) -> dict:
    """A request's body with the working directory named alike, tool results keyed by call id."""
    text = json.dumps(request["body"], sort_keys=True).replace(json.dumps(str(home))[1:-1], "<home>")
    body = json.loads(text)
    results = {m["tool_call_id"]: m for m in body["messages"] if m["role"] == "tool"}
    body["messages"] = [m for m in body["messages"] if m["role"] != "tool"] + [results[key] for key in sorted(results)]
    return body


def split_requests(requests: list[dict]) -> tuple[list[dict], list[dict]]:
    """(title side calls, turns): OpenCode sends its title request beside the first turn."""
    return [r for r in requests if "tools" not in r["body"]], [r for r in requests if "tools" in r["body"]]


def home_of(turn: dict) -> Path:
    system = turn["body"]["messages"][0]["content"]
    return Path(system.split("Working directory: ", 1)[1].split("\n", 1)[0]).parent


def test_the_standin_sends_the_requests_opencode_sends(both):
    (_, real_requests, _), (_, standin_requests, _) = both
    real_titles, real_turns = split_requests(real_requests)
    standin_titles, standin_turns = split_requests(standin_requests)
    assert (len(standin_titles), len(standin_turns)) == (len(real_titles), len(real_turns)) == (1, 5)
    real_home, standin_home = home_of(real_turns[0]), home_of(standin_turns[0])
    for real, standin in zip(real_titles + real_turns, standin_titles + standin_turns):
        assert comparable(standin, standin_home) == comparable(real, real_home)
        for header in ("authorization", "user-agent", "content-type", "x-session-affinity"):
            assert header in standin["headers"]
            assert standin["headers"][header] == real["headers"][header] or header == "x-session-affinity"
        assert standin["headers"]["authorization"] == f"Bearer {FAKE_API_KEY}"
        assert standin["headers"]["x-session-id"] != real["headers"]["x-session-id"]


def test_the_standin_ran_the_calls_in_its_working_directory(tmp_path, standin_opencode):  # noqa: F811
    events, _, code = run_on_recording(standin_opencode, tmp_path)
    assert code == 0
    assert (tmp_path / "workdir" / "notes" / "plan.txt").read_text() == "one\nthree\n"


@dataclass
class KilledRun:
    events: list[dict]
    export: dict
    unfinished: list
    shell: dict  # the running command's process: whether it had a session of its own, its OPENCODE* variables


def killed_mid_call(binary: Path, home: Path, marker: str) -> KilledRun:
    """Run a recording whose step writes a file and sleeps; kill the agent in its sleep (as an
    episode's cancel does: the process group, TERM); then ``export`` the session. The sleep, in a
    session of its own, outlives that kill: it is killed here afterwards."""
    prepare_home(home, "Sleep on it.")
    builder = TraceBuilder()
    builder.step_start()
    builder.bash(f"sleep {marker}", "")
    builder.tool("write", {"filePath": "/dev/null", "content": "x"}, "Wrote file successfully.")
    builder.step_finish("tool-calls")
    config = opencode_config.build_opencode_json("http://127.0.0.1:1/v1", FAKE_API_KEY, "replay/recorded-model")
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **opencode_config.agent_environment(str(home))}
    try:
        with ReplayServer(ReplayScript.from_trace(builder.dumps())) as replay:
            config["provider"]["intercepted"]["options"]["baseURL"] = replay.base_url
            Path(opencode_config.config_path(str(home))).write_text(opencode_config.opencode_json_text(config))
            agent = subprocess.Popen(in_own_pid_namespace(["bash", "-c", opencode_config.agent_command(str(home), opencode=str(binary))]),
                                     env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
            deadline = time.monotonic() + 60
            while not pids_matching(f"sleep {marker}") and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)  # the write beside it has ended
            shell = process_facts(pids_matching(f"sleep {marker}")[0], agent.pid)
            os.killpg(agent.pid, signal.SIGTERM)
            agent.wait(timeout=30)
    finally:
        for pid in pids_matching(f"sleep {marker}"):
            os.kill(pid, signal.SIGKILL)
    log = Path(opencode_config.agent_log_path(str(home))).read_bytes()
    events = [json.loads(line) for line in log.splitlines() if line.startswith(b"{")]
    done = subprocess.run([str(binary), "export", events[0]["sessionID"]], env=environment, cwd=home / "workdir",
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout[done.stdout.index(b"{"):])
    return KilledRun(events, document, unfinished_calls(document), shell)


def process_facts(pid: int, agent_session: int) -> dict:
    stat = Path(f"/proc/{pid}/stat").read_text()
    session = int(stat[stat.rindex(")") + 2:].split()[3])
    environment = dict(item.split(b"=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item)
    return {"own_session": session not in (agent_session, 0), "OPENCODE": environment.get(b"OPENCODE"),
            "OPENCODE_PID set": b"OPENCODE_PID" in environment}


def test_the_standin_exports_a_call_cut_short_as_opencode_does(tmp_path, opencode_bin, standin_opencode):  # noqa: F811
    marker = f"300.{secrets.randbelow(10**9):09d}"  # this test's sleeps alone among the host's processes
    real = killed_mid_call(opencode_bin, tmp_path / "real", marker + "1")
    standin = killed_mid_call(standin_opencode, tmp_path / "standin", marker + "2")
    for run in (real, standin):
        assert [event["type"] for event in run.events] == ["step_start", "tool_use"]  # the write, not the sleep
        assert run.events[1]["part"]["tool"] == "write"
        assert [(call.tool, call.status) for call in run.unfinished] == [("bash", "running")]
        assert run.export["info"]["id"] == run.events[0]["sessionID"]
        parts = [part["type"] for message in run.export["messages"] for part in message["parts"]]
        assert parts[:2] == ["text", "step-start"] and sorted(parts[2:]) == ["tool", "tool"]
    assert real.unfinished[0].call_id == standin.unfinished[0].call_id
    assert real.unfinished[0].input["command"] == f"sleep {marker}1"
    assert standin.unfinished[0].input["command"] == f"sleep {marker}2"
    assert standin.shell == real.shell == {"own_session": True, "OPENCODE": b"1", "OPENCODE_PID set": True}


def test_a_call_id_the_model_repeats_comes_out_as_opencode_writes_it(tmp_path, opencode_bin, standin_opencode):  # noqa: F811
    """A model that gives two steps' calls one id (what test_groups_batch's rejected attempt and
    test_training_capture's repeated-id episode play): the same two tool_use lines, the same turns."""
    from .test_training_capture import _repeating_call_id_script

    real = run_on_recording(opencode_bin, tmp_path / "real", _repeating_call_id_script())
    standin = run_on_recording(standin_opencode, tmp_path / "standin", _repeating_call_id_script())
    assert (standin[2], shape(standin[0])) == (real[2], shape(real[0]))

    def calls(events):
        return [(e["part"]["callID"], e["part"]["tool"], e["part"]["state"]["status"], e["part"]["state"]["input"])
                for e in events if e["type"] == "tool_use"]

    assert calls(standin[0]) == calls(real[0]) and len({call[0] for call in calls(real[0])}) == 1
    assert len(standin[1]) == len(real[1])
