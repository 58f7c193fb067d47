"""The conversation tab: the run read as a transcript, linked to the timeline both ways.

The real recordings hold bash, write, read and text; OpenCode 1.18.31's ``edit`` (metadata
``diff``) and ``todowrite`` (input ``todos[{content, status, priority}]``) shapes are built
with the project's TraceBuilder, as the 1.18.31 binary defines them.
"""

from __future__ import annotations

from rich.color import ColorType
from textual.color import Color

from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.ui.widgets.conversation import ConversationView

from .conftest import SAMPLES
from .test_ui_helpers import loaded, replay_app, screen_lines, wait_for, write_trace

REAL = SAMPLES / "real"
EDIT_DIFF = ("Index: /workdir/solve.py\n===================================================================\n"
             "--- /workdir/solve.py\n+++ /workdir/solve.py\n@@ -1,2 +1,2 @@\n import csv\n"
             "-print(rows[0])\n+print(max(totals, key=totals.get))\n")  # fmt: skip


def crafted_episode() -> TraceBuilder:
    b = TraceBuilder()
    b.step_start()
    b.reasoning("The totals need a dict first.")
    b.text("Plan: **fix** the script. [bold red]not markup[/] \x1b[31mnot red\x1b[0m " + "word " * 60)
    b.tool("todowrite", {"todos": [{"content": "Read the CSV", "status": "completed", "priority": "high"},
                                   {"content": "Sum by region", "status": "in_progress", "priority": "high"},
                                   {"content": "Write the answer", "status": "pending", "priority": "medium"}]},
           '[{"content": "Read the CSV"}]', title="2 todos")  # fmt: skip
    b.tool("edit", {"filePath": "/workdir/solve.py", "oldString": "print(rows[0])", "newString": "print(max(totals, key=totals.get))"},
           "Edit applied successfully.", metadata={"diff": EDIT_DIFF, "filediff": {}, "diagnostics": {}})  # fmt: skip
    b.bash("seq 1 40", "".join(f"{n}\n" for n in range(1, 41)), exit_code=3, description="Count")
    b.step_finish("tool-calls")
    return b


def conversation(app) -> ConversationView:
    return app.screen.query_one(ConversationView)


async def test_a_real_run_reads_as_a_conversation_linked_to_the_timeline():
    app = replay_app(REAL / "passing_run.jsonl")
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("c")
        await pilot.pause(0.2)
        view = conversation(app)
        assert view.has_focus
        shown = view.shown_text()
        assert "Task prompt" in shown and "Find the sales region with the highest total revenue in 2024." in shown
        assert "instruction.md of the shipped task" in shown
        assert "$ head -3 /home/user/input/sales.csv" in shown and "exit 0" in shown
        assert "order_id,order_date,region" in shown  # the command's output
        assert "write  /workdir/answer.txt" in shown and "1 West" in shown  # the file, with line numbers
        await wait_for(pilot, lambda: "c Conversation" in screen_lines(app)[-1], what="the key in the footer")
        # conversation -> timeline: each j selects the next item (step 1 -> its text -> its bash call)
        assert screen.model.record(view.selected_event).kind == "step_start"
        await pilot.press("j", "j")
        await pilot.pause(0.1)
        record = screen.model.record(screen.timeline.cursor_event)
        assert view.selected_event == screen.timeline.cursor_event
        assert (record.kind, record.tool) == ("tool_use", "bash")
        # timeline -> conversation
        screen.timeline.focus()
        await pilot.press("G")
        await pilot.pause(0.1)
        assert screen.model.record(view.selected_event).kind == "text"  # the answer, the last item at or before the end
        assert "West has the highest" in view.shown_text()
        assert "step ended" not in view.shown_text()  # ordinary step ends (tool-calls, stop) draw nothing
        await pilot.press("question_mark")  # the help screen lists the tab's key and the view's own
        await pilot.pause(0.2)
        listed = {(entry.context, entry.keys, entry.description) for entry in app.screen.entries}
        assert ("Episode", "c 6", "Conversation") in listed
        assert ("Conversation", "Enter", "Fold / unfold the selected item's output") in listed


