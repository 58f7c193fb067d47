"""Host variable references in [environment.env] / [verifier.env]: resolved late, named when unset, never shown."""

from __future__ import annotations

import pytest

from smoldata_tui.tasks import UnsetVariableError, host_variables, load_task, resolve_environment_env, resolve_verifier_env
from smoldata_tui.masking import redact_secrets

from .test_tasks_load import write_task

TOML = """\
[environment.env]
TOKEN = "${HF_TOKEN}"
MIXED = "user=$USER_NAME;home=${HOME_DIR}/x;price=$$5"
PLAIN = "no references"

[verifier.env]
KEY = "${GRADER_KEY}"
"""


@pytest.fixture
def task(tmp_path):
    return load_task(write_task(tmp_path, toml=TOML))


def test_references_are_resolved_from_the_given_environ(task):
    environ = {"HF_TOKEN": "hf_abc123456789", "USER_NAME": "ana", "HOME_DIR": "/h", "GRADER_KEY": "k-9999"}
    assert resolve_environment_env(task, environ) == {
        "TOKEN": "hf_abc123456789",
        "MIXED": "user=ana;home=/h/x;price=$5",
        "PLAIN": "no references",
    }
    assert resolve_verifier_env(task, environ) == {"KEY": "k-9999"}
    assert host_variables(task.environment_env) == ["HF_TOKEN", "HOME_DIR", "USER_NAME"]


def test_unset_or_empty_variables_are_named_and_no_value_is_shown(task):
    environ = {"HF_TOKEN": "", "USER_NAME": "a-set-value-that-must-not-show", "GRADER_KEY": "k"}
    with pytest.raises(UnsetVariableError) as raised:
        resolve_environment_env(task, environ)
    error = raised.value
    assert error.variables == ["HF_TOKEN", "HOME_DIR"] and error.path == task.task_toml
    assert str(error) == f"{task.task_toml}: [environment.env] needs $HF_TOKEN, $HOME_DIR, which are not set (or empty) on this host"
    assert "a-set-value-that-must-not-show" not in str(error)
    with pytest.raises(UnsetVariableError, match=r"\[verifier.env\] needs \$GRADER_KEY, which is not set"):
        resolve_verifier_env(task, {})


def test_redact_replaces_secret_values_longest_first_and_leaves_short_ones():
    secrets = {"TOKEN": "abcd1234", "INNER": "abcd", "FLAG": "on"}
    assert redact_secrets("got abcd1234 then abcd, flag on", secrets) == "got [$TOKEN] then [$INNER], flag on"
