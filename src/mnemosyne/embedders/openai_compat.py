"""Embeddings from an OpenAI-compatible HTTP endpoint (OpenAI, Ollama, vLLM, ...).

The API key is read from the environment only (``MNEMOSYNE_EMBEDDER_API_KEY``, else
``OPENAI_API_KEY``) and is never written to the database or to logs.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbedderError, EmbedderInputError
from .base import normalise_rows

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# HTTP statuses that blame the request's texts rather than the service.
_INPUT_REFUSED = frozenset({400, 413, 422})
# One that may: llama.cpp's server answers 500 to a text over the model's limit, as
# any server does when it fails. The caller tells a service failing on every text
# by asking it for one word, and asks for a text refused so again later.
_MAYBE_INPUT_REFUSED = frozenset({500})


def configured_base_url() -> str:
    """The endpoint an embedder built from a spec ("openai:<model>") calls."""
    address = os.environ.get("MNEMOSYNE_EMBEDDER_URL") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    return address.rstrip("/")


class OpenAICompatibleEmbedder:
    """POSTs to ``{base_url}/embeddings``.

    >>> OpenAICompatibleEmbedder("nomic-embed-text", base_url="http://127.0.0.1:11434/v1")  # Ollama

    ``dimension``, when given, is the size its vectors must have (Mnemosyne refuses
    answers of another size); when not, the size of the first answer the caller
    accepts is the model's (Mnemosyne records it). ``timeout`` bounds each request as
    a whole, from the host's lookup to the last byte of the answer, however slowly it
    trickles in. Redirects are refused: the API key goes to ``base_url`` only.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        dimension: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 128,
    ) -> None:
        self.model = model
        self.base_url = (base_url or configured_base_url()).rstrip("/")
        self.dimension = dimension
        self.timeout = timeout
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            rows.extend(self._request(list(texts[start : start + self._batch_size])))
        if not rows:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:  # rows of different lengths, or not numbers
            raise EmbedderError(f"{self.base_url} returned malformed embeddings for {self.model!r}: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbedderError(f"{self.base_url} returned embeddings of shape {matrix.shape} for {self.model!r}")
        return normalise_rows(matrix)

    def _request(self, batch: list[str]) -> list[list[float]]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get("MNEMOSYNE_EMBEDDER_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            f"{self.base_url}/embeddings",
            data=json.dumps({"model": self.model, "input": batch}).encode(),
            headers=headers,
            method="POST",
        )
        failed = f"embedding request to {self.base_url} for {self.model!r} failed"
        try:
            body = _exchange(request, self.timeout)
        except _Status as exc:
            # This input (too long, say), not the service: retried in halves by the
            # caller, so the other texts still get their vectors.
            if exc.code in _INPUT_REFUSED or exc.code in _MAYBE_INPUT_REFUSED:
                raise EmbedderInputError(f"{failed}: {exc}", lasting=exc.code in _INPUT_REFUSED) from exc
            raise EmbedderError(f"{failed}: {exc}") from exc
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as exc:
            raise EmbedderError(f"{failed}: {exc}") from exc
        try:
            return _embeddings(json.loads(body), len(batch))
        except (ValueError, RecursionError) as exc:  # not JSON (or nested too deep), or not an answer
            raise EmbedderError(f"{failed}: {exc}") from exc


class _Status(Exception):
    """An answer with an error status, with what its body said."""

    def __init__(self, error: urllib.error.HTTPError, said: str) -> None:
        super().__init__(f"{error}{said}")
        self.code = error.code


def _exchange(request: urllib.request.Request, timeout: float) -> bytes:
    """The body of the answer to ``request``, all within ``timeout`` seconds: a server
    (or proxy) that trickles its headers or body byte by byte has its connection
    closed at the deadline (a socket timeout alone bounds each wait, not their sum).
    An error status raises :class:`_Status`, its body read within the deadline too."""
    deadline = _Deadline(timeout)
    opener = urllib.request.build_opener(_NoRedirects, _WatchedHTTP(deadline), _WatchedHTTPS(deadline))
    late = TimeoutError(f"no complete answer within {timeout:g} s")
    try:
        with opener.open(request, timeout=timeout) as response:
            body = bytes(response.read())
    except urllib.error.HTTPError as exc:
        said = _said(exc)
        if deadline.expired.is_set():
            raise late from exc
        raise _Status(exc, said) from exc
    except (OSError, http.client.HTTPException) as exc:
        # A lookup that used up the time says so, though the deadline may have
        # passed before this handler runs.
        if deadline.expired.is_set() and not isinstance(getattr(exc, "reason", exc), _NoAddress):
            raise late from exc
        raise
    finally:
        deadline.cancel()
    if deadline.expired.is_set():  # cut short: what was read may be any part of the answer
        raise late
    return body


class _NoAddress(TimeoutError):
    """A host lookup that did not answer within the time left."""


class _Deadline:
    """Shuts the sockets of one request down when its time is up, and any it opens
    after that at once."""

    def __init__(self, timeout: float) -> None:
        self.expired = threading.Event()
        self._end = time.monotonic() + timeout
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def resolve(self, host: str, port: int) -> list[str]:
        """The addresses of ``host``, looked up within the time left (its errors raised
        here). A resolver that does not answer holds a lookup for as long as it
        retries, and no socket is there yet to shut; the lookup is left to end on
        its own."""
        with contextlib.suppress(ValueError):
            ipaddress.ip_address(host)
            return [host]  # an address already: nothing to look up
        found: list[list[str] | BaseException] = []

        def look_up() -> None:
            try:
                answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                found.append(list(dict.fromkeys(str(sockaddr[0]) for *_, sockaddr in answers)))
            except BaseException as exc:  # handed to the request's thread
                found.append(exc)

        lookup = threading.Thread(target=look_up, name="mnemosyne-resolve", daemon=True)
        lookup.start()
        lookup.join(max(0.0, self._end - time.monotonic()))
        if not found:
            raise _NoAddress(f"no address for {host} within the timeout")
        if isinstance(found[0], BaseException):
            raise found[0]
        return found[0]

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired.is_set():
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            self.expired.set()
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error, not followed: it would carry the API key to another host
    (urllib copies every header), and a POST that moved is a setting to fix."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        raise urllib.error.HTTPError(
            req.full_url, code, f"{msg}: the endpoint redirects to {newurl}; set its final address "
            "as the base URL", headers, fp)


