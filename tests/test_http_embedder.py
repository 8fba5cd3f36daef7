"""The OpenAI-compatible embedder against a real HTTP server on this machine, and the
embedder lifecycle around it: what is recorded, what is refused, what is never lost."""

from __future__ import annotations

import json
import logging
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from mnemosyne import EmbedderError, Mnemosyne, embedding
from mnemosyne.embedders import openai_compat
from mnemosyne.embedders.openai_compat import OpenAICompatibleEmbedder
from mnemosyne.testing import HashEmbedder


class EmbeddingServer:
    """Serves ``POST /v1/embeddings`` with HashEmbedder vectors of ``dimension``, or
    the failure named by ``mode``: "down" (HTTP 503), "ragged", "null", "nan",
    "drip" (the answer a byte every 0.2 s), "drip-headers" (its headers so), "slow"
    (the answer after a second), "stalled" (after three), "moved"
    (a redirect), "garbled" (a row dropped, another repeated), "error" (an error
    object for an answer), "unauthorized" (HTTP 401 with OpenAI's error body). A
    request holding a text longer than ``longest`` is refused with HTTP 400, as a
    model's token limit is; one holding ``poison`` with HTTP 500, as llama.cpp's
    server answers a text over its limit."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.dimension = 8
        self.longest = 10_000
        self.poison: str | None = None
        self.authorizations: list[str | None] = []
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.authorizations.append(self.headers.get("Authorization"))
                server.paths.append(self.path)
                if server.mode == "down":
                    self.send_error(503)
                    return
                if server.mode == "moved":
                    self.send_response(307)
                    self.send_header("Location", "/elsewhere/embeddings")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if server.mode in ("error", "unauthorized"):
                    body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid"}})
                    self.send_response(401 if server.mode == "unauthorized" else 200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body.encode())
                    return
                if server.mode == "drip-error":
                    self.send_response(500)
                    self.send_header("Content-Length", "100")
                    self.end_headers()
                    for _ in range(25):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.2)
                    return
                if server.mode == "drip-headers":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    for _ in range(25):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.2)
                    return
                if any(len(text) > server.longest for text in request["input"]):
                    self.send_error(400, "input too long")
                    return
                if server.poison is not None and any(server.poison in text for text in request["input"]):
                    self.send_error(500, "input is too large to process")
                    return
                if server.mode in ("slow", "stalled"):
                    time.sleep(1.0 if server.mode == "slow" else 3.0)
                rows = HashEmbedder(server.dimension).embed(request["input"]).tolist()
                if server.mode == "ragged":
                    rows[0] = rows[0][:-1]
                elif server.mode == "null":
                    rows[0] = None
                elif server.mode == "nan":
                    rows[0][0] = float("nan")
                indices = list(range(len(rows)))
                if server.mode == "garbled":
                    indices[-1] = 0
                data = [{"index": i, "embedding": row} for i, row in zip(indices, rows, strict=True)]
                body = json.dumps({"data": data})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                if server.mode == "drip":
                    for byte in body.encode():
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.2)
                    return
                self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_port}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    served = EmbeddingServer()
    monkeypatch.setenv("MNEMOSYNE_EMBEDDER_URL", served.url)
    monkeypatch.setenv("MNEMOSYNE_EMBEDDER_API_KEY", "sk-test-secret")
    monkeypatch.delenv("MNEMOSYNE_EMBEDDER", raising=False)
    yield served
    served.close()


def recorded(db: Path) -> dict | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    return None if row is None else json.loads(row[0])


def vector_sizes(db: Path) -> list[int]:
    """Each stored vector's dimension (float16 on disk)."""
    with sqlite3.connect(db) as conn:
        return [length // 2 for (length,) in conn.execute("SELECT length(vector) FROM memory_vectors")]


def test_vectors_come_from_the_endpoint_and_the_key_stays_in_the_environment(server, tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        mem.remember("the staging server was rebooted")
        assert mem.get_stats().embedder == "openai:hash (8 dims)"
    assert recorded(db) == {"name": "openai", "model": "hash", "dimension": 8}
    assert vector_sizes(db) == [8]
    assert set(server.authorizations) == {"Bearer sk-test-secret"}
    assert b"sk-test-secret" not in db.read_bytes()


@pytest.mark.parametrize("mode", ["ragged", "null", "nan", "down", "garbled", "error"])
def test_a_bad_answer_keeps_the_write_and_the_vector_follows(server, tmp_path: Path, mode: str, caplog):
    db = tmp_path / "m.db"
    server.mode = mode
    with caplog.at_level(logging.WARNING, logger="mnemosyne"):
        with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
            kept = mem.remember_many(["the kestrel rollout starts monday", "the falcon rollout is paused"])
            assert [m.id for m in mem.recall("kestrel rollout", top_k=1)] == kept[:1]
    assert vector_sizes(db) == []
    assert any("failed" in record.message for record in caplog.records)
    server.mode = "ok"
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        assert mem.backfill_vectors() == 2
    assert vector_sizes(db) == [8, 8]


def test_the_first_write_records_the_embedder_even_while_it_is_down(server, tmp_path: Path):
    db = tmp_path / "m.db"
    server.mode = "down"
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        mem.remember("written while the endpoint was down")
    assert recorded(db) == {"name": "openai", "model": "hash", "dimension": 0}
    server.mode = "ok"
    with Mnemosyne(db_path=db) as mem:  # not the best installed model: the recorded one
        assert mem.get_stats().embedder.startswith("openai:hash")
        assert mem.backfill_vectors() == 1
    # The first vectors fix the dimension: another size can no longer pass as this model.
    assert recorded(db) == {"name": "openai", "model": "hash", "dimension": 8}


def test_an_endpoint_serving_another_size_is_a_failure_not_a_mix(server, tmp_path: Path, caplog):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        mem.remember("the cat sat on the mat")
    server.dimension = 16
    for embedder in ("openai:hash", None):  # chosen again, or rebuilt from the record
        # Captured from the open on: the backfill it starts may meet the failure first.
        with caplog.at_level(logging.WARNING, logger="mnemosyne"), Mnemosyne(db_path=db, embedder=embedder) as mem:
            # ", failing" once the failure is met (by the backfill, it may already be).
            assert mem.get_stats().embedder.startswith("openai:hash (8 dims)")
            zebra = mem.remember(f"a zebra crossing, chosen as {embedder}")
            assert zebra in [m.id for m in mem.recall("zebra crossing")]
    # This database's to refuse, not the endpoint's failure: each instance meets it.
    assert caplog.text.count("returned 16-dimensional vectors") == 2
    assert vector_sizes(db) == [8]
    # Waiting will not mend it: what is left to do says how to switch to the new size.
    switch = "mnemosyne reembed --embedder openai:hash --db PATH"
    assert switch in caplog.text
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        with pytest.raises(EmbedderError, match=f"16-dimensional.*{switch}"):
            mem.backfill_vectors()
        assert mem.reembed("openai:hash") == 3
        assert mem.get_stats().embedder == "openai:hash (16 dims)"
    assert vector_sizes(db) == [16, 16, 16]


def test_the_fix_named_for_an_endpoint_given_to_one_object_is_pythons(server, tmp_path: Path, monkeypatch):
    # The CLI builds "openai:hash" for the endpoint the environment names, not this one.
    own = OpenAICompatibleEmbedder("hash", base_url=server.url)
    monkeypatch.setenv("MNEMOSYNE_EMBEDDER_URL", "http://127.0.0.1:9/v1")
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=own) as mem:
        mem.remember("the cat sat on the mat")
    server.dimension = 16
    with Mnemosyne(db_path=db, embedder=own) as mem:
        mem.remember("a zebra crossing")
        with pytest.raises(EmbedderError, match=r"Mnemosyne\(db_path=PATH\)\.reembed\(your_embedder\)"):
            mem.backfill_vectors()
        assert mem.reembed(own) == 2  # and following it works


def test_reembed_to_an_endpoint_records_its_real_dimension(server, tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(32)) as mem:
        mem.remember_many(["the cat sat on the mat", "stock prices fell sharply"])
        assert mem.reembed("openai:hash") == 2
        assert mem.get_stats().embedder == "openai:hash (8 dims)"
    assert recorded(db) == {"name": "openai", "model": "hash", "dimension": 8}
    assert vector_sizes(db) == [8, 8]


def test_a_failed_reembed_changes_nothing_and_the_old_model_carries_on(server, tmp_path: Path):
    db = tmp_path / "m.db"
    server.mode = "nan"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(32)) as mem:
        mem.remember("the cat sat on the mat")
        with pytest.raises(EmbedderError, match="NaN"):
            mem.reembed("openai:hash")
        assert recorded(db) == {"name": "test-hash", "model": "hash-v1-32", "dimension": 32}
        assert vector_sizes(db) == [32]
        # A memory that missed its vector is still backfilled by this instance.
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM memory_vectors")
        assert mem.backfill_vectors() == 1
        assert all(np.isfinite(m.score) for m in mem.recall("cat on the mat"))


