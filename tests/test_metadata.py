"""store/metadata.py, metadata_reader.py, metadata_writer.py: the episode metadata file, tolerant
reading, atomic writing, redaction."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from smoldata_tui.masking import REDACTED, redact, redact_text
from smoldata_tui.store.metadata import EpisodeMetadata, Grade, metadata_path_for
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.store.metadata_writer import save_metadata


def test_round_trip(tmp_path):
    meta = EpisodeMetadata(
        task="sales-top-region",
        backend="daytona",
        model="openai/gpt-4.1-mini",
        harness="opencode",
        opencode_version="1.18.31",
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:24Z",
        status="finished",
        exit_code=0,
        grade=Grade(env_reward=1.0, correctness=1, grader_output='{"correctness": 1}'),
        timings={"agent": 84.0, "grade": 0.4},
        config={"provider": "openai_compatible", "api_key": "sk-abcdefghijklmnopqrstu"},
        trace="run.jsonl",
    )
    path = metadata_path_for(tmp_path / "run.jsonl")
    assert path.name == "run.meta.json"
    save_metadata(path, meta)
    text = path.read_text()
    assert "sk-abc" not in text and "api_key" not in text
    problems: list[str] = []
    loaded = load_metadata(path, problems)
    assert problems == []
    assert loaded.task == "sales-top-region" and loaded.grade.env_reward == 1.0
    assert loaded.duration_s == 84.0
    assert loaded.config == {"provider": "openai_compatible"}
    assert loaded.timings == {"agent": 84.0, "grade": 0.4}
    assert [p.name for p in tmp_path.iterdir()] == ["run.meta.json"]  # no temporary left behind


def test_missing_file_is_silent_and_corrupt_files_are_explained(tmp_path):
    problems: list[str] = []
    assert load_metadata(tmp_path / "absent.meta.json", problems) is None and problems == []
    bad = tmp_path / "bad.meta.json"
    bad.write_text("{not json")
    assert load_metadata(bad, problems) is None
    assert "not valid JSON" in problems[0]
    bad.write_bytes(b"\xff\xfe")
    problems.clear()
    assert load_metadata(bad, problems) is None and "UTF-8" in problems[0]
    bad.write_text("[1, 2]")
    problems.clear()
    assert load_metadata(bad, problems) is None and "JSON object" in problems[0]
    bad.write_text(json.dumps({"format": "smoldata-episode", "schema_version": 99}))
    problems.clear()
    assert load_metadata(bad, problems) is None and "newer" in problems[0]


def test_wrong_field_types_are_dropped_with_a_note(tmp_path):
    path = tmp_path / "x.meta.json"
    path.write_text(
        json.dumps(
            {
                "task": 5,
                "exit_code": "zero",
                "grade": {"env_reward": "high"},
                "status": "weird",
                "extra": 1,
                "timings": {"agent": "slow", "grade": 1.5},
            }
        )
    )
    problems: list[str] = []
    meta = load_metadata(path, problems)
    assert meta.task is None and meta.exit_code is None and meta.grade.env_reward is None
    assert meta.status == "weird"
    assert meta.timings == {"grade": 1.5}
    joined = " ".join(problems)
    assert "task" in joined and "exit_code" in joined and "env_reward" in joined and "status" in joined
    assert "timings.agent" in joined


def test_redact_drops_secret_names_and_credential_values():
    config = {
        "provider": "openai",
        "api_key": "whatever",
        "HF_TOKEN": "x",
        "Authorization": "y",
        "db_password": "z",
        "proxy_max_tokens_cap": 4096,
        "extra_env": {"SAFE": "1", "OPENAI_API_KEY": "k", "HEADER": "Bearer abcdefghijklmnop"},
        "urls": ["https://user:hunter2@example.com/x", "https://example.com"],
        "nested": [{"secret_sauce": 1, "ok": True}],
    }
    clean = redact(config)
    assert clean == {
        "provider": "openai",
        "proxy_max_tokens_cap": 4096,
        "extra_env": {"SAFE": "1"},
        "urls": [REDACTED, "https://example.com"],
        "nested": [{"ok": True}],
    }


def test_redact_text_hides_tokens_in_free_text():
    text = "used hf_abcdefghijklmnopqrstuvwxyz and Bearer abc.def-ghijklmnop, ok"
    assert redact_text(text) == f"used {REDACTED} and {REDACTED}, ok"


def test_grader_output_is_redacted_on_load(tmp_path):
    path = tmp_path / "g.meta.json"
    path.write_text(json.dumps({"grade": {"grader_output": "token sk-aaaaaaaaaaaaaaaaaaaaaaaa leaked"}}))
    assert "sk-aaaa" not in load_metadata(path).grade.grader_output


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, indent=st.sampled_from([None, 2]))
def test_metadata_json_is_read_as_json_reads_it(value, indent):
    """run.meta.json is decoded by orjson where it agrees with json: never a different value."""
    import json

    from smoldata_tui.store.metadata_reader import _decode_json

    data = json.dumps(value, indent=indent, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        expected = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:  # a lone surrogate cannot be UTF-8: both fail the same way
        return
    decoded = _decode_json(data)
    assert repr(decoded) == repr(expected)  # repr: NaN, -0.0 and int/float kept apart
