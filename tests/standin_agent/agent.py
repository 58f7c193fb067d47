"""A stand-in for OpenCode 1.18.31's ``run --format json``, for tests about smoldata-tui's own code.

A real OpenCode start costs ~4.5 s of CPU (its runtime, its plugin and tool set-up); the suite
started one per episode. Tests about what OpenCode itself does (its requests, exports, signals,
upgrades) keep the real binary; tests about the episode around it (sandbox, capture proxy,
grading, saved files, batches, screens) run this instead, through ``--opencode-bin``.

What it does, and what tests/test_standin_agent.py compares with the real binary (on a recording
with every tool it runs but glob, a bash timeout among them: requests whole; each call's tool,
input, output, title and metadata; the event types in order; the tokens; a call id repeated across
steps; a killed run's export of its running call; where its commands run):

* reads the provider from ``$OPENCODE_CONFIG`` (baseURL, apiKey, model, timeout);
* sends OpenCode's own requests, recorded from 1.18.31 (``opencode-1.18.31-requests.json``):
  the title side call, then the system prompt with this sandbox's working directory and date,
  the ten tool schemas, ``stream: true`` with usage, the whole history each turn, the
  instruction wrapped in double quotes;
* runs a step's calls at once, each ``tool_use`` written as its call ends (bash, read, write,
  edit, todowrite; an unknown tool becomes ``invalid``; glob and grep fail, as 1.18.31's did here,
  offline, where it could not fetch ripgrep: not compared, since that depends on the machine); a
  command runs in a session of its own, as OpenCode's do, so stopping the agent's process group
  leaves it running;
* writes the events OpenCode writes (``step_start``, ``text``, ``tool_use``, ``step_finish``) with
  its id shapes, and keeps the session for ``export``.

Written to docs/trace-format.md, not compared: a provider error (an ``error`` event, exit 1; a 5xx
or a refused connection retried for ~65 s), the endings ``length`` and ``unknown``. Not done:
OpenCode can swallow a first SIGTERM; this one dies at once (128+N, nothing flushed).

Standard library only: it runs inside the sandbox, with the sandbox's ``python3``. The test
fixture (``tests/standin_agent/__init__.py``) packs it, its tools (``tools.py``) and the recorded
requests into one executable zip (``zipapp``), since a sandbox gets one file as OpenCode's binary.
"""

from __future__ import annotations

import json
import os
import pkgutil
import random
import signal
import string
import sys
import threading
import time
import urllib.error
import urllib.request

from tools import TOOLS, ToolError, unavailable  # noqa: I001 - beside this file in the stand-in's zip

RECORDED_FILE = "opencode-1.18.31-requests.json"  # OpenCode 1.18.31's own requests, recorded from the real binary
RECORDED: dict = json.loads(pkgutil.get_data(__name__, RECORDED_FILE))

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_FINISH_REASONS = {"stop": "stop", "tool_calls": "tool-calls", "length": "length", "content_filter": "content-filter"}
_RETRY_FOR_S = 65.0  # 1.18.31 retries a 5xx or a refused connection silently for about this long
_OFFERED = ("bash", "edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write")


