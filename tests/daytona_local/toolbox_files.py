"""Toolbox file routes (``{toolboxProxyUrl}/{sandboxId}/files/...``): bulk upload and download in the
multipart formats of ``daytona/_async/filesystem.py``, file info, listing, folders and deletion.

Contents move through ``LocalSandbox.read_bytes``/``write_bytes`` (host-side, symlink-safe); metadata
comes from ``stat``/``find`` run inside the sandbox, so owners and modes are the sandbox's view.
"""

from __future__ import annotations

import json
import posixpath
import secrets
import shlex
import urllib.parse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from smoldata_tui.sandbox import PathOutsideSandbox, ReadOnlyPath
from tests.daytona_local.state import SOURCE_DAEMON, ApiError, SandboxRecord, now_iso
from tests.daytona_local.toolbox import in_sandbox, started_sandbox

if TYPE_CHECKING:
    from tests.daytona_local.server import LocalDaytona

_STAT_FORMAT = "%s|%a|%U|%G|%Y|%F|%A"
_FIND_FORMAT = "%f\\0%s\\0%m\\0%u\\0%g\\0%T@\\0%y\\0%M\\0"
_FIND_FIELDS = 8


def add_routes(app: web.Application, server: LocalDaytona) -> None:
    files = Files(server)
    base = "/toolbox/{sandbox_id}/files"
    app.router.add_post(base + "/bulk-upload", files.bulk_upload)
    app.router.add_post(base + "/bulk-download", files.bulk_download)
    app.router.add_get(base + "/info", files.info)
    app.router.add_get(base, files.list)
    app.router.add_delete(base, files.delete)
    app.router.add_post(base + "/folder", files.create_folder)


def file_error(error: BaseException, path: str) -> ApiError:
    """The daemon's codes, which the SDK maps to DaytonaFileNotFoundError and friends."""
    if isinstance(error, FileNotFoundError | NotADirectoryError):
        return ApiError(404, f"file not found: {path}", code="FILE_NOT_FOUND", source=SOURCE_DAEMON)
    if isinstance(error, IsADirectoryError):
        return ApiError(400, f"path is a directory: {path}", code="INVALID_FILE_PATH", source=SOURCE_DAEMON)
    if isinstance(error, ReadOnlyPath | PermissionError):
        return ApiError(403, f"permission denied: {path}", code="FILE_ACCESS_DENIED", source=SOURCE_DAEMON)
    if isinstance(error, PathOutsideSandbox):
        return ApiError(400, f"invalid path {path}: {error}", code="INVALID_FILE_PATH", source=SOURCE_DAEMON)
    return ApiError(500, f"failed to read {path}: {error}", code="FILE_READ_FAILED", source=SOURCE_DAEMON)


