"""The capture proxy inside a remote sandbox, for Daytona episodes.

A Daytona sandbox cannot reach the user's host, and the host reaches the sandbox only through
Daytona's API. So, as opencode_env does, the proxy runs beside OpenCode: :mod:`capture_policy`
(the very file the host's proxy uses) is uploaded into a fresh folder in the sandbox and run with
the sandbox's ``python3``. When that Python has openenv ≥ 0.10 it runs as is; otherwise the host's
capture bundle (:mod:`capture_bundle`: the modules the runner loads, compiled files for that
Python) is uploaded into the same folder and unpacked, and the runner starts isolated from the
system Python (``-I -S``) with the bundle first on ``sys.path``: no pip, nothing installed. The
runner probes the endpoint from inside the sandbox, serves openenv's ``CaptureServer`` on the
sandbox's 127.0.0.1 in training's policy, mints the session and writes ``ready.json``; OpenCode's
``opencode.json`` names that port and session id.

The host and the runner talk through files in that folder, over the sandbox protocol: the host
writes ``config.json`` (the runner reads and deletes it: it holds the endpoint key, which the
proxy needs there) and, at the end, ``stop``; the runner appends the request summaries to
``requests.jsonl`` and writes ``training.json`` (openenv's ``TrainingTrace``) and ``done.json``.
The host downloads them size-capped, treats them as untrusted (the agent runs as root beside
them), validates the trace with openenv's own model and saves it exactly as a host capture is
saved (:func:`trace_file.save_training_trace`: the seed's ``native_tool_calls``, secrets scrubbed).
"""

from __future__ import annotations

import json
import secrets
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smoldata_tui.sandbox.errors import FileTooLarge
from smoldata_tui.masking import masked_url
from smoldata_tui.training import capture_policy as policy
from smoldata_tui.training.capture import CaptureRecord, level_line, prefetch
from smoldata_tui.training.capture_bundle import SITE, SandboxPython, bundle_for, last_line, parse_probe, probe_script
from smoldata_tui.training.capture_policy import TRAINING_OUTPUT_CAP, CaptureFailed
from smoldata_tui.training.requests import MAX_REQUESTS_BYTES
from smoldata_tui.training.trace_file import MAX_TRAINING_BYTES

READY_TIMEOUT_S = 600.0  # openenv's import (seconds) and the probe (policy.PROBE_CAP_S at most) on a slow sandbox
DONE_TIMEOUT_S = 120.0
UNPACK_TIMEOUT_S = 300.0
MAX_SMALL_BYTES = 1 << 20  # ready.json, done.json, the runner's log tail
MAX_REASON = 420  # what the sandbox says, within the stage's one-line failure message
BUNDLE = "bundle.tar.gz"
# The runner with the bundle: isolated from the system Python (-I: no user site, no PYTHON*
# variables; -S: no site-packages), the bundle's folder first on sys.path instead.
_LAUNCH = (f"import sys; sys.path[:0] = [sys.argv[1] + '/{SITE}', sys.argv[1]]; import capture_policy; "
           "sys.exit(capture_policy.run_in_sandbox(sys.argv[1]))")


def _host_openenv() -> str:
    from importlib.metadata import version

    return version("openenv")


