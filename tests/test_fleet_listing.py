"""`check` and the fleet table list the same traces of a folder, by one set of rules: hidden names
skipped, each file once however many links lead to it, a broken link a row with its reason, a
FIFO skipped, a loop of folder links no hang."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from smoldata_tui.fleet.index import FleetIndex

from .conftest import SAMPLES, run_cli
from .test_ui_fleet import fleet_ready
from .test_ui_helpers import replay_app, screen_lines


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def awkward_folder(tmp_path: Path) -> Path:
    root = tmp_path / "episodes"
    (root / "sub").mkdir(parents=True)
    (root / ".cache").mkdir()
    clean = SAMPLES / "clean_pass.jsonl"
    shutil.copy(clean, root / "a.jsonl")
    shutil.copy(clean, root / ".hidden.jsonl")  # hidden file: skipped
    shutil.copy(clean, root / ".cache" / "b.jsonl")  # in a hidden folder: skipped
    shutil.copy(SAMPLES / "missing_call_id.jsonl", root / "sub" / "c.jsonl")
    (root / "link-to-c.jsonl").symlink_to("sub/c.jsonl")  # its target is listed: not twice
    (root / "sub" / "again-c.jsonl").symlink_to(root / "sub" / "c.jsonl")  # nor three times
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(clean, elsewhere / "x.jsonl")
    (root / "outside.jsonl").symlink_to(elsewhere / "x.jsonl")  # the only name in the tree: listed
    (root / "dangling.jsonl").symlink_to("missing.jsonl")  # a row with its reason
    (root / "self.jsonl").symlink_to("self.jsonl")  # a loop of one link: a row with its reason
    (root / "loop").symlink_to(".", target_is_directory=True)  # a folder loop: not followed
    (root / "sub" / "up").symlink_to("..", target_is_directory=True)
    os.mkfifo(root / "stuck.jsonl")  # never opened
    return root


LISTED = ["a.jsonl", "dangling.jsonl", "outside.jsonl", "self.jsonl", "sub/c.jsonl"]
UNREADABLE = {
    "dangling.jsonl": "a symbolic link to 'missing.jsonl', which does not exist",
    "self.jsonl": "cannot read: Too many levels of symbolic links",
}


def relative(root: Path, path: str) -> str:
    return os.path.relpath(path, root)


def test_check_lists_by_the_rules_and_says_what_it_cannot_read(tmp_path):
    root = awkward_folder(tmp_path)
    done = run_cli("check", "--json", str(root), timeout=60)
    assert done.returncode == 2, done.stderr  # an unreadable trace, as for any other
    rows = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [relative(root, row["path"]) for row in rows] == LISTED
    errors = {relative(root, row["path"]): row["error"] for row in rows if "error" in row}
    assert errors == UNREADABLE
    for name, why in UNREADABLE.items():
        assert f"{root / name}: {why}" in done.stderr
    assert f"skipped {root / 'stuck.jsonl'}: a FIFO (named pipe), not a regular file" in done.stderr
    summary = run_cli("check", "--json", "--summary", str(root), timeout=60)
    assert orjson.loads(summary.stdout.splitlines()[-1])["unreadable"] == 2


def test_the_fleet_lists_what_check_lists(tmp_path):
    root = awkward_folder(tmp_path)
    rows = []
    result = FleetIndex(root, workers=1).refresh(rows.extend)
    assert sorted(relative(root, row.path) for row in rows) == LISTED and result.episodes == len(LISTED)
    assert {relative(root, row.path): row.error for row in rows if row.error} == UNREADABLE
    again = []
    assert FleetIndex(root, workers=1).refresh(again.extend).episodes == len(LISTED)  # cached: the same rows
    assert sorted((r.path, r.error) for r in again) == sorted((r.path, r.error) for r in rows)


def test_a_broken_link_named_as_a_file_is_a_row_too(tmp_path):
    (tmp_path / "gone.jsonl").symlink_to("nowhere.jsonl")
    done = run_cli("check", "--json", str(tmp_path / "gone.jsonl"), timeout=60)
    assert done.returncode == 2
    assert orjson.loads(done.stdout)["error"] == "a symbolic link to 'nowhere.jsonl', which does not exist"


async def test_the_fleet_table_shows_the_broken_link_with_its_reason(tmp_path):
    root = awkward_folder(tmp_path)
    app = replay_app(root)
    async with app.run_test(size=(220, 30)) as pilot:
        screen = await fleet_ready(pilot, len(LISTED))
        shown = "\n".join(screen_lines(app))
        assert f"{len(LISTED)} episodes" in shown and "hidden" not in shown and "link-to-c" not in shown
        await pilot.press("c")  # crashes and unreadable traces only
        assert sorted(os.path.basename(row.path) for row in screen.table.rows) == ["dangling.jsonl", "self.jsonl"]
        screen.table.cursor = [os.path.basename(row.path) for row in screen.table.rows].index("dangling.jsonl")
        await pilot.pause()
        assert UNREADABLE["dangling.jsonl"] in "\n".join(screen_lines(app))
