"""A grader is bounded on the host: nothing it starts survives it (not even a `setsid` helper), a
helper holding its output does not turn a finished grader into a timeout, its output is kept only
up to a cap (streamed, memory bounded), the endpoint key is masked in all it prints, and an answer
over the cap is not read whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from smoldata_tui.tasks import grade_answer, run_grader
from smoldata_tui.tasks.grade import MAX_ANSWER_BYTES, MAX_GRADER_STDOUT_BYTES

from .test_sandbox_support import backend, base_dir, sandbox  # noqa: F401 - fixtures
from .test_tasks_grade import HOST, _gone, grader_task

KEY = 'sk-"quoted\\back-é-0123456789'  # a key JSON must escape, with a non-ASCII character


def test_a_setsid_helper_holding_the_output_neither_survives_nor_makes_the_grader_time_out(tmp_path):
    pid_file = tmp_path / "helper.pid"
    grader = f"""\
import subprocess
helper = subprocess.Popen(["setsid", "sleep", "1000"])  # inherits stdout and stderr: holds the pipes open
open({str(pid_file)!r}, "w").write(str(helper.pid))
print('{{"correctness": 1}}')
"""
    started = time.monotonic()
    result = run_grader(grader_task(tmp_path, grader), "42", environ=HOST, timeout=60)
    assert result.grader_error is None and result.correctness == 1, result.grader_error
    assert time.monotonic() - started < 30  # it used to wait for the 60 s timeout
    assert _gone(int(pid_file.read_text()), within_s=5), "the setsid helper survived the grader"


def test_a_timed_out_grader_takes_its_setsid_and_double_forked_helpers_with_it(tmp_path):
    pid_file = tmp_path / "helpers.pid"
    grader = f"""\
import os, subprocess, time
helper = subprocess.Popen(["setsid", "sleep", "1000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:  # a daemon: fork, setsid, fork, parent exits
    os.setsid()
    if os.fork() == 0:
        open({str(pid_file)!r} + ".daemon", "w").write(str(os.getpid()))
        time.sleep(1000)
    os._exit(0)
open({str(pid_file)!r}, "w").write(str(helper.pid))
time.sleep(1000)
"""
    result = run_grader(grader_task(tmp_path, grader), "", environ=HOST, timeout=3.0)
    assert result.grader_error == "grader timed out after 3 s"
    for path in (pid_file, Path(str(pid_file) + ".daemon")):
        assert _gone(int(path.read_text()), within_s=5), f"{path.name}: the helper survived the timeout"


def test_the_key_is_masked_in_everything_the_grader_prints_in_every_json_form(tmp_path):
    grader = """\
import json, sys
answer = sys.stdin.read()
print("plain:", answer)
print(json.dumps({"ascii": answer}))
print("nested:", json.dumps(json.dumps({"a": answer})), file=sys.stderr)
print(json.dumps({"correctness": 0, "got": answer, "same": json.dumps(answer, ensure_ascii=False)}, ensure_ascii=False))
sys.exit(1)
"""
    result = run_grader(grader_task(tmp_path, grader), KEY, environ=HOST, scrub_secrets=[KEY])
    saved = json.dumps([result.grader_output, result.grader_error, result.report])
    for text in (saved, result.grader_output, result.grader_error):
        for form in (KEY, json.dumps(KEY)[1:-1], json.dumps(KEY, ensure_ascii=False)[1:-1], "0123456789"):
            assert form not in text, (form, text)
    assert "plain: " + "*" * len(KEY) in result.grader_output


def test_grader_output_is_streamed_and_capped_with_the_cap_recorded(tmp_path):
    """300 MB of stdout, then the verdict: the verdict counts, the host keeps the last MiB."""
    grader = """\
import sys
block = b"x" * (1 << 20) + b"\\n"
for _ in range(300):
    sys.stdout.buffer.write(block)
sys.stdout.buffer.write(b'{"correctness": 1}\\n')
sys.stderr.buffer.write(b"e" * (10 << 20))
"""
    task = grader_task(tmp_path, grader)
    probe = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
from smoldata_tui.tasks import load_task, run_grader
result = run_grader(load_task({str(task.folder)!r}), "", environ={HOST!r}, timeout=120)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({{"error": result.grader_error, "correctness": result.correctness, "caps": result.caps_hit,
                   "output": len(result.grader_output), "peak_kb": peak}}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["error"] is None and report["correctness"] == 1
    caps = {cap["cap"]: cap for cap in report["caps"]}
    assert caps["grader_stdout"] == {"cap": "grader_stdout", "limit": MAX_GRADER_STDOUT_BYTES, "seen": 300 * ((1 << 20) + 1) + 19}
    assert caps["grader_stderr"]["seen"] == 10 << 20
    assert report["peak_kb"] < 200_000, f"peak memory {report['peak_kb']} kB for 300 MB of grader output"


def test_an_answer_over_the_cap_is_not_read_whole_and_not_graded(tmp_path, sandbox):
    task = grader_task(tmp_path, 'print(\'{"correctness": 1}\')\n')
    sandbox.exec("truncate -s 1G /workdir/answer.txt")  # sparse: free for the agent
    started = time.monotonic()
    result = grade_answer(sandbox, task, environ=HOST)
    assert time.monotonic() - started < 20
    assert result.env_reward is None and result.grader_error.startswith("not graded: /workdir/answer.txt is 1073741824 bytes")
    assert result.caps_hit == ({"cap": "answer", "limit": MAX_ANSWER_BYTES, "seen": 1 << 30},)
    sandbox.exec("truncate -s 0 /workdir/answer.txt && printf 42 > /workdir/answer.txt")
    assert grade_answer(sandbox, task, environ=HOST).correctness == 1
