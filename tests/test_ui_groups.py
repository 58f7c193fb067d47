"""The attempt groups on screen: the real app driven by Pilot over a batch folder written as
``smoldata-tui run`` writes one (fleet table → ``a`` → a group → its steps and the diff)."""

from __future__ import annotations

import pytest

from smoldata_tui.ui.screens.diff import DiffScreen
from smoldata_tui.ui.screens.group import GroupScreen
from smoldata_tui.ui.screens.groups import GroupsScreen
from smoldata_tui.ui.screens.help import HelpScreen

from .test_groups import RIGHT, WRONG, _batch, _trace
from .test_ui_fleet import fleet_ready
from .test_ui_helpers import replay_app, screen_lines, wait_for


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_the_fleet_opens_its_groups_most_signal_first_then_a_group_at_its_split(tmp_path, size):
    _batch(tmp_path / "batch", [("same-task", 0, 1.0, _trace(RIGHT)), ("same-task", 1, 1.0, _trace(RIGHT)),
                                ("split-task", 0, 1.0, _trace(RIGHT)), ("split-task", 1, 0.0, _trace(WRONG)),
                                ("split-task", 2, 1.0, _trace(RIGHT, repeat_id=True))])  # fmt: skip
    app = replay_app(tmp_path / "batch")
    async with app.run_test(size=size) as pilot:
        await fleet_ready(pilot, 5)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupsScreen), what="the groups")
        groups = app.screen
        assert [group.task for group in groups.groups] == ["split-task", "same-task"]  # learning signal first
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "no learning signal" in text and "split-task" in text
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the keys")
        assert "Open the group" in "\n".join(screen_lines(app))
        await pilot.press("escape")

        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen), what="one group")
        group = app.screen
        await wait_for(pilot, lambda: group.calls is not None, what="the attempts' calls")
        await pilot.pause()
        assert group.group.first_split["step"] == 2
        text = "\n".join(screen_lines(app))
        assert "first split at step 2" in text and "wrapper rejects attempt 2" in text
        steps = group.query_one("#group-steps")
        assert steps.cursor_row == 1  # the split's step is selected

        await pilot.press("d")  # nothing marked: the first passing against the first failing attempt
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen), what="the diff")
        diff = app.screen
        assert diff.a_path.endswith("split-task-0/run.jsonl") and diff.b_path.endswith("split-task-1/run.jsonl")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is group, what="back to the group")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is groups, what="back to the groups")


async def test_signatures_count_the_fleet_filter_it_and_open_an_exemplar(tmp_path):
    from smoldata_tui.ui.screens.episode import EpisodeScreen
    from smoldata_tui.ui.screens.signatures import SignaturesScreen

    _batch(tmp_path / "batch", [("t", 0, 1.0, _trace(RIGHT)), ("t", 1, 0.0, _trace(WRONG)), ("t", 2, 0.0, _trace(WRONG)),
                                ("t", 3, 1.0, _trace(RIGHT, repeat_id=True))])  # fmt: skip
    app = replay_app(tmp_path / "batch")
    async with app.run_test(size=(120, 30)) as pilot:
        fleet = await fleet_ready(pilot, 4)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, SignaturesScreen), what="the signatures")
        assert [(signature, count) for signature, count, _ in app.screen.rows] == [
            ("clean · finished · last bash · fail", 2), ("clean · finished · last bash · pass", 1),
            ("duplicate_call_id · finished · last bash · pass", 1)]  # fmt: skip
        await pilot.press("f")
        await wait_for(pilot, lambda: app.screen is fleet, what="back to the fleet")
        await wait_for(pilot, lambda: len(fleet.table.rows) == 2, what="the two episodes of that signature")
        assert "signature clean · finished · last bash · fail" in "\n".join(screen_lines(app))
        await pilot.press("u", "i", "down", "down", "enter")  # the repeated-id signature's exemplar
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), what="the exemplar")
        assert app.screen.path.parent.name == "t-3"


async def test_at_80_columns_the_fleet_shows_verdict_grade_and_findings_and_scrolls_to_the_rest(tmp_path):
    _batch(tmp_path / "batch", [("sales-top-region", 0, 1.0, _trace(RIGHT)), ("sales-top-region", 1, 0.0, _trace(WRONG)),
                                ("sales-top-region", 2, 1.0, _trace(RIGHT, repeat_id=True))])  # fmt: skip
    app = replay_app(tmp_path / "batch")
    async with app.run_test(size=(80, 24)) as pilot:
        fleet = await fleet_ready(pilot, 3)
        lines = screen_lines(app)
        header = next(line for line in lines if "episode" in line and "verdict" in line)
        assert "grade" in header and "findings" in header
        rows = "\n".join(lines)
        # each episode by its folder's name (not 16 characters of …/run.jsonl), with its verdict and grade
        assert "sales-top-region-2" in rows and "run.jsonl" not in rows
        assert "None: ValueError" in rows and "reward 0" in rows
        assert "? Keys" in lines[-1] and "q Quit" in lines[-1]
        await pilot.press("right", "right", "right")  # the columns after these
        await pilot.pause()
        header = next(line for line in screen_lines(app) if "episode \u25b2" in line)
        assert "verdict" not in header and "status" in header and "task" in header
        assert fleet.table.shift == 3
