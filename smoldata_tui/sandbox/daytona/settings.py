"""How a Daytona sandbox is made: credentials (as the SDK reads them), image or snapshot, resources,
labels, lifetime. Nothing here imports the SDK, so a missing key is reported before any work starts.

Credentials stay in the environment: ``DAYTONA_API_KEY`` (or a ``.env`` file, as the SDK reads it),
``DAYTONA_API_URL``, ``DAYTONA_TARGET``. We only check that a key exists; its value is never copied
into our objects, messages or files. The API URL is named in messages with any credentials in it
masked.

The defaults are the environment's own Daytona backend's: a snapshot from
``$DATA_AGENT_DAYTONA_SNAPSHOT`` when set, else its image with 1 CPU, 4 GiB memory, 5 GiB disk.
"""

from __future__ import annotations

import getpass
import math
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from smoldata_tui.masking import masked_url
from smoldata_tui.sandbox.errors import SandboxError

DEFAULT_IMAGE = "docker.io/savatar101/env-data-agent-train:base"  # the environment's image
SNAPSHOT_ENV = "DAYTONA_SNAPSHOT"
ENVIRONMENT_SNAPSHOT_ENV = "DATA_AGENT_DAYTONA_SNAPSHOT"  # what the environment's own backend reads
DEFAULT_API_URL = "https://app.daytona.io/api"  # the SDK's, when DAYTONA_API_URL is not set
# The environment's backend makes image sandboxes with these (a snapshot brings its own).
DEFAULT_CPU, DEFAULT_MEMORY_GB, DEFAULT_DISK_GB = 1, 4, 5
APP_LABEL = "smoldata-tui"
USER = "root"  # the environment runs its episodes as root
# Inactivity before Daytona stops a sandbox. A watched run pings it every KEEPALIVE_S, so only a
# sandbox whose app died reaches this; it is then deleted (auto-delete 0 = delete on stop).
AUTO_STOP_MINUTES = 15
KEEPALIVE_S = 60.0
SETUP_MARGIN_S = 30 * 60  # lifetime beyond the agent timeout: create, install, stage, grade


class DaytonaCredentialsMissing(SandboxError):
    def __init__(self) -> None:
        super().__init__(
            "Daytona needs an API key: set DAYTONA_API_KEY (and DAYTONA_API_URL / DAYTONA_TARGET if you "
            "do not use Daytona's cloud defaults), or put DAYTONA_API_KEY in a .env file here."
        )


def has_api_key(cwd: Path | None = None) -> bool:
    """Whether the SDK will find a key: the process environment first, then ``./.env``."""
    if os.environ.get("DAYTONA_API_KEY"):
        return True
    dotenv = (cwd or Path.cwd()) / ".env"
    try:
        lines = dotenv.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    for line in lines:
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and name.strip() == "DAYTONA_API_KEY" and value.strip().strip("'\""):
            return True
    return False


def require_api_key() -> None:
    if not has_api_key():
        raise DaytonaCredentialsMissing()


def api_url() -> str:
    """The URL the SDK sends requests to: like the SDK, from the process environment only."""
    return os.environ.get("DAYTONA_API_URL") or os.environ.get("DAYTONA_SERVER_URL") or DEFAULT_API_URL


def shown_api_url() -> str:
    """The API URL for a message, and where it came from."""
    if os.environ.get("DAYTONA_API_URL"):
        return f"{masked_url(api_url())} (DAYTONA_API_URL)"
    if os.environ.get("DAYTONA_SERVER_URL"):
        return f"{masked_url(api_url())} (DAYTONA_SERVER_URL)"
    return f"{api_url()} (Daytona's default: DAYTONA_API_URL is not set)"


def api_url_problem() -> str | None:
    """Why the SDK cannot use the API URL (no scheme or host; credentials in it, which aiohttp
    refuses beside the key's header), or None."""
    url = api_url()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is no number
    except ValueError:
        return f"the Daytona API URL {shown_api_url()} is malformed"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"the Daytona API URL {shown_api_url()} is not an http(s) URL with a host"
    if "@" in parts.netloc:
        return (f"the Daytona API URL {shown_api_url()} carries credentials: remove them "
                "(the key goes in DAYTONA_API_KEY)")  # fmt: skip
    return None


def owner() -> str:
    """Who started the run, for the ``owner`` label: user@host."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


@dataclass
class DaytonaSettings:
    image: str = DEFAULT_IMAGE
    snapshot: str | None = None  # when set, created from this snapshot instead of the image
    cpu: int = DEFAULT_CPU  # resources of an image sandbox (a snapshot's are its own)
    memory_gb: int = DEFAULT_MEMORY_GB
    disk_gb: int = DEFAULT_DISK_GB
    target: str | None = None  # the region; None: the SDK's (DAYTONA_TARGET, else the account's default)
    create_timeout_s: float = 600.0  # a first build of the image can take minutes
    retry_budget_s: float = 120.0  # how long 429/5xx/lost connections are retried before giving up
    auto_stop_minutes: int = AUTO_STOP_MINUTES
    keepalive_s: float = KEEPALIVE_S
    extra_labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_environment(cls, snapshot: str | None = None, **overrides: object) -> DaytonaSettings:
        """``snapshot``: the ``--daytona-snapshot`` value; else ``$DATA_AGENT_DAYTONA_SNAPSHOT`` (the
        environment's); else ``$DAYTONA_SNAPSHOT``; else the image."""
        chosen = snapshot or os.environ.get(ENVIRONMENT_SNAPSHOT_ENV) or os.environ.get(SNAPSHOT_ENV) or None
        return cls(snapshot=chosen, **overrides)  # type: ignore[arg-type]

    @property
    def source(self) -> str:
        """What the sandbox is made from, for screens and metadata."""
        return f"snapshot {self.snapshot}" if self.snapshot else f"image {self.image}"


def lifetime_minutes(agent_timeout_s: float | None) -> int:
    """The sandbox's lifetime cap (Daytona ``ttl_minutes``): the agent's limit plus setup time."""
    return max(1, math.ceil(((agent_timeout_s or 0) + SETUP_MARGIN_S) / 60))


def labels_for(run: str, task: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    labels = {"app": APP_LABEL, "run": run, "owner": owner()}
    if task:
        labels["task"] = task
    labels.update(extra or {})
    return {key: value[:63] for key, value in labels.items()}  # label values are length-limited
