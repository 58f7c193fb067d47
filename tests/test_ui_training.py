"""The viewer's Training tab: ``run.training.json`` (openenv's TrainingTrace, made here with
openenv's own classes) shown per model call, validated by openenv, linked both ways to the
timeline rows each call produced."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.color import Color
from textual.widgets import Sparkline

from smoldata_tui.ui.training_data import (
    NO_TRAINING_BESIDE,
    ToolCall,
    ToolUseRow,
    TurnSummary,
    link_turns,
    load_training,
    turn_of_event,
)
from smoldata_tui.ui.widgets.training_panel import TrainingPanel, TurnTable

from .conftest import SAMPLES
from .test_ui_helpers import loaded, replay_app, screen_lines, wait_for
from .training_fixture import training_trace_for, write_training

WIDE = (150, 50)
# clean_pass.jsonl: 12 events, steps 1-4; its tool_use rows are events 1 (bash), 4 (bash), 7 (write).
TOOL_ROWS = [1, 4, 7]


def episode_with_training(tmp_path: Path, **options) -> Path:
    trace = tmp_path / "run.jsonl"
    shutil.copy(SAMPLES / "clean_pass.jsonl", trace)
    write_training(trace, training_trace_for(trace, **options))
    return trace


async def open_training_tab(pilot) -> TrainingPanel:
    screen = await loaded(pilot)
    await pilot.press("5")
    panel = screen.query_one(TrainingPanel)
    await wait_for(pilot, lambda: panel.loaded, timeout=180, what="the training trace to be read")
    await pilot.pause()
    return panel


def shown(app) -> str:
    return "\n".join(screen_lines(app))


async def test_each_model_call_is_summarised_with_its_tokens_logprobs_mask_and_sampling(tmp_path):
    trace = episode_with_training(tmp_path, masked_turns=frozenset({3}))
    expected = json.loads(trace.with_name("run.training.json").read_text())["turns"]
    app = replay_app(trace)
    async with app.run_test(size=WIDE) as pilot:
        panel = await open_training_tab(pilot)
        text = shown(app)
        table = panel.query_one(TurnTable)
        assert table.row_count == 4
        rows = [[cell.plain for cell in table.get_row_at(row)] for row in range(4)]
        for row, turn in zip(rows, expected):
            logps = turn["per_token_logps"]
            assert row[4] == f"{len(turn['prompt_token_ids']):,}" and row[5] == f"{len(turn['completion_token_ids']):,}"
            assert row[6] == f"{sum(logps) / len(logps):.3f}" and row[7] == f"{min(logps):.3f}"
        assert [row[2] for row in rows] == ["1", "2", "3", "4"]  # the step each call became
        assert [row[8] for row in rows] == ["100%", "100%", "100%", "0%"]  # turn 4 is context only
        assert [row[9] for row in rows] == ["bash", "bash", "write", "-"]
        # The rollout graph's gutter: one conversation, turn 4 excluded from training; the ledger reconciles all.
        assert [row[0] for row in rows] == ["A● ", "A│ ", "A│ ", "A│×"]
        assert [row[3] for row in rows] == ["ok"] * 4 and "ledger 4 of 4 calls matched" in text
        assert "4 model calls" in text and "native_tool_calls 3" in text
        assert "openenv's validation: no findings" in text
        # The first turn's detail: requested vs applied sampling, its tool call and where it links.
        assert "temperature" in text and "0.55 → 1.0" in text and "0.95 → 1.0" in text
        assert "call_JbIDiMyNmI1p5VT19UdsG4im" in text and "step 1, 1 tool row(s) (by callID)" in text
        sparks = {spark.id: list(spark.data) for spark in panel.query(Sparkline)}
        assert sparks["training-tokens"] == [float(len(turn["completion_token_ids"])) for turn in expected]
        assert len(sparks["training-logprob"]) == 4 and all(value < 0 for value in sparks["training-logprob"])


async def test_a_turn_takes_the_timeline_to_its_rows_and_a_row_back_to_its_turn(tmp_path):
    app = replay_app(episode_with_training(tmp_path))
    async with app.run_test(size=WIDE) as pilot:
        panel = await open_training_tab(pilot)
        screen = app.screen
        table = panel.query_one(TurnTable)
        table.focus()
        await pilot.press("j", "j", "enter")  # the third model call: the write
        await pilot.pause()
        assert screen.timeline.cursor_event == TOOL_ROWS[2] and app.focused is screen.timeline
        await pilot.press("enter")  # the detail of that row, then back: 'm' from a timeline row
        screen.timeline.focus()
        screen.timeline.go_to_event(TOOL_ROWS[1] + 1)  # the step_finish of step 2
        await pilot.press("m")
        await pilot.pause()
        assert screen.query_one("#side").active == "training-tab" and table.cursor_row == 1
        assert "Turn 2" in shown(app)
        screen.timeline.go_to_event(10)  # the final answer's text (step 4): the fourth call, by order
        screen.timeline.focus()
        await pilot.press("m")
        await pilot.pause()
        assert table.cursor_row == 3
        table.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert screen.model.record(screen.timeline.cursor_event).step == 4


async def test_without_a_training_trace_the_tab_says_so_and_m_says_why(tmp_path):
    trace = tmp_path / "run.jsonl"
    shutil.copy(SAMPLES / "clean_pass.jsonl", trace)
    app = replay_app(trace)
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        panel = await open_training_tab(pilot)
        text = shown(app)
        assert NO_TRAINING_BESIDE in text and "run.training.json is not beside the trace" in text
        assert not any(spark.display for spark in panel.query(Sparkline))
        app.screen.timeline.focus()
        await pilot.press("m")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert any("no readable run.training.json beside this trace" in message for message in said), said
        assert not any("No model call" in message for message in said)  # there is no training trace to match
        # A live episode writes its training trace when it ends: the tab reads it when it appears.
        write_training(trace, training_trace_for(trace))
        await wait_for(pilot, lambda: panel.view is not None, timeout=60, what="the training trace to be picked up")
        assert panel.query_one(TurnTable).row_count == 4


async def test_capture_validation_failures_are_findings_of_their_turns(tmp_path):
    trace = episode_with_training(tmp_path)
    path = trace.with_name("run.training.json")
    document = json.loads(path.read_text())
    document["turns"][1]["per_token_logps"].pop()  # one logprob short: credit shifts onto the wrong tokens
    document["turns"][2]["per_token_logps"][0] = 0.5  # a positive logprob
    document["turns"][3]["response"]["choices"][0]["finish_reason"] = "length"  # cut off by the cap
    path.write_text(json.dumps(document))
    app = replay_app(trace)
    async with app.run_test(size=WIDE) as pilot:
        panel = await open_training_tab(pilot)
        view = panel.view
        assert {(p.turn, p.level) for p in view.problems} == {(1, "FATAL"), (2, "FATAL"), (3, "WARN")}
        assert "logprob_misalign" in next(p.detail for p in view.problems if p.turn == 1)
        assert "positive_logprob" in next(p.detail for p in view.problems if p.turn == 2)
        assert next(p.code for p in view.problems if p.turn == 3) == "truncated_turn"
        text = shown(app)
        assert "3 capture finding(s), 2 fatal" in text
        panel.query_one(TurnTable).focus()
        await pilot.press("j")
        await pilot.pause()
        assert "✗ schema  turn 2" in shown(app) and "logprob_misalign" in shown(app)
        # A fatal turn's number is in the theme's error colour, and follows a theme switch.
        table = panel.query_one(TurnTable)
        for theme in ("textual-dark", "solarized-light"):
            app.theme = theme
            await pilot.pause(0.2)
            error = Color.parse(app.theme_variables["text-error"]).rich_color
            assert table.get_row("1")[1].style.color == error, theme


async def test_model_text_in_the_training_trace_is_inert(tmp_path):
    trace = episode_with_training(tmp_path)
    path = trace.with_name("run.training.json")
    document = json.loads(path.read_text())
    call = document["turns"][0]["response"]["choices"][0]["message"]["tool_calls"][0]
    call["function"]["name"] = "[bold red]evil[/] \x1b[2J"
    document["turns"][0]["node_id"] = document["turns"][0]["metadata"]["node_id"] = "[link=x]n0\x07"
    path.write_text(json.dumps(document))
    app = replay_app(trace)
    async with app.run_test(size=WIDE) as pilot:
        await open_training_tab(pilot)
        text = shown(app)
    assert "[bold red]evil[/] ␛[2J" in text and "[link=x]n0␇" in text
    assert "\x1b[2J" not in text


@pytest.mark.parametrize("content, code", [("{not json", "not_json"), ('{"schema_version": 1}', "not_a_training_trace")])
def test_a_broken_file_is_one_fatal_finding(tmp_path, content, code):
    path = tmp_path / "run.training.json"
    path.write_text(content)
    view = load_training(path)
    assert view.turns == [] and [p.code for p in view.problems] == [code] and view.problems[0].level == "FATAL"
    assert load_training(tmp_path / "absent.training.json") is None


def _turn(index: int, *call_ids: str) -> TurnSummary:
    return TurnSummary(index, f"n{index}", 10, 5, -0.1, -0.3, 5, None, {}, {}, [ToolCall(i, "bash") for i in call_ids])


def test_turns_link_by_callid_first_then_by_order():
    # A side call with no tools first (title generation), then calls whose ids name their rows.
    turns = [_turn(0), _turn(1, "a"), _turn(2, "c", "d"), _turn(3)]
    rows = [ToolUseRow(2, 1, "a"), ToolUseRow(5, 2, "b"), ToolUseRow(8, 3, "c"), ToolUseRow(9, 3, "d")]
    # "b" (step 2) is named by no turn and no turn lands on step 2: it links to nothing.
    links = link_turns(turns, rows, {1, 2, 3, 4})
    assert [(link.step, link.events, link.how) for link in links] == [
        (1, (), "order"), (1, (2,), "callID"), (3, (8, 9), "callID"), (4, (), "order")]  # fmt: skip
    assert turn_of_event(links, 9, 3) == 2 and turn_of_event(links, 5, 2) is None and turn_of_event(links, 11, 4) == 3
    assert turn_of_event(links, 2, 1) == 1  # the row's own call, not the side call placed on its step
    assert link_turns([_turn(0), _turn(1)], [], {1})[1].how == "none"


def test_training_tab_snapshot(snap_compare, tmp_path):
    trace = episode_with_training(tmp_path)

    async def run_before(pilot):
        await open_training_tab(pilot)

    assert snap_compare(replay_app(trace), terminal_size=WIDE, run_before=run_before)



async def test_the_palette_opens_the_training_turn_of_a_row(tmp_path):
    from textual.command import CommandPalette

    app = replay_app(episode_with_training(tmp_path))
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        panel = screen.query_one(TrainingPanel)
        await wait_for(pilot, lambda: panel.loaded, timeout=180, what="the training trace to be read")
        screen.timeline.go_to_event(TOOL_ROWS[2])
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"model call that produced")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.query_one("#side").active == "training-tab", what="the training tab")
        assert panel.query_one(TurnTable).cursor_row == 2