class EditingEmbedder(HashEmbedder):
    """Another process edits a memory while this model embeds the old text."""

    def __init__(self, db: Path, memory_id: str) -> None:
        super().__init__(16)
        self._edit: tuple[Path, str] | None = (db, memory_id)

    def embed(self, texts):
        if self._edit is not None:
            db, memory_id = self._edit
            self._edit = None
            with Mnemosyne(db_path=db, embedder="none") as other:
                other.update(memory_id, content="stock prices fell sharply on monday")
        return super().embed(texts)


def test_a_memory_edited_during_reembed_gets_a_vector_of_its_new_text(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(32)) as mem:
        edited = mem.remember("the cat sat on the mat")
        switcher = EditingEmbedder(db, edited)
        assert mem.reembed(switcher) == 1
    with sqlite3.connect(db) as conn:
        (blob,) = conn.execute(
            "SELECT vector FROM memory_vectors JOIN memories USING (seq) WHERE id = ?", (edited,)
        ).fetchone()
    stored = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    new = HashEmbedder(16).embed(["stock prices fell sharply on monday"])[0]
    assert float(stored @ new) > 0.99


def test_a_text_the_model_refuses_costs_only_its_own_vector(server, tmp_path: Path, caplog):
    db = tmp_path / "m.db"
    server.longest = 200
    texts = [f"short fact number {i} about the rollout" for i in range(20)]
    texts.insert(7, "a pasted log line " * 40)  # over the model's limit, and so are its openings of 256 or more
    with caplog.at_level(logging.WARNING, logger="mnemosyne"):
        with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
            ids = mem.remember_many(texts)
            assert vector_sizes(db) == [8] * 20
            assert mem.backfill_vectors() == 0  # no error
            for _ in range(3):
                asked = len(server.paths)
                assert ids[7] in [m.id for m in mem.recall("pasted log line")]  # found by its words
                assert len(server.paths) == asked + 1  # the query's vector: the refused text is not asked again
            mem.remember("written after the refusal")  # the model was never put aside
            assert vector_sizes(db) == [8] * 21
    assert caplog.text.count("refused a text") == 1 and "retrying in" not in caplog.text  # never an outage


