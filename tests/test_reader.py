from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from smoldata_tui.trace.reader import LineFramer


def frame(data: bytes, cuts: list[int]) -> list[tuple[int, int, bytes, bool]]:
    framer = LineFramer()
    lines = []
    position = 0
    blocks = []
    for cut in sorted(cuts) + [len(data)]:
        cut = min(max(cut, position), len(data))
        blocks.append(framer.feed(data[position:cut]))
        position = cut
    blocks.append(framer.close())
    for block in blocks:
        if block is None:
            continue
        offset = block.offset
        for number, line in enumerate(block.lines(), start=block.first_line):
            lines.append((number, offset, line, block.terminated))
            offset += len(line) + 1
    return lines


@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=6))
def test_any_chunking_gives_the_same_lines_with_numbers_and_offsets(data, cuts):
    lines = frame(data, cuts)
    assert lines == frame(data, [])
    # Offsets and numbers locate every line in the original bytes.
    for index, (number, offset, line, _terminated) in enumerate(lines):
        assert number == index + 1
        assert data[offset : offset + len(line)] == line
    assert b"\n".join(line for _, _, line, _ in lines) == (data[:-1] if data.endswith(b"\n") else data)


def test_partial_line_is_held_back_until_newline_or_close():
    framer = LineFramer()
    assert framer.feed(b'{"type":') is None
    assert framer.pending_bytes == 8
    block = framer.feed(b'"text"}\n{"ty')
    assert block.lines() == [b'{"type":"text"}'] and block.first_line == 1 and block.offset == 0
    last = framer.close()
    assert last.lines() == [b'{"ty'] and not last.terminated and last.first_line == 2 and last.offset == 16


def test_a_huge_line_in_small_reads_is_joined_once():
    framer = LineFramer()
    piece = b"x" * 65536
    for _ in range(160):  # 10 MiB without a newline
        assert framer.feed(piece) is None
    block = framer.feed(b"\n")
    assert len(block.lines()[0]) == 160 * 65536
