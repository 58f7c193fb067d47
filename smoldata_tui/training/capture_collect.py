"""Which files the capture runner loads, found by running it: ``python -I -S capture_collect.py POLICY SITE...``.

:mod:`capture_bundle` runs this in a clean interpreter to learn what a sandbox without openenv
needs: ``-I`` (no user site, no PYTHONPATH, not this package), ``-S`` with the site-packages
folders given on the command line (no ``.pth`` file runs, so nothing is loaded before the runner
that the runner would then seem not to need; the sandbox runs it the same way). It loads the policy file by path and
goes through the runner's whole life against a stand-in model on 127.0.0.1 (stdlib only, so its
own imports count for nothing): the probe, the server on loopback, a session, a streamed and a
plain chat request forwarded upstream, the export to openenv's ``TrainingTrace`` and its JSON,
and a request to an https endpoint (its TLS set-up).
Libraries import some modules only on first use; going through every step loads them here.

It prints one JSON object: the site-packages folders, the files of every module loaded after it
started (the interpreter's own start-up is not the runner's), and each top-level name's
distributions with their dist-info folder and version. Standard library only at module level.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ADMIN_KEY = "collector-admin-key-0123456789"
_MODEL = "collector/model"


class _StandIn(BaseHTTPRequestHandler):
    """A vLLM-style endpoint: every chat completion says ``ok`` with token ids and logprobs."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._send({"object": "list", "data": [{"id": _MODEL, "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        ids = [11, 12]
        choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        body = {"id": "c", "object": "chat.completion", "created": 0, "model": request.get("model") or _MODEL,
                "choices": [choice], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}  # fmt: skip
        if request.get("return_token_ids"):
            body["prompt_token_ids"], choice["token_ids"] = [1, 2, 3], ids
        if request.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": f"token_id:{i}", "logprob": -0.5, "bytes": [], "top_logprobs": []} for i in ids]}
        self._send(body)

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args) -> None:
        return


def _chat(port: int, session_id: str, stream: bool) -> None:
    import urllib.error
    import urllib.request

    body = {"model": _MODEL, "stream": stream, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]}  # fmt: skip
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {session_id}"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
    except urllib.error.HTTPError:  # the https round: upstream speaks no TLS, the proxy says 502
        pass


def run_the_runner(policy_path: str) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("capture_policy", policy_path)
    policy = importlib.util.module_from_spec(spec)
    sys.modules["capture_policy"] = policy
    spec.loader.exec_module(policy)
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    llm_url = f"http://127.0.0.1:{upstream.server_address[1]}/v1"
    try:
        runner, validate_llm, export, contract = policy.capture_modules()
        record = policy.probe(validate_llm, llm_url, _MODEL, None)
        server, port = policy.serve(runner, llm_url=llm_url, model=_MODEL, api_key=None, level=record["level"],
                                    admin_key=_ADMIN_KEY, on_request=policy.request_summary, host="127.0.0.1")  # fmt: skip
        try:
            session_id = policy.mint_session(port, _ADMIN_KEY)
            _chat(port, session_id, stream=True)
            _chat(port, session_id, stream=False)
            trace, _found = policy.export_trace(export, contract, server, session_id, record["level"])
            if trace is not None:
                trace.model_dump_json()
        finally:
            server.stop()
        # An https endpoint (any real one): the upstream client's TLS set-up loads its CA bundle.
        https_url = llm_url.replace("http://", "https://", 1)
        server, port = policy.serve(runner, llm_url=https_url, model=_MODEL, api_key=None, level=record["level"],
                                    admin_key=_ADMIN_KEY, on_request=policy.request_summary, host="127.0.0.1")  # fmt: skip
        try:
            _chat(port, policy.mint_session(port, _ADMIN_KEY), stream=False)
        finally:
            server.stop()
    finally:
        upstream.shutdown()


def loaded_report(before: set[str]) -> dict:
    import importlib.metadata
    import sysconfig

    files = sorted({module.__file__ for name, module in list(sys.modules.items())
                    if name not in before and isinstance(getattr(module, "__file__", None), str)})  # fmt: skip
    paths = sysconfig.get_paths()
    top_levels = importlib.metadata.packages_distributions()
    distributions = {}
    for names in top_levels.values():
        for name in names:
            if name in distributions:
                continue
            try:
                found = importlib.metadata.distribution(name)
            except importlib.metadata.PackageNotFoundError:
                continue
            folder = getattr(found, "_path", None)  # where its dist-info is (no public accessor)
            distributions[name] = {"version": found.version, "dist_info": str(folder) if folder else None}
    return {"site": sorted({paths["purelib"], paths["platlib"]}), "files": files, "top_levels": top_levels,
            "distributions": distributions}  # fmt: skip


if __name__ == "__main__":
    sys.path.extend(sys.argv[2:])
    already = set(sys.modules)
    run_the_runner(sys.argv[1])
    print(json.dumps(loaded_report(already)))