def test_a_text_over_the_models_limit_gets_the_vector_of_its_opening(server, tmp_path: Path, caplog):
    db = tmp_path / "m.db"
    server.longest = 1_000  # characters, as a model's token limit
    server.dimension = 64
    pasted = " ".join([*(f"worker {i} finished job {i} without errors" for i in range(30)),
                       *(f"disk {i} of storage node {i} was replaced by the vendor" for i in range(80))])
    opening = len(pasted) // 8  # refused whole, and by halves down to this (688 characters)
    texts = [f"short fact number {i} about the rollout" for i in range(20)]
    texts.insert(7, pasted)
    with caplog.at_level(logging.WARNING, logger="mnemosyne"):
        with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
            ids = mem.remember_many(texts)
            assert vector_sizes(db) == [64] * 21
            asked = len(server.paths)
            assert mem.backfill_vectors() == 0 and len(server.paths) == asked  # nothing left to ask for
    with sqlite3.connect(db) as conn:
        (blob,) = conn.execute(
            "SELECT vector FROM memory_vectors JOIN memories USING (seq) WHERE id = ?", (ids[7],)
        ).fetchone()
    stored = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    model = HashEmbedder(64)
    assert float(stored @ model.embed([pasted[:opening]])[0]) > 0.999
    assert float(stored @ model.embed([pasted])[0]) < 0.5  # not the whole text's
    assert f"refused a text of {len(pasted)} characters; its vector is that of its first {opening}" in caplog.text


