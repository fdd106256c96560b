"""A hub on the loopback for the tests of the released weights' download: a real HTTP server on 127.0.0.1
that answers the file-resolution requests huggingface_hub makes for the released ``swift.ckpt``."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter

from autogluon_maya.tabswift.checkpoints_io.hub import FILENAME, REPO_ID


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class LoopbackHub:
    """The hub's file resolution as huggingface_hub 1.x uses it: ``HEAD`` and ``GET`` of
    ``/{repo_id}/resolve/{revision}/{filename}``, answered with ``X-Repo-Commit`` (required), ``ETag`` and
    ``X-Linked-Etag`` (the content's sha256, as the hub names an LFS file; required), ``Content-Length`` and
    ``X-Linked-Size``.  Anything else is a 404.  Counts the file's requests by method, records the revisions asked
    for and every request's path.
    ``get_delay`` slows every GET down; ``fail_gets`` answers them 503."""

    def __init__(self, body: bytes):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.body, self.get_delay, self.fail_gets = body, 0.0, False
        self.counts: Counter = Counter()
        self.revisions: list = []
        self.paths: list = []
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, send_body: bool):
                head, sep, rest = self.path.partition("/resolve/")
                revision, _, filename = rest.partition("/")
                with hub._lock:
                    hub.paths.append(f"{self.command} {self.path}")
                if not sep or head.strip("/") != REPO_ID or filename != FILENAME:
                    self.send_error(404)
                    return
                with hub._lock:
                    hub.counts[self.command] += 1
                    hub.revisions.append(revision)
                if send_body and hub.get_delay:
                    time.sleep(hub.get_delay)
                if send_body and hub.fail_gets:
                    self.send_error(503)
                    return
                body = hub.body
                is_commit = len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)
                commit = revision if is_commit else hashlib.sha1(body).hexdigest()
                self.send_response(200)
                for k, v in {"X-Repo-Commit": commit, "ETag": f'"{sha256_of(body)}"',
                             "X-Linked-Etag": f'"{sha256_of(body)}"', "X-Linked-Size": str(len(body)),
                             "Content-Length": str(len(body)), "Content-Type": "application/octet-stream"}.items():
                    self.send_header(k, v)
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def do_HEAD(self):  # noqa: N802 (http.server's names)
                self._answer(send_body=False)

            def do_GET(self):  # noqa: N802
                self._answer(send_body=True)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.running = True

    def requests(self) -> int:
        """Every request, of any path (huggingface_hub asks a fresh cache for more than the file)."""
        return len(self.paths)

    def stop(self):
        if self.running:
            self.server.shutdown()
            self.server.server_close()
            self.running = False
