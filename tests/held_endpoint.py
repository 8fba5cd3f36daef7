"""An OpenAI-compatible embeddings endpoint on this machine that holds every request
until the test lets it answer.

A process run with ``MNEMOSYNE_EMBEDDER=openai:hash`` and ``MNEMOSYNE_EMBEDDER_URL``
pointing here embeds through it, so a test knows the moment that process starts
embedding (``asked``) and that it is still at it until ``release`` is set: no
guessing with sleeps.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mnemosyne.testing import HashEmbedder

DIMENSION = 8


class HeldEndpoint:
    def __init__(self) -> None:
        self.asked = threading.Event()  # a request came in
        self.release = threading.Event()  # requests may be answered
        self.requests = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
                endpoint.requests += 1
                endpoint.asked.set()
                endpoint.release.wait(60)
                rows = HashEmbedder(DIMENSION).embed(texts).tolist()
                body = json.dumps({"data": [{"index": i, "embedding": row} for i, row in enumerate(rows)]})
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body.encode())
                except OSError:
                    pass  # the process that asked is gone

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_port}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def environment(self) -> dict[str, str]:
        """What a process needs in its environment to embed here."""
        return {"MNEMOSYNE_EMBEDDER": "openai:hash", "MNEMOSYNE_EMBEDDER_URL": self.url,
                "MNEMOSYNE_EMBEDDER_API_KEY": "sk-test"}

    def close(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def held_endpoint() -> Iterator[HeldEndpoint]:
    endpoint = HeldEndpoint()
    try:
        yield endpoint
    finally:
        endpoint.close()