def test_a_server_error_on_one_text_costs_only_its_own_vector(server, tmp_path: Path, caplog):
    db = tmp_path / "m.db"
    server.poison = "POISON"
    texts = [f"short fact number {i} about the rollout" for i in range(20)]
    texts.insert(7, "a POISON pill for the model")
    with caplog.at_level(logging.WARNING, logger="mnemosyne"):
        with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
            ids = mem.remember_many(texts)
            assert vector_sizes(db) == [8] * 20
            for _ in range(2):
                asked = len(server.paths)
                assert ids[7] in [m.id for m in mem.recall("poison pill")]
                assert len(server.paths) == asked + 1  # only the query: asked again after a cool-down
            assert mem.backfill_vectors() == 0  # asked again at once, as a failing model is
            mem.remember("written after the server error")
            assert vector_sizes(db) == [8] * 21
            server.poison = None  # the error passes: the text is asked for again when asked to
            assert mem.backfill_vectors() == 1
    assert caplog.text.count("refused a text") == 2 and "retrying in" not in caplog.text


def test_a_server_failing_every_text_is_an_outage_not_a_refusal(server, tmp_path: Path, caplog):
    db = tmp_path / "m.db"
    server.poison = ""  # in every text: HTTP 500 for everything
    with caplog.at_level(logging.WARNING, logger="mnemosyne"):
        with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
            mem.remember_many([f"short fact number {i}" for i in range(5)])
            assert mem.get_stats().embedder.endswith(", failing")
            server.poison = None
            assert mem.backfill_vectors() == 5  # asked again, and the texts were never written off
    assert "retrying in" in caplog.text and "refused a text" not in caplog.text


def test_closing_does_not_wait_for_a_stalled_endpoint(server, tmp_path: Path, monkeypatch):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        mem.remember("embedded while the endpoint answered")
    with Mnemosyne(db_path=db, embedder="none") as other:
        other.remember("stored by a process without the model")
    failures: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    server.mode = "stalled"
    mem = Mnemosyne(db_path=db, embedder=OpenAICompatibleEmbedder("hash", timeout=10))  # backfills in the background
    time.sleep(0.5)  # its request is under way
    started = time.monotonic()
    mem.close()
    assert time.monotonic() - started < 2.5  # not the request's 3 s, nor its 10 s timeout
    time.sleep(3.5)  # the request left behind ends: its answer is dropped, and nothing fails
    assert vector_sizes(db) == [8] and not failures


def test_an_instance_that_gives_up_sooner_does_not_stop_a_more_patient_one(server, tmp_path: Path):
    server.mode = "slow"
    with Mnemosyne(db_path=tmp_path / "hasty.db", embedder=OpenAICompatibleEmbedder("hash", timeout=0.3)) as hasty:
        hasty.remember("asked with a 0.3 s timeout, answered after 1 s")
        assert hasty.get_stats().embedder.endswith(", failing")
        with Mnemosyne(db_path=tmp_path / "m.db", embedder=OpenAICompatibleEmbedder("hash", timeout=5)) as patient:
            patient.remember("asked with a 5 s timeout")
    assert vector_sizes(tmp_path / "m.db") == [8]


def test_an_instance_expecting_another_size_does_not_stop_the_others(server, tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "other.db", embedder=OpenAICompatibleEmbedder("hash", dimension=16)) as other:
        other.remember("this instance expects 16 dimensions; the endpoint serves 8")
        assert other.get_stats().embedder.endswith(", failing")
        with Mnemosyne(db_path=tmp_path / "m.db", embedder="openai:hash") as mem:
            mem.remember("the same endpoint serves this one well")
            assert mem.get_stats().embedder == "openai:hash (8 dims)"
    assert vector_sizes(tmp_path / "m.db") == [8]