class SandboxCapture:
    """One episode's capture proxy, running inside ``sandbox``. Same surface as the host's
    :class:`capture.ModelCapture`: ``start`` → :attr:`base_url` / :attr:`session_id` →
    ``training_trace`` → ``stop``."""

    sandbox_host = "127.0.0.1"  # the sandbox's own loopback

    def __init__(self, sandbox, *, llm_url: str, model: str, api_key: str, requests_path: Path,
                 scrub: Callable[[str], str], cancel: threading.Event | None = None,
                 max_output_tokens: int = TRAINING_OUTPUT_CAP, sampling: dict | None = None,
                 deadline: float | None = None) -> None:  # fmt: skip
        self._sandbox = sandbox
        self.llm_url = llm_url
        self.model = model
        self._api_key = api_key
        self._requests_path = requests_path
        self._scrub = scrub
        self._cancel = cancel or threading.Event()
        self._deadline = deadline  # time.monotonic() when the run's --timeout runs out; bounds the probe
        self.record = CaptureRecord(where="sandbox", max_output_tokens=max_output_tokens, requests=requests_path.name,
                                    sampling=sampling)  # fmt: skip
        self.folder = f"/tmp/.smoldata-capture-{secrets.token_hex(8)}"
        self._job = None
        self._stopped = False
        self.session_id: str | None = None
        self.port: int | None = None
        self.request_count = 0
        prefetch()  # the host needs openenv's TrainingTrace at the end

    def __repr__(self) -> str:  # never the keys, nor a password in the URL
        return f"SandboxCapture({masked_url(self.llm_url)!r}, {self.model!r}, level={self.record.level!r})"

    @property
    def base_url(self) -> str:
        return f"http://{self.sandbox_host}:{self.port}/v1"

    def _path(self, name: str) -> str:
        return f"{self.folder}/{name}"

    # --- start ------------------------------------------------------------------------------
    def start(self, say: Callable[[str], None]) -> None:
        runner = self._runner_command(say)
        say(f"starting openenv's capture proxy inside the sandbox (the sandbox cannot reach this host), model {self.model}")
        self._sandbox.write_text(self._path("capture_policy.py"), Path(policy.__file__).read_text(encoding="utf-8"))
        config = {"llm_url": self.llm_url, "model": self.model, "api_key": self._api_key,
                  "max_output_tokens": self.record.max_output_tokens, "sampling": self.record.sampling,
                  "probe_budget_s": policy.probe_budget(None if self._deadline is None else self._deadline - time.monotonic())}  # fmt: skip
        self._sandbox.write_text(self._path(policy.CONFIG), json.dumps(config))
        self._job = self._sandbox.start_bg(f"cd {shlex.quote(self.folder)} && exec {runner} >> {policy.LOG} 2>&1")
        say(f"probing {masked_url(self.llm_url)} from inside the sandbox for token ids and logprobs")
        ready = self._wait_for((policy.READY, policy.FAILED), READY_TIMEOUT_S, "start")
        if ready[0] == policy.FAILED:
            raise CaptureFailed(f"the capture proxy in the sandbox did not start: {_text(ready[1].get('reason'), MAX_REASON)}")
        found = ready[1]
        port, session_id = found.get("port"), found.get("session_id")
        if type(port) is not int or not isinstance(session_id, str) or not session_id:
            raise CaptureFailed("the capture proxy in the sandbox wrote an unusable ready.json")
        self.port, self.session_id = port, session_id
        self.record.update({key: found[key] for key in ("level", "logprobs_mode", "not_trainable_because") if isinstance(found.get(key), str)})
        self.record.update({key: [_text(item) for item in found[key][:50]] for key in ("param_fixes", "probe_findings")
                            if isinstance(found.get(key), list)})  # fmt: skip
        self.record.level = self.record.level if self.record.level in ("tokens", "logprobs", "text") else "text"
        self.record.trainable = self.record.level == "tokens"
        if not self.record.trainable:
            self.record.not_trainable_because = policy.NOT_TRAINABLE
        self.record.port = port
        say(level_line(self.record))
        say(f"capture proxy in the sandbox on 127.0.0.1:{port}: max_tokens ≤ {self.record.max_output_tokens}, thinking disabled")

    def _runner_command(self, say: Callable[[str], None]) -> str:
        """How the runner starts in the capture folder: on the sandbox's own openenv when it has
        one, else on the host's bundle, uploaded and unpacked there first."""
        probe = self._sandbox.exec(probe_script(), timeout=120)
        found = parse_probe(probe.exit_code, probe.stdout, probe.stderr)
        folder = shlex.quote(self.folder)
        if found.has_capture_layer:
            self.record.openenv_version, self.record.openenv_from = found.openenv, "sandbox"
            say(f"openenv {found.openenv} is in the sandbox ({found.command}): nothing to install")
            return f"{found.command} capture_policy.py {folder}"
        bundle, summary = bundle_for(found, say)
        fetched = f"; {', '.join(summary['fetched'])} built for it" if summary["fetched"] else ""
        say(f"the sandbox's {found.describe()} has no openenv ≥ 0.10: uploading the capture bundle "
            f"({summary['files']} files, {summary['bytes'] / 1e6:.1f} MB{fetched}); nothing is installed")  # fmt: skip
        if summary["left_out"]:
            say(f"left out of the bundle (no wheel for {found.tag}): {'; '.join(summary['left_out'])}")
        self._unpack(bundle, found)
        self.record.openenv_version, self.record.openenv_from = _host_openenv(), "bundle"
        return f"{found.command} -I -S -c {shlex.quote(_LAUNCH)} {folder}"

    def _unpack(self, bundle: Path, found: SandboxPython) -> None:
        """The bundle into the capture folder, with the sandbox's ``tar`` or, lacking it, its Python."""
        remote = self._path(BUNDLE)
        upload = getattr(self._sandbox, "upload_file", None)
        if upload is not None:
            upload(bundle, remote)
        else:
            self._sandbox.write_bytes(remote, bundle.read_bytes())
        extract = f"import tarfile; tarfile.open({BUNDLE!r}).extractall('.')"
        script = (f"cd {shlex.quote(self.folder)} && if command -v tar >/dev/null 2>&1; then tar -xzf {BUNDLE}; "
                  f"else {found.command} -I -S -c {shlex.quote(extract)}; fi && rm -f {BUNDLE}")  # fmt: skip
        unpacked = self._sandbox.exec(script, timeout=UNPACK_TIMEOUT_S)
        if unpacked.exit_code != 0:
            said = last_line(unpacked.stderr) or last_line(unpacked.stdout) or f"exit code {unpacked.exit_code}"
            raise CaptureFailed(f"unpacking the capture bundle in the sandbox failed: {_text(said, MAX_REASON)}")

    def _wait_for(self, names: tuple[str, ...], timeout_s: float, what: str) -> tuple[str, dict[str, Any]]:
        """(the first of ``names`` the runner wrote, its JSON), waiting inside the sandbox a few
        seconds per request; CaptureFailed when the runner ended without it, or on timeout."""
        tests = " ".join(f"[ -e {shlex.quote(self._path(name))} ] && {{ echo {name}; head -c {MAX_SMALL_BYTES} "
                         f"{shlex.quote(self._path(name))}; exit 0; }};" for name in names)  # fmt: skip
        script = f"i=0; while [ $i -lt 25 ]; do {tests} i=$((i+1)); sleep 0.2; done; echo waiting"
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._sandbox.exec(script, timeout=60)
            head, _, rest = reply.stdout.partition("\n")
            if head.strip() in names:
                try:
                    data = json.loads(rest)
                except ValueError:
                    data = None
                if not isinstance(data, dict):
                    raise CaptureFailed(f"the capture proxy in the sandbox wrote an unreadable {head.strip()}")
                return head.strip(), data
            if self._job is not None and self._job.poll() is not None:
                raise CaptureFailed(f"the capture proxy in the sandbox ended before its {what}: {self._log_tail()}")
            if what == "start" and self._cancel.is_set():  # the export must still finish on a cancelled episode
                raise CaptureFailed("cancelled")
            if time.monotonic() > deadline:
                raise CaptureFailed(f"the capture proxy in the sandbox did not finish its {what} within {timeout_s:g} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        """The runner log's last line: where a traceback says why."""
        reply = self._sandbox.exec(f"tail -c 4000 {shlex.quote(self._path(policy.LOG))}", timeout=60)
        return _text(last_line(reply.stdout), MAX_REASON) or "(no output)"

    # --- the end ----------------------------------------------------------------------------
    def training_trace(self):
        """Stop the capture, bring its files to the host, and return openenv's ``TrainingTrace``
        (validated by openenv's model) or None with the reason in the record."""
        if self.session_id is None or self._stopped:
            return None
        self._stopped = True
        self._sandbox.exec(f": > {shlex.quote(self._path(policy.STOP))}", timeout=60)
        _, done = self._wait_for((policy.DONE,), DONE_TIMEOUT_S, "export")
        self._save_requests()
        if isinstance(done.get("validation"), list):
            self.record.validation = [_text(item) for item in done["validation"][:200]]
        if isinstance(done.get("not_trainable_because"), str):
            self.record.not_trainable_because = _text(done["not_trainable_because"])
        if not self.record.trainable:
            return None
        data = self._download(policy.TRAINING, MAX_TRAINING_BYTES)
        if data is None:
            self.record.not_trainable_because = self.record.not_trainable_because or "not trainable: the capture saw no model call"
            return None
        from pydantic import ValidationError

        TrainingTrace = policy.import_openenv("openenv.core.harness.training").TrainingTrace

        try:
            trace = TrainingTrace.model_validate_json(data)
        except ValidationError as exc:
            self.record.not_trainable_because = f"the sandbox's training trace is not openenv's TrainingTrace: {_text(str(exc).splitlines()[0])}"
            return None
        self.record.training_turns = len(trace.turns)
        return trace

    def _download(self, name: str, limit: int) -> bytes | None:
        """A file of the runner's folder, refused past ``limit`` bytes; None when it is absent."""
        try:
            return self._sandbox.download(self._path(name), limit)
        except FileNotFoundError:
            return None
        except FileTooLarge as exc:
            raise CaptureFailed(f"the sandbox's {name} is {exc.size} bytes, past the {limit >> 20} MB cap: not downloaded") from None

    def _save_requests(self) -> None:
        """``run.requests.jsonl`` on the host: the runner's summaries, each line a JSON object, scrubbed."""
        data = self._download(policy.REQUESTS, MAX_REQUESTS_BYTES) or b""
        lines = []
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                lines.append(self._scrub(json.dumps(item, ensure_ascii=False)) + "\n")
        if lines:
            self._requests_path.write_text("".join(lines), encoding="utf-8")
        self.request_count = len(lines)

    def stop(self) -> None:
        """End the runner (the sandbox's deletion would too); never raises."""
        job, self._job = self._job, None
        if job is None:
            return
        try:
            if job.poll() is None:
                job.kill()
        except Exception:  # noqa: BLE001 - the sandbox is deleted next, and the runner with it
            pass


def _text(value: object, limit: int = 500) -> str:
    """A string the sandbox wrote, bounded (the scrubber runs where it is shown or saved)."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