async def test_calls_render_as_what_they_are_folded_and_inert_at_80_columns(tmp_path):
    path = write_trace(tmp_path / "crafted.jsonl", crafted_episode())
    app = replay_app(path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("c")
        await pilot.pause(0.2)
        view = conversation(app)
        rows = [strip.text.rstrip() for strip in view._rows]
        shown = "\n".join(rows)
        # edit: the diff's lines, coloured later; todowrite: a checklist; bash: command, exit code
        assert "-print(rows[0])" in rows and "+print(max(totals, key=totals.get))" in rows
        assert "Index: /workdir/solve.py" not in shown  # the preamble is not what one reads
        assert "[x] Read the CSV  (high)" in rows and "[~] Sum by region  (high)" in rows
        assert "[ ] Write the answer  (medium)" in rows and "todowrite  1/3 done" in shown
        assert "$ seq 1 40" in rows and "exit 3" in shown
        assert "\u25b8 30 more lines (Enter or click: show them)" in rows and "11" not in rows
        # the markdown is rendered, agent text is neither markup nor escape sequences
        assert "Plan: fix the script." in shown and "**fix**" not in shown
        assert "[bold red]not markup[/]" in shown and "\x1b" not in shown and "not red" in shown
        assert "thinking" in shown and "The totals need a dict first." in shown
        # wrapped on word boundaries within the pane's width
        width = view.scrollable_content_region.width
        assert all(len(strip.text) <= width for strip in view._rows)
        assert all(row.split()[-1] == "word" for row in rows if row.strip().startswith("word"))
        # Enter unfolds the selected call's output
        bash_event = next(i for i in range(screen.model.count) if screen.model.record(i).tool == "bash")
        screen.timeline.go_to_event(bash_event)
        await pilot.pause(0.1)
        assert view.selected_event == bash_event
        view.focus()
        await pilot.press("enter")
        await pilot.pause(0.1)
        rows = [strip.text.rstrip() for strip in view._rows]
        assert "40" in rows and not any("more lines" in row for row in rows)


async def test_a_step_cut_by_the_length_limit_says_so():
    app = replay_app(REAL / "finish_length.jsonl")
    async with app.run_test(size=(160, 45)) as pilot:
        await loaded(pilot)
        await pilot.press("c", "G")
        await pilot.pause(0.2)
        assert "step ended: length" in conversation(app).shown_text()


async def test_a_light_theme_colours_the_conversation_from_the_theme(tmp_path):
    path = write_trace(tmp_path / "crafted.jsonl", crafted_episode())
    app = replay_app(path)
    async with app.run_test(size=(160, 45)) as pilot:
        await loaded(pilot)
        app.theme = "solarized-light"
        await pilot.press("c")
        await pilot.pause(0.2)
        view = conversation(app)
        added = next(strip for strip in view._rows if strip.text.startswith("+print"))
        colour = next(segment.style.color for segment in added if segment.text.strip())
        assert colour.triplet == Color.parse(app.theme_variables["text-success"]).rich_color.triplet
        for strip in view._rows:  # no ANSI named colour anywhere: the theme decides every one
            for segment in strip:
                if segment.style is not None and segment.style.color is not None:
                    assert segment.style.color.type is not ColorType.STANDARD, segment


async def test_the_prompt_an_episode_recorded_is_the_one_shown(tmp_path):
    import json
    import shutil

    trace = tmp_path / "run.jsonl"
    shutil.copy(REAL / "passing_run.jsonl", trace)
    prompt = "Count the **widgets** in `/home/user/input/w.csv`; write the number to /workdir/answer.txt."
    (tmp_path / "run.meta.json").write_text(json.dumps({"format": "smoldata-episode", "schema_version": 1,
                                                        "task": "a-private-task", "status": "finished",
                                                        "prompt": prompt}))  # fmt: skip
    app = replay_app(trace)
    async with app.run_test(size=(160, 45)) as pilot:
        await loaded(pilot)
        await pilot.press("c")
        view = conversation(app)
        await wait_for(pilot, lambda: "Count the widgets" in view.shown_text(), what="the recorded prompt")
        shown = view.shown_text()
        assert "the prompt this episode gave the agent (run.meta.json)" in shown
        assert "Find the sales region" not in shown  # not a shipped task's instruction


async def test_a_call_the_agent_left_running_ends_the_conversation_marked_unfinished():
    app = replay_app(REAL / "killed_mid_tool.jsonl")
    async with app.run_test(size=(160, 45)) as pilot:
        await loaded(pilot)
        await pilot.press("c", "G")  # the last item
        await pilot.pause(0.2)
        shown = conversation(app).shown_text()
        assert "Unfinished when the agent was" in shown and "recovered from opencode export" in shown
        assert "sleep 300" in shown and "never finished" in shown
        await pilot.press("k", "j")  # walking onto it keeps the timeline where it is, and nothing breaks
        await pilot.pause(0.2)
        assert "Unfinished when the agent was" in conversation(app).shown_text()