def test_one_answer_of_another_size_does_not_spoil_later_ones(server, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(embedding, "RETRY_AFTER_S", 0.0)  # the endpoint is asked again at once
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        mem.remember("the cat sat on the mat")
    server.dimension = 35
    with Mnemosyne(db_path=db, embedder="openai:hash") as mem:
        mem.remember("stored while the endpoint served another size")
        assert vector_sizes(db) == [8]
        server.dimension = 8
        assert mem.backfill_vectors() == 1
    assert vector_sizes(db) == [8, 8]


def test_the_timeout_bounds_an_answer_body_however_slowly_it_comes(server):
    server.mode = "drip"  # each byte well within the timeout, the answer far beyond it
    embedder = OpenAICompatibleEmbedder("hash", timeout=1.0)
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="within 1 s"):
        embedder.embed(["the cat sat on the mat"])
    assert time.monotonic() - started < 3


def test_the_timeout_bounds_a_host_lookup_that_does_not_answer(server, monkeypatch):
    by_name = OpenAICompatibleEmbedder("hash", base_url=server.url.replace("127.0.0.1", "localhost"), timeout=1.0)
    look_up, lookups, stalled = socket.getaddrinfo, [], []

    def resolver(host, *args, **kwargs):  # once stalled, one that retries for long
        if host == "localhost":
            lookups.append(host)
            if stalled:
                time.sleep(5)
        return look_up(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    assert by_name.embed(["the cat sat on the mat"]).shape == (1, 8)
    assert lookups == ["localhost"]  # once: the connection goes to the addresses found
    stalled.append(True)
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="no address for localhost"):
        by_name.embed(["the cat sat on the mat"])
    assert time.monotonic() - started < 2


def test_a_lookup_that_used_up_the_time_says_so_when_the_deadline_passes_before_it_is_handled(server, monkeypatch):
    by_name = OpenAICompatibleEmbedder("hash", base_url=server.url.replace("127.0.0.1", "localhost"), timeout=0.5)
    look_up, resolve = socket.getaddrinfo, openai_compat._Deadline.resolve

    def stalled(host, *args, **kwargs):
        if host == "localhost":
            time.sleep(2)
        return look_up(host, *args, **kwargs)

    def resolve_then_lag(self, host, port):  # a loaded machine: the deadline fires first
        try:
            return resolve(self, host, port)
        except TimeoutError:
            time.sleep(0.3)
            raise

    monkeypatch.setattr(socket, "getaddrinfo", stalled)
    monkeypatch.setattr(openai_compat._Deadline, "resolve", resolve_then_lag)
    with pytest.raises(EmbedderError, match="no address for localhost"):
        by_name.embed(["the cat sat on the mat"])


def test_the_timeout_bounds_headers_however_slowly_they_come(server):
    server.mode = "drip-headers"
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="within 1 s"):
        OpenAICompatibleEmbedder("hash", timeout=1.0).embed(["the cat sat on the mat"])
    assert time.monotonic() - started < 3


def test_the_timeout_bounds_an_error_answer_and_a_proxy_however_slowly_they_come(server, monkeypatch):
    server.mode = "drip-error"
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="within 1 s"):
        OpenAICompatibleEmbedder("hash", timeout=1.0).embed(["the cat sat on the mat"])
    assert time.monotonic() - started < 3

    proxy = socket.create_server(("127.0.0.1", 0))

    def trickle() -> None:  # a proxy answering CONNECT a byte at a time
        connection, _ = proxy.accept()
        with connection:
            connection.recv(4096)
            for byte in b"HTTP/1.1 200 Connection established\r\n\r\n":
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    threading.Thread(target=trickle, daemon=True).start()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.getsockname()[1]}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="within 1 s"):
        OpenAICompatibleEmbedder("hash", base_url="https://embeddings.example.invalid/v1", timeout=1.0).embed(["x"])
    assert time.monotonic() - started < 3
    proxy.close()


