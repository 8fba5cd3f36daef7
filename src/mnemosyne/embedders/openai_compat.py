"""Embeddings from an OpenAI-compatible HTTP endpoint (OpenAI, Ollama, vLLM, ...).

The API key is read from the environment only (``MNEMOSYNE_EMBEDDER_API_KEY``, else
``OPENAI_API_KEY``) and is never written to the database or to logs.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

import numpy as np

from ..errors import EmbedderError, EmbedderInputError
from .base import normalise_rows

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_INPUT_REFUSED = frozenset({400, 413, 422})  # HTTP statuses that blame the request's texts


class OpenAICompatibleEmbedder:
    """POSTs to ``{base_url}/embeddings``.

    >>> OpenAICompatibleEmbedder("nomic-embed-text", base_url="http://127.0.0.1:11434/v1")  # Ollama

    ``dimension``, when given, is checked on every answer; when not, the size of the
    first answer the caller accepts is the model's (Mnemosyne records it). ``timeout``
    bounds connecting, each wait for the server, and the reading of an answer's body
    as a whole, however slowly it trickles in.
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
        self.base_url = (
            base_url or os.environ.get("MNEMOSYNE_EMBEDDER_URL") or os.environ.get("OPENAI_BASE_URL")
            or DEFAULT_BASE_URL
        ).rstrip("/")
        self.dimension = dimension
        self._timeout = timeout
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
        vectors = normalise_rows(matrix)
        if self.dimension is not None and vectors.shape[1] != self.dimension:
            raise EmbedderError(
                f"{self.base_url} returned {vectors.shape[1]}-dimensional vectors for {self.model!r}, "
                f"expected {self.dimension}"
            )
        return vectors

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
        deadline = time.monotonic() + self._timeout
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                body = b""
                while chunk := response.read1(65_536):  # one read at a time, to check the deadline
                    body += chunk
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no complete answer within {self._timeout:g} s")
            payload = json.loads(body)
            data = sorted(payload["data"], key=lambda item: item["index"])
            return [item["embedding"] for item in data]
        except urllib.error.HTTPError as exc:
            # 400, 413, 422: this input (too long, say), not the service. Retried in
            # halves by the caller, so the other texts still get their vectors.
            refused = EmbedderInputError if exc.code in _INPUT_REFUSED else EmbedderError
            raise refused(f"embedding request to {self.base_url} for {self.model!r} failed: {exc}") from exc
        except (urllib.error.URLError, TimeoutError, OSError, ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"embedding request to {self.base_url} for {self.model!r} failed: {exc}") from exc
