"""openenv's capture modules load without openenv's web UI (``capture_policy.import_openenv``):
each test runs a fresh interpreter, since the point is what an import drags in."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("openenv")


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_capture_modules_load_without_gradio_and_are_openenvs_own():
    out = python("""
        import sys
        from smoldata_tui.training.capture_policy import capture_modules, import_openenv
        runner, validate_llm, export, contract = capture_modules()
        training = import_openenv("openenv.core.harness.training")
        print("gradio" in sys.modules, "openenv.core" in sys.modules, "openenv.core.harness" in sys.modules)
        print(runner.CaptureServer.__module__, training.TrainingTrace.__module__, runner.__file__.endswith("capture/runner.py"))
    """)
    assert out.splitlines() == ["False False False",
                                "openenv.core.harness.capture.runner openenv.core.harness.training True"]  # fmt: skip


def test_a_full_import_afterwards_runs_the_packages_and_reuses_the_loaded_modules():
    out = python("""
        from smoldata_tui.training.capture_policy import import_openenv
        training = import_openenv("openenv.core.harness.training")
        from openenv.core.harness import VerifyResult  # the package's own __init__, in full
        import openenv.core.harness.training as again
        import openenv.core
        print(again is training, VerifyResult.__name__, hasattr(openenv.core, "__all__"))
    """)
    assert out == "True VerifyResult True"


def test_after_a_full_import_it_is_the_plain_import():
    out = python("""
        import openenv.core.harness.training as full
        from smoldata_tui.training.capture_policy import import_openenv
        print(import_openenv("openenv.core.harness.training") is full)
    """)
    assert out == "True"


def test_a_missing_module_is_a_module_not_found_error_and_leaves_no_bare_package():
    out = python("""
        import sys
        from smoldata_tui.training.capture_policy import import_openenv
        try:
            import_openenv("openenv.core.harness.no_such_module")
        except ModuleNotFoundError as exc:
            print(exc.name, "openenv.core" in sys.modules)
    """)
    assert out == "openenv.core.harness.no_such_module False"
