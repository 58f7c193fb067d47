"""Training's capture (the default) on a Daytona sandbox made from a plain image: the real ``daytona``
SDK against the local server, whose "plain" sandboxes have only Debian's own externally managed
``/usr/bin/python3`` (no openenv, no host Python, no ``python``, ``/usr`` read-only), the real
OpenCode, the replay model in vLLM's token-id dialect and the real grader. The host brings the
capture runner's modules as a bundle; nothing is installed with pip. When the capture proxy cannot
start, the episode ends in error and says why, whole."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from smoldata_tui.commands.headless import HeadlessPrinter, summary_json
from smoldata_tui.sandbox.daytona import DaytonaSettings
from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.replay.model_endpoint import ModelEndpoint
from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.training import capture_bundle, capture_policy, capture_wheels
from smoldata_tui.training.capture import describe_capture

from .conftest import SAMPLES
from .daytona_local.fixtures import cached_opencode_bin_dir, serve
from .daytona_local.server import LocalDaytona
from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_daytona_episode import FAST
from .test_episode_local import Recorder
from .test_training_capture import MODEL, SECRET, agent_requests, assert_trainable_episode, replay_endpoint

pytestmark = pytest.mark.usefixtures("opencode_bin")
PLAIN = "docker.io/library/debian:bookworm"
NO_PYTHON = "docker.io/library/debian:bookworm-slim-without-python"
CAPTURE_STAGE_BOUND_S = 90.0  # generous for a loaded 2-CPU machine; the measured cold stage is in the report


@pytest.fixture
def plain_daytona(tmp_path, monkeypatch):
    """The local Daytona server with the plain image kinds, and a cold bundle cache: the host makes
    the bundle in this test, as on a first run. OpenCode is bound in as if the image had it: its
    upload is tested elsewhere (test_daytona_episode) and is not what this file is about."""
    monkeypatch.setattr(capture_bundle, "cache_dir", lambda: tmp_path / "bundle-cache")
    monkeypatch.setattr(capture_bundle, "_collected", None)
    yield from serve(LocalDaytona(opencode_bin_dir=cached_opencode_bin_dir(), images_with_opencode={PLAIN, NO_PYTHON},
                                  sandbox_base_dir=tmp_path / "daytona-sandboxes",
                                  image_kinds={PLAIN: "plain", NO_PYTHON: "no-python"}), monkeypatch)  # fmt: skip


class Observers(Recorder):
    """The test's recorder and smoldata-tui's headless printer, both told everything."""

    def __init__(self) -> None:
        super().__init__()
        self.out, self.err = io.StringIO(), io.StringIO()
        self.printer = HeadlessPrinter(self.out, self.err)

    def opened(self, trace_path: Path) -> None:
        super().opened(trace_path)
        self.printer.opened(trace_path)

    def stage(self, name: str, state: str, elapsed_s: float, message: str = "") -> None:
        super().stage(name, state, elapsed_s, message)
        self.printer.stage(name, state, elapsed_s, message)

    def received(self, data: bytes) -> None:
        super().received(data)
        self.printer.received(data)


def run_episode(endpoint: ModelEndpoint, image: str, save: Path, during=None):
    """One Daytona episode with capture on; ``during()`` runs once the agent has started, before
    the episode ends, and what it returns is kept."""
    task = load_task(default_task_root() / "sales-top-region")
    recorder = Observers()
    spec = EpisodeSpec(task=task, endpoint=endpoint, save_dir=save, timeout_s=240, backend="daytona",
                       daytona=DaytonaSettings(image=image, **FAST))  # fmt: skip
    episode = Episode(spec, recorder)
    seen: dict = {}
    if during is not None:
        def watch():
            while not any(name == "agent running" and state == "started" for name, state, _ in recorder.stages):
                time.sleep(0.05)
            seen.update(during())

        threading.Thread(target=watch, daemon=True).start()
    return episode.run(), recorder, seen


def said(recorder: Recorder, stage: str) -> list[str]:
    return [message for name, _, message in recorder.stages if name == stage and message]


def test_a_plain_debian_image_captures_with_the_hosts_bundle_and_is_trainable(tmp_path, plain_daytona):
    endpoint, server = replay_endpoint(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"))

    def look_inside():  # while the agent runs: the sandbox is the plain image, untouched
        (sandbox_id,) = plain_daytona.sandbox_ids()
        local = plain_daytona.local_sandbox(sandbox_id)

        def run(command: str):
            return local.exec(command, timeout=60)

        return {
            "externally_managed": run("python3 -c 'import sysconfig, os; print(os.path.isfile(os.path.join("
                                      "sysconfig.get_path(\"stdlib\"), \"EXTERNALLY-MANAGED\")))'").stdout.strip(),
            "python_alias": run("command -v python").exit_code,
            "system_openenv": run("python3 -c 'import openenv'").exit_code,
            "system_gradio": run("python3 -c 'import gradio'").exit_code,
            "usr_writable": run("touch /usr/lib/python3/dist-packages/x").exit_code,
            "bundle_top_levels": run("ls /tmp/.smoldata-capture-*/site").stdout.split(),
            "runner": run("ps -eo args | grep '[c]apture_policy'").stdout,
        }

    result, recorder, inside = run_episode(endpoint, PLAIN, tmp_path / "runs", during=look_inside)
    assert result.error is None and result.status == "finished", (result.error, recorder.stages)
    assert result.grade.env_reward == 1.0
    # Trainable as training's wrapper sees it: one turn per model call, native_tool_calls by the seed's rule.
    metadata = assert_trainable_episode(result, server, expected_calls=3)
    capture = metadata["capture"]
    assert capture["where"] == "sandbox" and capture["openenv_from"] == "bundle"
    assert capture["openenv_version"] == capture_bundle._host_openenv()
    assert capture["training_turns"] == len(agent_requests(server))
    assert describe_capture(capture) == "tokens: trainable"

    # The sandbox was the plain image: Debian's externally managed python3 only, nothing installed in it.
    assert inside["externally_managed"] == "True" and inside["python_alias"] != 0, inside
    assert inside["system_openenv"] != 0 and inside["system_gradio"] != 0 and inside["usr_writable"] != 0, inside
    assert "-I -S -c" in inside["runner"], inside  # the runner, isolated from the system Python
    tops = set(inside["bundle_top_levels"])
    assert {"openenv", "fastapi", "pydantic", "pydantic_core", "uvicorn", "httpx"} <= tops, tops
    assert not any(name.startswith(("gradio", "pip")) for name in tops), tops
    messages = said(recorder, "capture proxy")
    assert any("uploading the capture bundle" in message and "nothing is installed" in message for message in messages), messages
    assert not any("pip" in message for message in messages), messages

    seconds = metadata["timings"]["capture proxy"]
    print(f"\ncapture proxy stage on a cold sandbox with a cold bundle cache: {seconds:.2f} s")
    assert seconds <= CAPTURE_STAGE_BOUND_S
    assert plain_daytona.sandbox_ids() == []


def test_without_python_in_the_sandbox_the_episode_errors_and_says_capture_failed(tmp_path, plain_daytona):
    endpoint, _server = replay_endpoint(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"))
    result, recorder, _ = run_episode(endpoint, NO_PYTHON, tmp_path / "runs")
    assert result.status == "error" and result.error.stage == "capture proxy", (result.status, result.error)
    reason = "the sandbox has no python3 (nor python) on its PATH, so the capture proxy cannot run in it: run with --no-capture"
    failed = [message for name, state, message in recorder.stages if name == "capture proxy" and state == "failed"]
    assert failed == [f"CaptureFailed: {reason}"]
    assert_failure_saved(result, recorder, f"CaptureFailed: {reason}")
    assert plain_daytona.sandbox_ids() == []


def test_a_runner_that_cannot_reach_the_model_fails_the_episode_with_its_whole_reason(tmp_path, plain_daytona):
    """The bundle's runner starts on the plain image (its imports work) and its probe is refused:
    the reason comes from inside the sandbox and reaches the stage log and run.meta.json whole."""
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once closed
    endpoint = ModelEndpoint(base_url=f"http://127.0.0.1:{port}/v1", model=MODEL, api_key=SECRET)
    result, recorder, _ = run_episode(endpoint, PLAIN, tmp_path / "runs")
    assert result.status == "error" and result.error.stage == "capture proxy", (result.status, result.error)
    failed = [message for name, state, message in recorder.stages if name == "capture proxy" and state == "failed"]
    assert len(failed) == 1 and failed[0].startswith("CaptureFailed: the capture proxy in the sandbox did not start: "), failed
    assert failed[0].endswith("URLError: <urlopen error [Errno 111] Connection refused>"), failed  # the reason, not cut
    assert_failure_saved(result, recorder, failed[0])


def assert_failure_saved(result, observers: Observers, message: str) -> None:
    """run.meta.json says the capture failed and why (not that it was switched off), and so do its
    readers: the headless stage line and final JSON line, and the viewer's Episode tab."""
    from smoldata_tui.store.metadata_reader import load_metadata
    from smoldata_tui.ui.widgets.episode_panel import metadata_text

    saved = json.loads(result.metadata_path.read_text())
    assert saved["status"] == "error" and saved["error"] == {"stage": "capture proxy", "message": message}
    assert saved["capture"] == {"enabled": True, "where": "sandbox", "failed": message}
    assert "run.training.json" not in os.listdir(result.trace_path.parent)
    assert f"[capture proxy] failed" in observers.err.getvalue() and f": {message}\n" in observers.err.getvalue()
    observers.printer.finish()
    line = summary_json(result, observers.printer)
    assert line["status"] == "error" and line["capture_level"] is None and line["capture_failed"] == message
    problems: list[str] = []
    metadata = load_metadata(result.metadata_path, problems)
    assert problems == []
    shown = metadata_text(metadata, result.metadata_path.name, problems).plain
    assert f"capture          failed: {message}\n" in shown, shown


