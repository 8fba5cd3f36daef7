"""The bundled int8 MiniLM model against vectors made by sentence-transformers itself.

The reference vectors come from ``scripts/make_reference_vectors.py`` (torch, fp32);
this file needs only the ``local`` extra.
"""

from __future__ import annotations

import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
pytest.importorskip("tokenizers", reason="the 'local' extra (tokenizers) is not installed")

from mnemosyne.embedders.base import Embedder  # noqa: E402
from mnemosyne.embedders.local import MAX_PIECES, LocalEmbedder, plan_batches  # noqa: E402
from mnemosyne.errors import EmbedderError, InvalidInputError, MissingDependencyError  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
# Quantisation costs about 0.01 of cosine on average; 0.97 leaves room for the worst
# sentence while still failing on any real pooling, truncation or tokenizer mistake
# (those fall well below 0.9).
MIN_COSINE = 0.97


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def texts(reference: dict[str, Any]) -> dict[str, str]:
    return {item["key"]: item["text"] for item in reference["sentences"]}


@pytest.fixture(scope="module")
def expected(reference: dict[str, Any]) -> dict[str, np.ndarray]:
    # Re-normalise: the fixture is rounded to 5 decimals.
    vectors = {item["key"]: np.asarray(item["vector"], dtype=np.float32) for item in reference["sentences"]}
    return {key: vector / np.linalg.norm(vector) for key, vector in vectors.items()}


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    model = LocalEmbedder()
    model.load()
    return model


@pytest.fixture(scope="module")
def embedded(embedder: LocalEmbedder, texts: dict[str, str]) -> dict[str, np.ndarray]:
    vectors = embedder.embed(list(texts.values()))
    return dict(zip(texts, vectors, strict=True))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_fixture_has_the_cases_this_file_relies_on(reference: dict[str, Any]) -> None:
    keys = {item["key"] for item in reference["sentences"]}
    assert {"typeface_question", "typeface_answer", "unrelated_weather", "long_paragraph"} <= keys
    assert reference["dimension"] == 384