def test_a_redirect_is_refused_so_the_key_goes_nowhere_else(server):
    server.mode = "moved"
    with pytest.raises(EmbedderError, match="redirects to .*/elsewhere/embeddings; set its final address"):
        OpenAICompatibleEmbedder("hash").embed(["the cat sat on the mat"])
    assert server.paths == ["/v1/embeddings"]


@pytest.mark.parametrize(("mode", "said"), [
    ("garbled", r"indices are \[0, 0\], not each of 0..1 once"),
    ("error", "answered with an error: Incorrect API key provided"),
    ("unauthorized", r"HTTP Error 401: Unauthorized \(Incorrect API key provided\)"),
])
def test_a_bad_answer_says_what_is_wrong(server, mode: str, said: str):
    server.mode = mode
    with pytest.raises(EmbedderError, match=said):
        OpenAICompatibleEmbedder("hash").embed(["the cat sat on the mat", "the dog sat on the log"])


def test_a_padded_model_name_is_the_model_name(server, tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "m.db", embedder="openai:  hash ") as mem:
        mem.remember("the cat sat on the mat")
    assert recorded(tmp_path / "m.db") == {"name": "openai", "model": "hash", "dimension": 8}


def test_an_endpoint_that_refuses_every_text_fails_a_switch_whole(server, tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(db_path=db, embedder=HashEmbedder(32)) as mem:
        mem.remember_many([f"memory {i} about the rollout" for i in range(10)])
        server.longest = 0  # a model that embeds nothing: every request is a 400
        with pytest.raises(EmbedderError, match="refuses any text"):
            mem.reembed("openai:hash")
    assert recorded(db) == {"name": "test-hash", "model": "hash-v1-32", "dimension": 32}
    assert vector_sizes(db) == [32] * 10


def test_an_endpoint_that_refuses_every_text_is_asked_twice_and_logged_once(server, tmp_path: Path, caplog):
    server.longest = 0  # an unknown model name: vLLM and others answer 400 to any text
    with caplog.at_level(logging.WARNING, logger="mnemosyne"):
        with Mnemosyne(db_path=tmp_path / "m.db", embedder="openai:hash") as mem:
            mem.remember_many([f"memory {i} about the rollout" for i in range(40)])
            assert len(mem.recall("rollout", top_k=40)) == 40
    assert len(server.paths) == 2  # the batch, then a one-word probe: not each text, twice
    assert [r.message for r in caplog.records if "refuses any text" in r.message] == [caplog.records[0].message]
    assert vector_sizes(tmp_path / "m.db") == []


def test_instances_sharing_a_down_endpoint_ask_it_and_report_it_once(server, tmp_path: Path, caplog):
    server.mode = "down"  # an MCP server opens an instance per session: none waits for it again
    with caplog.at_level(logging.WARNING, logger="mnemosyne"):
        for agent in ("planner", "coder", "reviewer"):
            with Mnemosyne(agent, tmp_path / "m.db", embedder="openai:hash") as mem:
                mem.remember(f"a note from the {agent}")
    assert len(server.paths) == 1
    assert caplog.text.count("retrying in") == 1
    server.mode = "ok"
    with Mnemosyne("planner", tmp_path / "m.db", embedder="openai:hash") as mem:
        assert mem.backfill_vectors() == 3  # asked for: the model is tried now, cool-down or not


def test_an_answer_only_one_database_cannot_take_leaves_the_endpoint_to_the_others(server, tmp_path: Path):
    with Mnemosyne(db_path=tmp_path / "a.db", embedder="openai:hash") as mem:
        mem.remember("recorded at 8 dims")
    server.dimension = 16  # the endpoint now serves another model size
    with Mnemosyne(db_path=tmp_path / "a.db", embedder="openai:hash") as old:
        old.remember("this database cannot take 16 dims")
        with Mnemosyne(db_path=tmp_path / "b.db", embedder="openai:hash") as new:
            new.remember_many(["a new database takes them", "and records 16"])
    assert vector_sizes(tmp_path / "a.db") == [8]
    assert vector_sizes(tmp_path / "b.db") == [16, 16]