def test_wheel_tags_that_fit_a_python():
    debian = capture_bundle.SandboxPython("python3", "cpython", (3, 11), "x86_64", "glibc", (2, 36), "cpython-311-x86_64-linux-gnu")
    fits = capture_wheels.tag_fits
    assert fits("cp311-cp311-manylinux_2_17_x86_64", debian)
    assert fits("cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64", debian)
    assert fits("cp38-abi3-manylinux_2_28_x86_64", debian) and fits("py3-none-any", debian)
    assert not fits("cp312-cp312-manylinux_2_17_x86_64", debian)  # another Python
    assert not fits("cp311-cp311-manylinux_2_39_x86_64", debian)  # a newer glibc than the sandbox's
    assert not fits("cp311-cp311-musllinux_1_2_x86_64", debian) and not fits("cp311-cp311-manylinux_2_17_aarch64", debian)
    assert not fits("cp313-abi3-manylinux_2_17_x86_64", debian)  # abi3 from a later Python


def _other_cpythons() -> dict[tuple[int, int], str]:
    """CPythons of other minor versions than ours on this machine (pyenv's), by version."""
    import sys

    found = {}
    for candidate in sorted(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.1[0-9]*/bin/python3")):
        shown = subprocess.run([str(candidate), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True)
        version = tuple(int(part) for part in shown.stdout.split())
        if len(version) == 2 and version != tuple(sys.version_info[:2]):
            found[version] = str(candidate)
    return found


def _probed(python: str) -> capture_bundle.SandboxPython:
    shown = subprocess.run(["bash", "-c", capture_bundle.probe_script()], capture_output=True, text=True,
                           env={"PATH": f"{Path(python).parent}:/usr/bin:/bin"})  # fmt: skip
    return capture_bundle.parse_probe(shown.returncode, shown.stdout, shown.stderr)


NEWER = [python for version, python in _other_cpythons().items() if version > (3, 11)]
OLDER = [python for version, python in _other_cpythons().items() if version < (3, 11)]


@pytest.mark.skipif(not NEWER, reason="no CPython newer than 3.11 on this machine")
def test_a_bundle_for_another_python_brings_its_compiled_files_from_the_index(tmp_path, monkeypatch):
    """The host's pydantic_core is built for its own Python: for another one the host fetches the
    wheel that fits (pip download, cached) and the runner imports openenv's capture layer on it."""
    python = NEWER[0]
    monkeypatch.setattr(capture_bundle, "cache_dir", lambda: tmp_path / "bundle-cache")
    target = _probed(python)
    said_lines: list[str] = []
    bundle, summary = capture_bundle.bundle_for(target, said_lines.append)
    assert any(item.startswith("pydantic_core==") for item in summary["fetched"]), summary
    assert list((tmp_path / "bundle-cache" / "wheels").glob(f"pydantic_core-*-cp{target.version[0]}{target.version[1]}-*.whl"))
    folder = tmp_path / "capture"
    folder.mkdir()
    shutil.copy(capture_policy.__file__, folder / "capture_policy.py")
    subprocess.run(["tar", "-xzf", str(bundle), "-C", str(folder)], check=True)
    suffix = f"cpython-{target.version[0]}{target.version[1]}-"
    assert [path.name for path in (folder / "site" / "pydantic_core").glob("*.so")][0].startswith(f"_pydantic_core.{suffix}")
    (folder / capture_policy.CONFIG).write_text(json.dumps({"llm_url": "http://127.0.0.1:9/v1", "model": MODEL,
                                                            "api_key": "", "max_output_tokens": 4096}))  # fmt: skip
    from smoldata_tui.training.sandbox_capture import _LAUNCH

    subprocess.run([python, "-I", "-S", "-c", _LAUNCH, str(folder)], capture_output=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    reason = json.loads((folder / capture_policy.FAILED).read_text())["reason"]
    assert reason.startswith("engine NOT reachable"), reason  # openenv's probe ran: every import worked


@pytest.mark.skipif(not OLDER, reason="no CPython older than 3.11 on this machine")
def test_a_python_older_than_the_bundles_libraries_need_is_refused_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(capture_bundle, "cache_dir", lambda: tmp_path / "bundle-cache")
    target = _probed(OLDER[0])
    with pytest.raises(capture_policy.CaptureFailed, match=r"is older than the capture runner's libraries need \(Python ≥ 3\.11 for "):
        capture_bundle.bundle_for(target)
    assert not list((tmp_path / "bundle-cache").glob("*.tar.gz"))