def test_satisfies_the_embedder_contract(embedder: LocalEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("local", 384)
    assert embedder.model == "all-MiniLM-L6-v2-int8"


@pytest.mark.parametrize(
    "key", [item["key"] for item in json.loads(FIXTURE.read_text(encoding="utf-8"))["sentences"]]
)
def test_each_vector_matches_sentence_transformers(
    key: str, embedded: dict[str, np.ndarray], expected: dict[str, np.ndarray]
) -> None:
    assert cosine(embedded[key], expected[key]) >= MIN_COSINE


def test_small_batches_keep_every_row_in_its_place(
    texts: dict[str, str], expected: dict[str, np.ndarray]
) -> None:
    # Several batches, each sorted by length: any slip in putting rows back in input
    # order would pair a vector with the wrong sentence and fail by a wide margin.
    vectors = LocalEmbedder(batch_size=3).embed(list(texts.values()))
    cosines = [cosine(vector, expected[key]) for key, vector in zip(texts, vectors, strict=True)]
    assert min(cosines) >= MIN_COSINE


def test_one_text_at_a_time_matches_too(
    embedder: LocalEmbedder, texts: dict[str, str], expected: dict[str, np.ndarray]
) -> None:
    for key in ("typeface_answer", "short_word", "japanese", "long_list"):
        assert cosine(embedder.embed([texts[key]])[0], expected[key]) >= MIN_COSINE


def test_batches_group_similar_lengths_within_limits() -> None:
    lengths = [256] * 40 + [20] * 100 + [3]
    batches = plan_batches(lengths, batch_size=64, max_tokens=4096)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        longest = max(lengths[i] for i in batch)
        assert len(batch) <= 64 and len(batch) * longest <= 4096
        assert all(2 * lengths[i] >= longest for i in batch)
    assert plan_batches([], batch_size=64) == []


def test_vectors_are_float32_unit_rows(embedder: LocalEmbedder, texts: dict[str, str]) -> None:
    vectors = embedder.embed(list(texts.values()))
    assert vectors.shape == (len(texts), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_an_empty_matrix(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_output_follows_input_order(embedder: LocalEmbedder, texts: dict[str, str]) -> None:
    # The same texts make the same length-sorted batches in either order, so the
    # rows must be identical, only reversed.
    forward = embedder.embed(list(texts.values()))
    backward = embedder.embed(list(texts.values())[::-1])
    np.testing.assert_allclose(forward, backward[::-1], atol=1e-6)


def test_paraphrase_is_closer_than_an_unrelated_sentence(embedded: dict[str, np.ndarray]) -> None:
    question, answer = embedded["typeface_question"], embedded["typeface_answer"]
    unrelated = embedded["unrelated_weather"]
    paraphrase = cosine(question, answer)
    # sentence-transformers itself gives about 0.41 against 0.03.
    assert paraphrase > cosine(question, unrelated) + 0.2
    assert paraphrase > cosine(answer, unrelated) + 0.2


def test_a_text_past_256_tokens_is_read_to_its_end(embedder: LocalEmbedder, texts: dict[str, str]) -> None:
    long_text = texts["long_paragraph"]  # 442 tokens
    closing = "Our office cat, a grey Maine Coon called Biscuit, sleeps on the server rack."
    plain, with_cat = embedder.embed([long_text, f"{long_text} {closing}"])
    (question,) = embedder.embed(["whose pet sleeps on the server rack?"])
    # 0.170 -> 0.193: one closing sentence after 442 tokens, beside the 256 the text opens with.
    assert cosine(with_cat, question) > cosine(plain, question) + 0.015


def test_past_its_pieces_a_huge_text_is_left_to_its_words(embedder: LocalEmbedder) -> None:
    # Each piece holds MAX_TOKENS - 2 tokens of text; this fills every piece and more.
    huge = " ".join(f"step {i}: check the logs for errors." for i in range(MAX_PIECES * 30))
    vectors = embedder.embed([huge, f"{huge} Completely different closing words about cats."])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_threads_can_share_one_embedder(texts: dict[str, str]) -> None:
    # Servers call the core from worker threads: the first calls race to load.
    fresh = LocalEmbedder()
    batch = [texts["typeface_answer"], texts["allergy"], texts["emoji"]]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(fresh.embed, [batch] * 8))
    for vectors in results:
        np.testing.assert_allclose(vectors, results[0], atol=1e-6)


def test_a_bare_string_is_rejected(embedder: LocalEmbedder) -> None:
    with pytest.raises(InvalidInputError):
        embedder.embed("the font is Inter")


def test_threads_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOSYNE_THREADS", "2")
    assert LocalEmbedder().embed(["two threads"]).shape == (1, 384)


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_bad_thread_count_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MNEMOSYNE_THREADS", value)
    with pytest.raises(InvalidInputError, match="MNEMOSYNE_THREADS"):
        LocalEmbedder()


def test_a_bad_threads_argument_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="threads"):
        LocalEmbedder(threads=0)


def test_a_broken_model_file_is_an_embedder_error(tmp_path: Path) -> None:
    bundled = resources.files("mnemosyne.embedders") / "models" / "all-MiniLM-L6-v2"
    (tmp_path / "tokenizer.json").write_bytes((bundled / "tokenizer.json").read_bytes())
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    with pytest.raises(EmbedderError) as caught:
        LocalEmbedder(model_dir=tmp_path).embed(["hello"])
    assert caught.value.__cause__ is not None


def test_a_missing_model_folder_is_an_embedder_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError):
        LocalEmbedder(model_dir=tmp_path / "nowhere").embed(["hello"])


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def without_onnxruntime(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "onnxruntime" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", without_onnxruntime)
    with pytest.raises(MissingDependencyError) as caught:
        LocalEmbedder()
    assert caught.value.extra == "local"