class Ids:
    """OpenCode's identifier shapes: ascending ``prt_``/``msg_`` ids, a descending ``ses_`` id."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def ascending(self, prefix: str) -> str:
        with self._lock:
            value = max(int(time.time() * 1000) * 0x1000, self._last + 1)
            self._last = value
        return f"{prefix}_{value & ((1 << 48) - 1):012x}{_random_chars(14)}"

    def descending(self, prefix: str) -> str:
        value = ~(int(time.time() * 1000) * 0x1000) & ((1 << 48) - 1)
        return f"{prefix}_{value:012x}{_random_chars(14)}"


def _random_chars(count: int) -> str:
    return "".join(random.choices(_BASE62, k=count))


def _now_ms() -> int:
    return int(time.time() * 1000)


class Session:
    def __init__(self, prompt: str) -> None:
        config_path = os.environ.get("OPENCODE_CONFIG") or os.path.expanduser("~/.config/opencode/opencode.json")
        with open(config_path, encoding="utf-8") as handle:
            config = json.load(handle)
        self.provider_id, self.model_id = config["model"].split("/", 1)
        options = config["provider"][self.provider_id].get("options", {})
        self.url = options["baseURL"].rstrip("/") + "/chat/completions"
        self.api_key = options.get("apiKey", "")
        self.timeout_s = options.get("timeout", 600_000) / 1000
        self.ids = Ids()
        self.lock = threading.RLock()  # a step's calls run in threads; one writes stdout and the session at a time
        self.session_id = self.ids.descending("ses")
        self.prompt = f'"{prompt}"'
        self.cwd = os.getcwd()
        self.messages: list[dict] = [{"role": "system", "content": self._system_prompt()},
                                     {"role": "user", "content": self.prompt}]
        self.message_id = ""
        user_id = self.ids.ascending("msg")
        model = {"providerID": self.provider_id, "modelID": self.model_id}
        self.assistant_info = {"parentID": user_id, "role": "assistant", "mode": "build", "agent": "build",
                               "path": {"cwd": self.cwd, "root": "/"}, "cost": 0, "modelID": self.model_id,
                               "providerID": self.provider_id, "sessionID": self.session_id}
        created = _now_ms()
        self.document = {
            "info": {"id": self.session_id, "directory": self.cwd, "title": "New session", "agent": "build",
                     "model": {"id": self.model_id, "providerID": self.provider_id, "variant": "default"},
                     "version": RECORDED["version"], "time": {"created": created, "updated": created}},
            "messages": [{"info": {"role": "user", "time": {"created": created}, "agent": "build", "model": model,
                                   "id": user_id, "sessionID": self.session_id},
                          "parts": [{"type": "text", "text": self.prompt, "id": self.ids.ascending("prt"),
                                     "sessionID": self.session_id, "messageID": user_id}]}],
        }
        self.save()

    def _system_prompt(self) -> str:
        today = time.strftime("%a %b %d %Y", time.localtime())
        text = RECORDED["system_template"]
        for key, value in (("{model_id}", self.model_id), ("{provider_id}", self.provider_id),
                           ("{cwd}", self.cwd), ("{date}", today)):
            text = text.replace(key, value)
        return text

    # ---------------------------------------------------------------- output

    def emit(self, event_type: str, **fields) -> None:
        with self.lock:
            event = {"type": event_type, "timestamp": _now_ms(), "sessionID": self.session_id, **fields}
            sys.stdout.buffer.write((json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
            sys.stdout.buffer.flush()  # one line a write, as OpenCode writes them: they appear live
            if "part" in fields:
                self.keep(fields["part"])

    # ---------------------------------------------------------------- the session, for `export`

    def keep(self, part: dict) -> None:
        """Put ``part`` into the session document (replacing the one of the same id) and save it.
        Called with ``lock`` held."""
        messages = self.document["messages"]
        if messages[-1]["info"]["id"] != part["messageID"]:
            messages.append({"info": {**self.assistant_info, "id": part["messageID"], "time": {"created": _now_ms()}},
                             "parts": []})
        parts = messages[-1]["parts"]
        for index, kept in enumerate(parts):
            if kept["id"] == part["id"]:
                parts[index] = part
                break
        else:
            parts.append(part)
        if part["type"] == "step-finish":
            messages[-1]["info"].update(finish=part["reason"], tokens=part["tokens"])
            messages[-1]["info"]["time"]["completed"] = _now_ms()
        self.save()

    def save(self) -> None:
        """Write the session where ``export`` finds it; atomically, since a kill can come at any time."""
        path = session_path(self.session_id)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.document["info"]["time"]["updated"] = _now_ms()
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(self.document, handle, ensure_ascii=False)
        os.replace(path + ".tmp", path)

    def part(self, part_type: str, **fields) -> dict:
        return {"id": self.ids.ascending("prt"), "messageID": self.message_id, "sessionID": self.session_id,
                "type": part_type, **fields}

    # ---------------------------------------------------------------- the model

    def post(self, body: dict):
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()  # as JSON.stringify writes it
        headers = {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json",
                   "User-Agent": RECORDED["user_agent"], "x-session-affinity": self.session_id,
                   "x-session-id": self.session_id}
        deadline = time.monotonic() + _RETRY_FOR_S
        delay = 1.0
        while True:
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                return urllib.request.urlopen(request, timeout=self.timeout_s)
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or time.monotonic() > deadline:
                    raise
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 10.0)

    def ask_title(self) -> None:
        body = {"model": self.model_id, "max_tokens": RECORDED["max_tokens"],
                "messages": [{"role": "system", "content": RECORDED["title_system"]},
                             {"role": "user", "content": RECORDED["title_prompt"]},
                             {"role": "user", "content": self.prompt}],
                "stream": True, "stream_options": RECORDED["stream_options"]}
        try:
            with self.post(body) as response:
                response.read()
        except Exception:  # noqa: BLE001 - as in OpenCode, a failed title changes nothing
            pass

    def turn(self) -> tuple[str, str, list[dict], dict]:
        """One streamed answer: (finish reason, text, tool calls, usage)."""
        body = {"model": self.model_id, "max_tokens": RECORDED["max_tokens"], "messages": self.messages,
                "tools": RECORDED["tools"], "tool_choice": RECORDED["tool_choice"], "stream": True,
                "stream_options": RECORDED["stream_options"]}
        text: list[str] = []
        calls: dict[int, dict] = {}
        finish = None
        usage: dict = {}
        with self.post(body) as response:
            self.emit("step_start", part=self.part("step-start"))  # OpenCode's step starts with the stream
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        text.append(delta["content"])
                    for piece in delta.get("tool_calls") or ():
                        call = calls.setdefault(piece.get("index", len(calls)), {"id": "", "name": "", "arguments": ""})
                        call["id"] = piece.get("id") or call["id"]
                        function = piece.get("function") or {}
                        call["name"] += function.get("name") or ""
                        call["arguments"] += function.get("arguments") or ""
                    finish = choice.get("finish_reason") or finish
        reason = _FINISH_REASONS.get(finish, finish or "unknown")
        return reason, "".join(text), [calls[index] for index in sorted(calls)], usage

    # ---------------------------------------------------------------- the loop

    def run(self) -> int:
        title = threading.Thread(target=self.ask_title, daemon=True)  # beside the first turn, as OpenCode sends it
        title.start()
        try:
            return self.loop()
        finally:
            title.join(timeout=self.timeout_s)  # a short run does not end before its title request was answered

    def loop(self) -> int:
        while True:
            self.message_id = self.ids.ascending("msg")
            try:
                reason, text, calls, usage = self.turn()
            except Exception as exc:  # noqa: BLE001 - every provider failure ends the run as OpenCode's does
                self.emit("error", error=_api_error(exc))
                return 1
            if text:
                started = _now_ms()
                self.emit("text", part=self.part("text", text=text, time={"start": started, "end": _now_ms()}))
            results = self.run_calls(calls)
            self.emit("step_finish", part=self.part("step-finish", reason=reason, tokens=_tokens(usage), cost=0))
            self.messages.append({"role": "assistant", "content": text,
                                  **({"tool_calls": [call for call, _ in results]} if calls else {})})
            self.messages += [{"role": "tool", "content": answer, "tool_call_id": call["id"]}
                              for call, answer in results]
            if reason not in ("tool-calls", "unknown"):
                return 0

    def run_calls(self, calls: list[dict]) -> list[tuple[dict, str]]:
        """A step's calls all at once, as OpenCode runs them (each ``tool_use`` is written as its call
        ends); each call as the history shows it, and its answer, in the order the model made them."""
        results: list = [None] * len(calls)

        def run(index: int) -> None:
            results[index] = self.call(calls[index])

        threads = [threading.Thread(target=run, args=(index,), daemon=True) for index in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def call(self, call: dict) -> tuple[dict, str]:
        """Run one tool call and emit its ``tool_use``. Returns the call as the next request's
        history has it (OpenCode rewrites a call it cannot run as one of ``invalid``) and the
        answer that goes back to the model."""
        started = _now_ms()
        name, part_id = call["name"], self.ids.ascending("prt")
        try:
            arguments = json.loads(call["arguments"] or "{}")
        except ValueError as exc:
            arguments, problem = None, f"Invalid JSON in the arguments of {name}: {exc}"
        else:
            problem = None if name in _OFFERED else (
                f"Model tried to call unavailable tool '{name}'. Available tools: "
                + ", ".join(sorted((*_OFFERED, "invalid"))) + ".")
        if problem is not None:
            name, arguments = "invalid", {"tool": name, "error": problem}
            output = f"The arguments provided to the tool are invalid: {problem}"
            state = {"status": "completed", "input": arguments, "output": output, "metadata": {"truncated": False},
                     "title": "Invalid Tool"}
        else:
            partial = {"output": "", **({"description": arguments.get("description", "")} if name == "bash" else {})}
            running = {"status": "running", "input": arguments, "title": name, "metadata": partial,
                       "time": {"start": started}}
            with self.lock:
                self.keep(self.tool_part(name, call["id"], part_id, running))
            try:
                output, title, metadata = TOOLS.get(name, unavailable)(arguments, self.cwd)
                state = {"status": "completed", "input": arguments, "output": output, "metadata": metadata,
                         "title": title}
            except ToolError as exc:
                output = str(exc)
                state = {"status": "error", "input": arguments, "error": output}
        state["time"] = {"start": started, "end": _now_ms()}
        self.emit("tool_use", part=self.tool_part(name, call["id"], part_id, state))
        arguments_text = call["arguments"] if name == call["name"] else json.dumps(arguments, separators=(",", ":"))
        return {"id": call["id"], "type": "function", "function": {"name": name, "arguments": arguments_text}}, output

    def tool_part(self, name: str, call_id: str, part_id: str, state: dict) -> dict:
        return {"type": "tool", "tool": name, "callID": call_id, "state": state, "id": part_id,
                "sessionID": self.session_id, "messageID": self.message_id}


def _tokens(usage: dict) -> dict:
    prompt = usage.get("prompt_tokens") or 0
    output = usage.get("completion_tokens") or 0
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {"total": prompt + output, "input": prompt - cached, "output": output - reasoning,
            "reasoning": reasoning, "cache": {"write": 0, "read": cached}}


def _api_error(exc: Exception) -> dict:
    if isinstance(exc, urllib.error.HTTPError):
        body = exc.read(4096).decode("utf-8", "replace")
        return {"name": "APIError", "data": {"message": body or exc.reason, "statusCode": exc.code,
                                             "isRetryable": exc.code >= 500, "responseBody": body}}
    return {"name": "UnknownError", "data": {"message": f"{type(exc).__name__}: {exc}"}}


def session_path(session_id: str) -> str:
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(data_home, "opencode", "standin-sessions", os.path.basename(session_id) + ".json")


def export(session_id: str) -> int:
    """``opencode export <sessionID>``: the session as kept so far (a call cut short by a kill stays
    ``running``, as in OpenCode's own export)."""
    try:
        with open(session_path(session_id), encoding="utf-8") as handle:
            document = handle.read()
    except OSError:
        print(f"Session not found: {session_id}", file=sys.stderr)
        return 1
    print(f"Exporting session: {session_id}", file=sys.stderr)
    sys.stdout.write(document + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it as it ends OpenCode: 130, no traceback
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--version"], ["-v"]):
        print(RECORDED["version"])
        return 0
    if argv[:1] == ["export"] and len(argv) == 2:
        return export(argv[1])
    if argv[:1] != ["run"]:
        print(f"stand-in OpenCode: only `run`, `export <sessionID>` and `--version`, not {' '.join(argv[:1])}", file=sys.stderr)
        return 2
    words = [word for word in argv[1:] if not word.startswith("--") and word != "json"]
    if not words:
        print("stand-in OpenCode: run needs a prompt", file=sys.stderr)
        return 2
    return Session(words[-1]).run()


def cli() -> None:
    """The zip application's entry point (zipapp's ``__main__`` drops what its function returns)."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