class _WatchedHTTP(urllib.request.HTTPHandler):
    """Opens connections whose sockets the request's deadline watches."""

    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self._deadline), req)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    """:class:`_WatchedHTTP` for https."""

    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(
            _watched(http.client.HTTPSConnection, self._deadline), req,
            context=self._context,  # type: ignore[attr-defined]
        )


def _watched(
    connection: type[http.client.HTTPConnection], deadline: _Deadline
) -> type[http.client.HTTPConnection]:
    class Watched(connection):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            create = self._create_connection  # type: ignore[has-type]

            def created(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
                host, port = address
                refused: OSError | None = None
                for ip in deadline.resolve(host, port):  # each as create_connection would
                    try:
                        sock = create((ip, port), *args, **kwargs)  # an address: no second lookup
                        break
                    except OSError as exc:
                        refused = exc
                else:
                    raise refused or OSError(f"no address for {host}")
                deadline.watch(sock)  # before a proxy's tunnel or TLS is set up over it
                return sock

            self._create_connection = created

        def connect(self) -> None:
            super().connect()
            deadline.watch(self.sock)  # TLS takes the connection over in a socket of its own

    return Watched


def _embeddings(payload: object, count: int) -> list[list[float]]:
    """The embeddings of an OpenAI-style answer, in the order of the inputs; any other
    shape is a ValueError that says what is wrong."""
    if isinstance(payload, dict) and "error" in payload:
        raise ValueError(f"the endpoint answered with an error: {_message(payload)}")
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ValueError(f"the answer has no list of embeddings under 'data': {str(payload)[:200]}")
    indices = [item.get("index") for item in data]
    if len(data) != count or set(indices) != set(range(count)):
        # A dropped or repeated row would pair a vector with the wrong memory.
        raise ValueError(f"the answer's indices are {indices[:20]}, not each of 0..{count - 1} once")
    by_index = {item["index"]: item.get("embedding") for item in data}
    return [by_index[i] for i in range(count)]


def _said(error: urllib.error.HTTPError) -> str:
    """What an endpoint's error body says (OpenAI's ``error.message``), briefly."""
    try:
        body = error.read(2_000).decode("utf-8", "replace")
    except (OSError, ValueError, AttributeError):
        return ""
    try:
        text = _message(json.loads(body))
    except ValueError:  # plain text says something; an HTML error page, only its status
        text = "" if body.lstrip().startswith("<") else " ".join(body.split())[:300]
    return f" ({text})" if text else ""


def _message(payload: object) -> str:
    """The ``error`` an OpenAI-style body holds (its ``message``, if it has one), else the body."""
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        error = error.get("message", error)
    return " ".join(str(error).split())[:300]