class Files:
    def __init__(self, server: LocalDaytona) -> None:
        self.server = server

    async def bulk_upload(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        uploads: dict[str, dict[str, Any]] = {}  # "files[i]" -> {"path": ..., "data": ...}
        reader = await request.multipart()
        async for part in reader:
            name = part.name or ""
            prefix, _, kind = name.rpartition(".")
            if kind == "path":
                uploads.setdefault(prefix, {})["path"] = await part.text()
            elif kind == "file":
                entry = uploads.setdefault(prefix, {})
                entry["data"] = bytes(await part.read())
                entry.setdefault("path", part.filename)  # the SDK repeats the destination there
        errors = []
        for entry in uploads.values():
            path = entry.get("path")
            if not path or "data" not in entry:
                errors.append(f"incomplete upload entry {entry.get('path')!r}")
                continue
            try:
                await in_sandbox(self.server, record, record.local.write_bytes, path, entry["data"])
            except (OSError, PathOutsideSandbox) as error:
                errors.append(f"{path}: {file_error(error, path).message}")
        if errors:
            return web.json_response({"errors": errors}, status=400)
        return web.json_response({"files": [{"path": entry["path"]} for entry in uploads.values()]})

    async def bulk_download(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        paths = (await request.json()).get("paths") or []
        boundary = secrets.token_hex(16)
        body = bytearray()
        for path in paths:
            try:
                data = await in_sandbox(self.server, record, record.local.read_bytes, path)
                body += _part(boundary, "file", path, "application/octet-stream", data)
            except (OSError, PathOutsideSandbox) as error:
                failure = file_error(error, path)
                envelope = {"message": failure.message, "statusCode": failure.status, "code": failure.code,
                            "source": failure.source, "timestamp": now_iso(), "path": request.path}  # fmt: skip
                body += _part(boundary, "error", path, "application/json", json.dumps(envelope).encode())
        body += f"--{boundary}--\r\n".encode()
        return web.Response(body=bytes(body), headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})

    async def info(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        path = _path_param(request)
        result = await self._run(record, f"stat -c {shlex.quote(_STAT_FORMAT)} -- {shlex.quote(path)}")
        if result.exit_code != 0:
            raise file_error(FileNotFoundError(), path)
        size, perms, owner, group, mtime, kind, mode = result.stdout.strip().split("|")
        return web.json_response(_file_info(posixpath.basename(path.rstrip("/")) or "/", path, int(size), perms,
                                            owner, group, float(mtime), kind == "directory", mode))  # fmt: skip

    async def list(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        path = _path_param(request)
        script = f"find {shlex.quote(path)} -mindepth 1 -maxdepth 1 -printf {shlex.quote(_FIND_FORMAT)}"
        result = await self._run(record, script)
        if result.exit_code != 0:
            raise file_error(FileNotFoundError(), path)
        fields = result.stdout.split("\0")[:-1]
        entries = []
        for i in range(0, len(fields) - _FIND_FIELDS + 1, _FIND_FIELDS):
            name, size, perms, owner, group, mtime, kind, mode = fields[i : i + _FIND_FIELDS]
            entries.append(_file_info(name, posixpath.join(path, name), int(size), perms, owner, group,
                                      float(mtime), kind == "d", mode))  # fmt: skip
        return web.json_response(entries)

    async def create_folder(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        path, mode = _path_param(request), request.query.get("mode") or "0755"
        result = await self._run(record, f"mkdir -p -m {shlex.quote(mode)} -- {shlex.quote(path)}")
        if result.exit_code != 0:
            raise ApiError(400, result.stderr.strip() or f"cannot create {path}", source=SOURCE_DAEMON)
        return web.Response(status=201)

    async def delete(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        path = _path_param(request)
        flag = "-rf" if request.query.get("recursive") == "true" else "-f"
        exists = await self._run(record, f"test -e {shlex.quote(path)} || test -L {shlex.quote(path)}")
        if exists.exit_code != 0:
            raise file_error(FileNotFoundError(), path)
        result = await self._run(record, f"rm {flag} -- {shlex.quote(path)}")
        if result.exit_code != 0:
            raise ApiError(400, result.stderr.strip(), source=SOURCE_DAEMON)
        return web.Response(status=204)

    async def _run(self, record: SandboxRecord, command: str):
        return await in_sandbox(self.server, record, record.local.exec, command, timeout=30)


def _path_param(request: web.Request) -> str:
    path = request.query.get("path")
    if not path:
        raise ApiError(400, "path is required", source=SOURCE_DAEMON)
    return path


def _part(boundary: str, name: str, path: str, content_type: str, data: bytes) -> bytes:
    # Both filename forms: the SDK matches parts to requested paths byte for byte and prefers the
    # RFC 5987 one, which survives any character; the quoted one is for older parsers.
    quoted = path.replace("\\", "\\\\").replace('"', '\\"').encode("ascii", "replace").decode()
    extended = urllib.parse.quote(path, safe="")
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{quoted}\"; "
            f"filename*=utf-8''{extended}\r\nContent-Type: {content_type}\r\n\r\n")  # fmt: skip
    return head.encode() + data + b"\r\n"


def _file_info(name: str, path: str, size: int, perms: str, owner: str, group: str, mtime: float,
               is_dir: bool, mode: str) -> dict[str, Any]:  # fmt: skip
    modified = datetime.fromtimestamp(mtime, UTC)
    return {"name": name, "path": path, "size": size, "isDir": is_dir, "mode": mode,
            "permissions": f"0{int(perms, 8):03o}", "owner": owner, "group": group,
            "modTime": modified.strftime("%Y-%m-%d %H:%M:%S.%f +0000 UTC"),  # Go's time.String() layout
            "modifiedAt": modified.isoformat().replace("+00:00", "Z")}  # fmt: skip
