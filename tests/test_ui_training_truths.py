"""The Training tab says what happened: why there is no ``run.training.json`` (capture off, failed,
an endpoint without token ids, or nothing known), that the engine's defaults applied where no
sampling was sent, and each turn's step as the training ledger matched it on an episode whose
model repeats its call ids. The real viewer via Pilot; ``run.meta.json``'s capture records are
made by the code that makes them in a live episode."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from smoldata_tui.session.capture_link import capture_not_running
from smoldata_tui.session.episode_spec import CAPTURE_STAGE, EpisodeFailed
from smoldata_tui.store.metadata import EpisodeMetadata, metadata_path_for
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.training.capture import CaptureRecord
from smoldata_tui.training.capture_policy import NOT_TRAINABLE
from smoldata_tui.ui.widgets.training_panel import TurnTable

from .conftest import SAMPLES
from .test_ui_helpers import replay_app
from .test_ui_training import WIDE, open_training_tab, shown
from .training_fixture import training_trace_for, write_training


def episode(tmp_path: Path, capture: dict | None) -> Path:
    """clean_pass.jsonl as a saved episode without run.training.json; ``capture`` its record (None: no run.meta.json)."""
    trace = tmp_path / "run.jsonl"
    shutil.copy(SAMPLES / "clean_pass.jsonl", trace)
    if capture is not None:
        save_metadata(metadata_path_for(trace), EpisodeMetadata(task="sales-top-region", status="finished",
                                                                exit_code=0, trace=trace.name, capture=capture))  # fmt: skip
    return trace


async def training_tab_text(trace: Path) -> str:
    """The Training tab's summary as shown (its lines wrap beside the timeline's on the screen)."""
    app = replay_app(trace)
    async with app.run_test(size=WIDE) as pilot:
        panel = await open_training_tab(pilot)
        assert panel.view is None
        summary = panel.query_one("#training-summary")
        assert summary.region.height >= 2 and summary.region.width > 0  # on screen, in the open tab
        return " ".join(str(summary.render()).split())


async def test_capture_off_is_recorded_without_capture(tmp_path):
    text = await training_tab_text(episode(tmp_path, {"enabled": False}))  # what --no-capture saves
    assert "no training trace: recorded without capture" in text and "capture was off (--no-capture)" in text


async def test_capture_on_with_an_endpoint_without_token_ids_says_so(tmp_path):
    record = CaptureRecord(level="text", logprobs_mode="none", not_trainable_because=NOT_TRAINABLE,
                           probe_findings=["no token ids in the response"])  # fmt: skip
    text = await training_tab_text(episode(tmp_path, record.to_json()))
    assert ("captured, but the endpoint returned no token ids: nothing training can use "
            "(openenv: capture level text; no token ids in the response)") in text  # fmt: skip
    assert "recorded without capture" not in text


async def test_a_failed_capture_says_why(tmp_path):
    reason = "the sandbox cannot reach the capture proxy at 127.0.0.1:4000 on this host"
    text = await training_tab_text(episode(tmp_path, capture_not_running(EpisodeFailed(CAPTURE_STAGE, reason), "host")))
    assert f"capture failed: {reason}" in text and "recorded without capture" not in text


async def test_without_run_meta_json_nothing_is_claimed_about_the_capture(tmp_path):
    text = await training_tab_text(episode(tmp_path, None))
    assert "no training trace beside this trace" in text and "recorded without capture" not in text


def repeated_id_episode(tmp_path: Path) -> Path:
    """clean_pass.jsonl with every call numbered call_0, as some models do in every turn, and its training trace."""
    trace = tmp_path / "run.jsonl"
    trace.write_text(re.sub(r'"callID":"[^"]+"', '"callID":"call_0"', (SAMPLES / "clean_pass.jsonl").read_text()))
    write_training(trace, training_trace_for(trace))
    return trace


async def columns_shown(trace: Path) -> tuple[dict[str, list[str]], str]:
    """The turn table's graph, step and ledger columns, and the screen with turn 2's detail."""
    app = replay_app(trace)
    async with app.run_test(size=WIDE) as pilot:
        panel = await open_training_tab(pilot)
        table = panel.query_one(TurnTable)
        table.focus()
        await pilot.press("j")  # turn 2's detail
        await pilot.pause()
        rows = [[cell.plain for cell in table.get_row_at(row)] for row in range(table.row_count)]
        return {name: [row[column] for row in rows] for name, column in (("graph", 0), ("step", 2), ("ledger", 3))}, shown(app)


async def test_turns_with_repeated_call_ids_link_to_the_steps_they_made(tmp_path):
    columns, text = await columns_shown(repeated_id_episode(tmp_path))
    assert columns["step"] == ["1", "2", "3", "4"] and "→ step 2, 1 tool row(s) (by callID)" in text


async def test_a_turn_the_ledger_leaves_out_is_linked_by_the_tab_and_the_others_keep_their_ledger_cells(tmp_path):
    """The ledger leaves out a turn that breaks TrainingTrace's rules (turn 3's loss mask): the tab
    links that one itself, still one row of the reused id per turn, and the ledger's marks and
    rollout graph stay on the turns they are about (found by node id, not by position)."""
    trace = repeated_id_episode(tmp_path)
    path = trace.with_name("run.training.json")
    document = json.loads(path.read_text())
    document["turns"][2]["loss_mask"].append(0)
    path.write_text(json.dumps(document))
    columns, text = await columns_shown(trace)
    assert columns["step"] == ["1", "2", "3", "4"] and "→ step 2, 1 tool row(s) (by callID)" in text
    assert columns["ledger"] == ["ok", "ok", "-", "ok"], columns
    assert columns["graph"][2] == "" and columns["graph"][3].startswith(("A", "B")), columns


async def test_a_turn_without_sampling_says_the_engines_defaults_applied(tmp_path):
    trace = episode(tmp_path, None)
    training = json.loads(training_trace_for(trace).model_dump_json())
    for turn in training["turns"]:
        del turn["metadata"]["sampling_params"], turn["metadata"]["requested_sampling_params"]
    trace.with_name("run.training.json").write_text(json.dumps(training))
    app = replay_app(trace)
    async with app.run_test(size=WIDE) as pilot:
        await open_training_tab(pilot)
        assert "none sent, so the serving engine's own defaults applied" in shown(app)


async def summary_of_captured_episode(tmp_path: Path, sampling: dict | None) -> str:
    tmp_path.mkdir()
    trace = episode(tmp_path, CaptureRecord(level="tokens", trainable=True, training_trace="run.training.json",
                                            sampling=sampling).to_json())  # fmt: skip
    write_training(trace, training_trace_for(trace))
    app = replay_app(trace)
    async with app.run_test(size=WIDE) as pilot:
        panel = await open_training_tab(pilot)
        assert panel.view is not None and len(panel.view.turns) == 4
        return str(panel.query_one("#training-summary").render())


async def test_the_summary_says_whether_sampling_was_sent(tmp_path):
    from smoldata_tui.training.sampling import parse_sampling

    assert "sampling none sent, so the serving engine's own defaults applied" in await summary_of_captured_episode(
        tmp_path / "defaults", None)
    policy = parse_sampling(["temperature=0.3"])  # as --sampling sets it on the capture session
    assert "sampling training's policy: temperature 0.3, top_p 1" in await summary_of_captured_episode(
        tmp_path / "policy", policy)
