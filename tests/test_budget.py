"""The budget forecast (training/budget.py): each step's prompt against the served model's context
window and its completion against training's 4096-token cap, as findings; the window given with
--context-window or read from the endpoint's /v1/models; none where it is unknown."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.training.budget import budget_findings, endpoint_context_window, training_budget_line

from .conftest import SAMPLES, run_cli


def trace(tmp_path: Path, *steps: tuple[int, int]) -> Path:
    """One step per (prompt tokens, completion tokens)."""
    builder = TraceBuilder()
    for prompt, completion in steps:
        builder.step_start()
        builder.text("thinking aloud")
        builder.step_finish("stop", input_tokens=prompt, output_tokens=completion)
    path = tmp_path / "run.jsonl"
    path.write_bytes(builder.dumps())
    return path


def window(tokens: int | None) -> EpisodeMetadata:
    return EpisodeMetadata(capture={"enabled": True, "context_window": tokens} if tokens else {})


def test_a_completion_over_trainings_cap_is_one_training_would_have_cut(tmp_path):
    path = trace(tmp_path, (9000, 300), (9400, 6000), (9500, 4096))
    found = budget_findings(path, window(None))
    assert [(finding.kind, finding.line) for finding in found] == [("budget_completion_cut", 6)]
    assert "step 2 wrote 6,000 completion tokens" in found[0].message and "4,096" in found[0].message


def test_the_context_window_when_known_and_none_when_not(tmp_path):
    path = trace(tmp_path, (9000, 300), (15000, 1500), (16384, 10))
    found = budget_findings(path, window(16384))
    assert [(finding.kind, finding.line) for finding in found] == [("budget_context_cut", 6), ("budget_context_full", 9)]
    assert "cut it at 1,384" in found[0].message and "could not run this turn" in found[1].message
    assert budget_findings(path, window(None)) == [] and budget_findings(path, None) == []


def test_no_forecast_finding_on_the_shipped_recordings():
    from smoldata_tui.store.metadata_reader import load_metadata

    for path in sorted(SAMPLES.glob("**/*.jsonl")):
        if not path.name.endswith(".proxy.jsonl"):
            assert budget_findings(path, load_metadata(path.with_suffix(".meta.json"))) == [], path


class _Models(BaseHTTPRequestHandler):
    answer: bytes = b""

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.answer)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(("answer", "expected"), [
    ({"data": [{"id": "other", "max_model_len": 4096}, {"id": "acme/coder", "max_model_len": 32768}]}, 32768),
    ({"data": [{"id": "served-name", "max_model_len": 8192}]}, 8192),  # the only model served
    ({"data": [{"id": "acme/coder"}]}, None),  # an endpoint that does not say
    ({"data": [{"id": "acme/coder", "max_model_len": "big"}]}, None),
    ([1, 2], None),
])  # fmt: skip
def test_the_window_from_the_endpoints_models(answer, expected):
    handler = type("Models", (_Models,), {"answer": json.dumps(answer).encode()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert endpoint_context_window(f"http://127.0.0.1:{server.server_port}/v1", "acme/coder", "key") == expected
    finally:
        server.shutdown()
        server.server_close()
    assert endpoint_context_window(f"http://127.0.0.1:{server.server_port}/v1", "acme/coder", None, timeout=1) is None


@pytest.mark.parametrize(("option", "said"), [
    (["--context-window", "0"], "--context-window must be a positive whole number"),
    (["--context-window", "lots"], "--context-window must be a positive whole number"),
    (["--context-window", "8192", "--no-capture"], "cannot be used with --no-capture"),
])  # fmt: skip
def test_a_bad_context_window_is_a_usage_error(tmp_path, option, said):
    done = run_cli("run", "--task", "sales-top-region", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}",
                   "--headless", "--save", str(tmp_path), *option)  # fmt: skip
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_live_run_with_a_small_window_names_the_turns_training_would_cut(tmp_path, standin_opencode):
    """The stand-in OpenCode through the capture proxy, the replay model; its prompts (OpenCode's own
    recorded system prompt and tool schemas) are ~9,000 tokens. The test is about our forecast."""
    done = run_cli("run", "--task", "sales-top-region", "--model", f"replay:{SAMPLES / 'real' / 'passing_run.jsonl'}",
                   "--headless", "--save", str(tmp_path), "--context-window", "9100", "--sampling", "temperature=0.5",
                   "--opencode-bin", str(standin_opencode), timeout=300)  # fmt: skip
    final = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert final["context_window"] == 9100 and final["sampling"]["temperature"] == 0.5 and final["sampling"]["top_p"] == 1.0
    assert "context window 9,100 tokens (given)" in done.stderr
    run_dir = Path(final["trace"]).parent
    capture = json.loads((run_dir / "run.meta.json").read_text())["capture"]
    assert capture["context_window"] == 9100 and capture["context_window_from"] == "given"
    checked = json.loads(run_cli("check", "--json", final["trace"]).stdout)
    budget = [finding for finding in checked["findings"] if finding["kind"].startswith("budget_")]
    assert budget and {finding["kind"] for finding in budget} <= {"budget_context_cut", "budget_context_full"}
    assert sum(final["finding_codes"].get(kind, 0) for kind in ("budget_context_cut", "budget_context_full")) == len(budget)
    turns = json.loads((run_dir / "run.training.json").read_text())["turns"]
    line = training_budget_line(run_dir / "run.training.json", [len(turn["prompt_token_ids"]) for turn in turns],
                                [len(turn["completion_token_ids"]) for turn in turns])  # fmt: skip
    assert line.startswith("budget: prompt ≤ ") and "/9,100 (" in line and line.endswith("/4,096"), line
