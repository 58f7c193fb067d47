"""A scripted OpenAI-compatible endpoint for many sessions at once, as a batch needs: the n-th
session of a task is answered with that task's script n (cycling), so "every second session of a
task answers wrong" is ``scripts={task: [right, wrong]}``.

Each script is a recorded episode served by the real replay model (:class:`ReplayServer`); this
server only routes. A request's task is found by its instruction's text; its session by the call
ids in its conversation (each script's ids are its own); a conversation with no call ids yet is a
new session of its task. Requests must carry ``Authorization: Bearer <key>``: the key reaches the
endpoint, so a test can check it reached no saved file."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.replay.server import ReplayServer
from smoldata_tui.tasks import Task
from smoldata_tui.trace.build import TraceBuilder


def answer_recording(tag: str, answer: str, *, sleep_s: float = 0) -> bytes:
    """An episode that (optionally sleeps, then) writes ``answer`` to /workdir/answer.txt and stops;
    its call ids start with ``call_<tag>_``."""
    builder = TraceBuilder()
    builder.step_start()
    if sleep_s:
        builder.bash(f"sleep {sleep_s:g}", "", call_id=f"call_{tag}_sleep")
    builder.tool("write", {"filePath": "/workdir/answer.txt", "content": answer + "\n"}, "Wrote file successfully.",
                 call_id=f"call_{tag}_write")  # fmt: skip
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("The answer is written.")
    builder.step_finish("stop")
    return builder.dumps()


@dataclass
class _Script:
    tag: str
    server: ReplayServer


class ScriptedEndpoint:
    def __init__(self, key: str, scripts: list[tuple[Task, list[tuple[str, bytes | ReplayScript]]]]) -> None:
        """``scripts``: per task, (tag, recording) in the order its sessions get them; a recording is a
        trace's bytes, or a :class:`ReplayScript` for what a recorded trace cannot say (repeated call ids)."""
        self.key = key
        self._tasks = {task.name: (task.instruction.strip().splitlines()[0], [
            _Script(tag, ReplayServer(recording if isinstance(recording, ReplayScript)
                                      else ReplayScript.from_trace(recording)).start())
            for tag, recording in entries
        ]) for task, entries in scripts}  # fmt: skip
        self.sessions: dict[str, list[str]] = {name: [] for name in self._tasks}  # tags handed out, in order
        self.refused = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        """What SANDBOX_VLLM_URL is set to (the runner appends /v1)."""
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        for _, scripts in self._tasks.values():
            for script in scripts:
                script.server.close()

    def _route(self, body: bytes) -> ReplayServer:
        text = body.decode("utf-8", errors="replace")
        try:
            side_request = not json.loads(text).get("tools")
        except (ValueError, AttributeError):
            side_request = True
        if side_request:  # OpenCode's session title: it quotes the instruction but is no new session
            return next(iter(self._tasks.values()))[1][0].server
        for name, (first_line, scripts) in self._tasks.items():
            if json.dumps(first_line, ensure_ascii=False)[1:-1] not in text:
                continue
            for script in scripts:
                if f"call_{script.tag}_" in text:
                    return script.server
            with self._lock:  # a new session of this task: the next script in turn
                script = scripts[len(self.sessions[name]) % len(scripts)]
                self.sessions[name].append(script.tag)
            return script.server
        # OpenCode's side requests (the session title) name no task: any replay server answers them.
        return next(iter(self._tasks.values()))[1][0].server

    def _handler(self):
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self, body: bytes) -> None:
                if self.headers.get("Authorization") != f"Bearer {endpoint.key}":
                    endpoint.refused += 1
                    self._answer(401, b'{"error": {"message": "invalid api key"}}', "application/json")
                    return
                target = endpoint._route(body) if body else next(iter(endpoint._tasks.values()))[1][0].server
                origin = target.base_url.rsplit("/v1", 1)[0]
                request = urllib.request.Request(origin + self.path, data=body or None, method=self.command,
                                                 headers={"Content-Type": "application/json"})  # fmt: skip
                try:
                    with urllib.request.urlopen(request, timeout=120) as answer:
                        self._answer(answer.status, answer.read(), answer.headers.get("Content-Type", "application/json"))
                except urllib.error.HTTPError as failed:
                    self._answer(failed.code, failed.read(), "application/json")

            def _answer(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def do_GET(self):  # noqa: N802
                self._forward(b"")

            def log_message(self, *args):
                pass

        return Handler


def correct_answer(task: Task) -> str:
    """The task's reference answer, computed on the host by its own solution."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        answer = Path(folder, "answer.txt")
        subprocess.run([sys.executable, str(task.folder / "solution" / "solve.py"),
                        str(task.folder / "environment" / "input"), str(answer)], check=True)  # fmt: skip
        return answer.read_text().strip()
