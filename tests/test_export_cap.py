"""`opencode export` output is agent-controlled (its session can be huge): at most the cap crosses
to the host, and a larger export is reported with its size, in a real bubblewrap sandbox."""

from __future__ import annotations

import pytest

from smoldata_tui.session.export import ExportTooLarge, export_session

from .test_sandbox_support import backend, base_dir, sandbox  # noqa: F401 - fixtures

FAKE = "/root/fake-opencode"


def _fake_opencode(sandbox, size: int) -> int:
    """An `opencode` whose export is ``size`` NULs after a JSON head; returns the bytes it prints."""
    body = '{"messages": [], "pad": "' + "x" * 16 + '"}'
    sandbox.write_text(FAKE, f"#!/bin/sh\nprintf '%s' '{body}'\nhead -c {size} /dev/zero\n")
    sandbox.exec(f"chmod 755 {FAKE}")
    return len(body) + size


def test_an_export_over_the_cap_is_refused_with_its_size(sandbox):
    printed = _fake_opencode(sandbox, 3 << 20)
    with pytest.raises(ExportTooLarge) as raised:
        export_session(sandbox, FAKE, "ses_1", {}, max_bytes=1 << 20)
    assert raised.value.limit == 1 << 20 and raised.value.seen == printed


def test_an_export_under_the_cap_is_read(sandbox):
    sandbox.write_text(FAKE, "#!/bin/sh\necho 'notice: migrating'\necho '{\"messages\": []}'\n")
    sandbox.exec(f"chmod 755 {FAKE}")
    assert export_session(sandbox, FAKE, "ses_1", {}, max_bytes=1 << 20) == {"messages": []}
