"""The UI's plain-Python parts: row mapping and filters, the byte search, the fast neutraliser."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from smoldata_tui.trace import analyze_bytes, analyze_path
from smoldata_tui.trace.text import neutralize
from smoldata_tui.ui import search as search_module
from smoldata_tui.ui.filtering import EventFilter
from smoldata_tui.ui.safe_text import safe_text
from smoldata_tui.ui.search import make_query, search_events
from smoldata_tui.ui.timeline_model import TimelineModel

from .conftest import SAMPLES
from .test_ui_helpers import small_episode


def model_of(data: bytes) -> TimelineModel:
    report, analysis = analyze_bytes(data, keep_events=True)
    model = TimelineModel()
    model.reset(analysis.events, analysis.findings)
    model.extend(analysis.event_count)
    model.add_findings(len(analysis.findings))
    return model


def test_filter_maps_rows_to_events_and_back():
    model = model_of(small_episode().dumps())
    assert model.row_count == 12 and model.event_at(5) == 5
    model.set_filter(EventFilter(kinds=frozenset({"tool_use"})))
    assert [model.event_at(row) for row in range(model.row_count)] == [2, 5, 6, 10]
    assert model.row_of(5) == 1 and model.row_of(4) is None
    assert model.row_near(4) == 1  # the next shown event
    model.set_filter(EventFilter(statuses=frozenset({"error"})))
    assert [model.event_at(row) for row in range(model.row_count)] == [5]
    model.set_filter(EventFilter(findings_only=True))
    assert [model.event_at(row) for row in range(model.row_count)] == [5, 6]
    model.set_filter(EventFilter(errors_only=True))
    assert model.row_count == 0


def test_growth_keeps_the_filter_and_findings_arriving_late_refilter():
    data = small_episode().dumps()
    report, analysis = analyze_bytes(data, keep_events=True)
    model = TimelineModel()
    model.set_filter(EventFilter(findings_only=True))
    model.reset(analysis.events, analysis.findings)
    assert model.extend(6) == 0  # no findings known yet: nothing shown
    assert model.add_findings(len(analysis.findings)) is True
    assert [model.event_at(row) for row in range(model.row_count)] == [5]
    model.extend(12)
    assert [model.event_at(row) for row in range(model.row_count)] == [5, 6]


def test_next_finding_wraps_and_skips_hidden_rows():
    model = model_of(small_episode().dumps())
    assert model.next_finding_event(-1) == 5
    assert model.next_finding_event(5) == 6
    assert model.next_finding_event(6) == 5
    assert model.next_finding_event(5, backwards=True) == 6
    model.set_filter(EventFilter(kinds=frozenset({"text"})))
    assert model.next_finding_event(0) is None


def test_event_for_line_and_step_starts():
    _report, analysis = analyze_path(SAMPLES / "malformed_line.jsonl", keep_events=True)
    model = TimelineModel()
    model.reset(analysis.events, analysis.findings)
    model.extend(analysis.event_count)
    for record in analysis.events:
        assert model.event_for_line(record.line) <= record.index
    assert model.event_for_line(10_000) is None
    assert model.step_started[1] == model.first_timestamp


def search(path, text: str, chunk: int | None = None):
    data = path.read_bytes()
    _report, analysis = analyze_bytes(data, keep_events=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        offsets = [record.offset for record in analysis.events]
        lengths = [record.length for record in analysis.events]
        if chunk is not None:
            saved, search_module.CHUNK = search_module.CHUNK, chunk
        try:
            return list(search_events(fd, offsets, lengths, make_query(text)))
        finally:
            if chunk is not None:
                search_module.CHUNK = saved
    finally:
        os.close(fd)


def test_search_finds_each_event_once_whatever_the_chunk_size(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(small_episode().dumps())
    expected = search(path, "pandas")
    assert expected == [6]
    for chunk in (7, 64, 100, 1000):  # matches cut by chunk boundaries are still found
        assert search(path, "pandas", chunk) == expected
        assert search(path, "step_finish", chunk) == [3, 7, 11]


def test_search_smart_case_and_json_escapes(tmp_path):
    b = small_episode()
    b.step_start()
    b.text('He said "West" twice\tand left')
    b.step_finish("stop")
    path = tmp_path / "t.jsonl"
    path.write_bytes(b.dumps())
    assert search(path, "west") == [9, 10, 13]  # lower case: any case
    assert search(path, "West") == [9, 10, 13]
    assert search(path, "WEST") == []  # capitals: exact case
    assert search(path, 'said "West"') == [13]  # stored as said \"West\"
    assert search(path, "twice\tand") == [13]  # stored as twice\tand


@given(st.text())
def test_safe_text_is_neutralize(text):
    assert safe_text(text) == neutralize(text)


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F)))
def test_safe_text_is_neutralize_on_ascii(text):
    assert safe_text(text) == neutralize(text)


KINDS = ["step_start", "text", "tool_use", "step_finish", "error", "(malformed)"]


@given(
    kinds=st.frozensets(st.sampled_from(KINDS)),
    statuses=st.frozensets(st.sampled_from(["completed", "error", "unfinished"])),
    findings_only=st.booleans(),
    errors_only=st.booleans(),
    sample=st.sampled_from(sorted(SAMPLES.glob("*.jsonl"))),
)
def test_rows_are_exactly_the_matching_events_in_order(kinds, statuses, findings_only, errors_only, sample):
    model = model_of(sample.read_bytes())
    chosen = EventFilter(kinds=kinds, statuses=statuses, findings_only=findings_only, errors_only=errors_only)
    model.set_filter(chosen)
    shown = [model.event_at(row) for row in range(model.row_count)]
    expected = [i for i in range(model.count) if chosen.matches(model.record(i), model.worst.get(i))]
    assert shown == expected
    for row, event in enumerate(shown):
        assert model.row_of(event) == row
    for event in set(range(model.count)) - set(shown):
        assert model.row_of(event) is None
