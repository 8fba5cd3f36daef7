"""The bundled embedding model: all-MiniLM-L6-v2 as int8 ONNX, run without torch.

Needs only ``onnxruntime``, ``tokenizers`` and numpy (the ``local`` extra). The model
files ship inside the package (``models/all-MiniLM-L6-v2/``, made by
``scripts/export_minilm_onnx.py``), so nothing is downloaded, ever.
"""

from __future__ import annotations

import importlib.util
import os
import weakref
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _fork
from ..errors import EmbedderError, InvalidInputError, MissingDependencyError
from . import _onnx_fork
from .base import normalise_rows

if TYPE_CHECKING:
    from importlib.abc import Traversable

    from tokenizers import Encoding, Tokenizer

# The package this module lives in, where the model folder sits beside it.
_PACKAGE = __name__.rpartition(".")[0]
MODEL_FOLDER = "all-MiniLM-L6-v2"
THREADS_ENV_VAR = "MNEMOSYNE_THREADS"
# The original model's max_seq_length: it never reads more tokens at once, or long
# texts would get vectors the model was never trained to produce.
MAX_TOKENS = 256
# A longer text is read in pieces of MAX_TOKENS: cut, as sentence-transformers cuts
# it, a memory would be found by meaning only for its first 200 words or so. Past
# this many pieces (about 3,000 words, half a second) the rest is found by its words
# alone, so that one huge memory cannot make its ``remember`` take seconds.
MAX_PIECES = 16
# Characters of a text handed to the tokenizer: it reads a whole text before the
# pieces are cut from it, 1.3 s for 2 MB. English runs 4-5 characters a token and CJK
# one; 32 leaves room for long rare words, so the cut only ever drops text past the
# pieces that are read.
MAX_CHARS = MAX_PIECES * MAX_TOKENS * 32
# Texts per model run. On one thread 16 ran 10-15% faster than 64 (the activations
# stay in cache), and fewer texts share each dynamic quantisation scale.
BATCH_SIZE = 16
# Padded tokens per model run: 16 texts of 256 tokens keep attention's scratch memory
# near 50 MB.
MAX_BATCH_TOKENS = 4096
_RUNTIME_MODULES = ("onnxruntime", "tokenizers")


class LocalEmbedder:
    """Embeds text with the bundled all-MiniLM-L6-v2 (384 dimensions, int8 ONNX).

    >>> embedder = LocalEmbedder()
    >>> embedder.embed(["the font is Inter"]).shape
    (1, 384)

    Vectors match sentence-transformers' own (mean pooling, then L2 normalisation)
    to a cosine of about 0.99. A text longer than ``MAX_TOKENS`` is read in pieces,
    not cut (``MAX_PIECES``). The model loads on the first ``embed`` (about 0.3 s)
    or when ``load()`` is called. ONNX Runtime uses one thread unless ``threads`` or
    the ``MNEMOSYNE_THREADS`` environment variable says otherwise. ``model_dir`` points
    at another export of the *same* model (``model.onnx`` + ``tokenizer.json``); the
    recorded ``model`` id does not change with it.

    The int8 model scales its activations per run, so a text's vector varies slightly
    with the texts batched alongside it (cosine about 0.99 with the same text alone);
    ``batch_size=1`` makes every vector independent of the others, at about 30% more
    CPU for short texts.
    """

    name = "local"
    model = "all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        # find_spec does not import, so a missing extra is reported at construction
        # while `import mnemosyne` and opening a database stay fast.
        if any(importlib.util.find_spec(module) is None for module in _RUNTIME_MODULES):
            raise MissingDependencyError("the local embedding model", "local")
        if batch_size < 1:
            raise InvalidInputError(f"batch_size must be at least 1, got {batch_size}")
        self._files: Traversable | Path = (
            resources.files(_PACKAGE) / "models" / MODEL_FOLDER if model_dir is None else Path(model_dir)
        )
        self._batch_size = batch_size
        self._threads = _thread_count(threads)
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._load_lock = _fork.Lock()

    def load(self) -> None:
        """Load the model now rather than on the first ``embed`` (safe to repeat)."""
        self._loaded()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one unit-length float32 row per text, in the order given."""
        if isinstance(texts, str):
            raise InvalidInputError("embed() takes a sequence of texts, not a single string")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if not all(isinstance(text, str) for text in texts):
            raise InvalidInputError("embed() takes only strings")
        session, tokenizer = self._loaded()
        try:
            # One text at a time: encode_batch would spread over every core, and the
            # thread budget is the point of MNEMOSYNE_THREADS. Tokenising is under 5%
            # of the work, so little is lost.
            encodings = [tokenizer.encode(text[:MAX_CHARS]) for text in texts]
        except Exception as exc:
            raise EmbedderError(f"the local embedding model could not tokenise: {exc}") from exc
        pieces = [[encoding, *encoding.overflowing][:MAX_PIECES] for encoding in encodings]
        flat = [piece for of_text in pieces for piece in of_text]
        lengths = np.array([len(piece.ids) for piece in flat])
        pooled = np.empty((len(flat), self.dimension), dtype=np.float32)
        for rows in plan_batches(lengths.tolist(), self._batch_size):
            pooled[rows] = self._pool_batch(session, [flat[i] for i in rows])
        # A text's vector is that of its first piece, where a note says what it is
        # about, plus that of all its tokens (each piece's mean weighted by its
        # tokens), so a long body does not drown its opening. On LongMemEval-S the
        # model alone ranked every evidence turn in its first 10 for 0.592 of the
        # questions so, 0.571 with either alone (batches alone move that by 0.03).
        # A text of one piece gets its own vector.
        starts = np.cumsum([0, *(len(of_text) for of_text in pieces[:-1])])  # each text's first piece
        whole = np.add.reduceat(pooled * lengths[:, None], starts)
        return normalise_rows(normalise_rows(pooled[starts]) + normalise_rows(whole))

    def _pool_batch(self, session: Any, encodings: list[Encoding]) -> np.ndarray:
        """The mean of each encoding's token vectors, not yet normalised."""
        width = max(len(e.ids) for e in encodings)
        input_ids = np.zeros((len(encodings), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            input_ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        try:
            (hidden,) = session.run(["last_hidden_state"], feed)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"the local embedding model failed: {exc}") from exc
        return _mean_pool(np.asarray(hidden, dtype=np.float32), mask)

    def _loaded(self) -> tuple[Any, Tokenizer]:
        # Servers embed from worker threads; the lock keeps two of them from loading
        # the model twice. Once loaded, session.run is itself thread-safe.
        with self._load_lock:
            if self._session is None or self._tokenizer is None:
                self._tokenizer = self._load_tokenizer()
                self._session = self._load_session()
                _loaded_embedders.add(self)
            return self._session, self._tokenizer

    def _load_tokenizer(self) -> Tokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependencyError("the local embedding model", "local") from exc
        try:
            tokenizer = Tokenizer.from_str((self._files / "tokenizer.json").read_text(encoding="utf-8"))
        except Exception as exc:
            raise EmbedderError(f"cannot load the local tokenizer from {self._files}: {exc}") from exc
        # Set here, not only in the file, so a model_dir with the upstream tokenizer.json
        # (128 tokens, fixed padding) still behaves like sentence-transformers.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        return tokenizer

    def _load_session(self) -> Any:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingDependencyError("the local embedding model", "local") from exc
        options = ort.SessionOptions()
        # More than one thread collapsed throughput on shared 2-core machines, so the
        # default is 1 and more must be asked for.
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = self._threads
        # Idle worker threads otherwise spin and steal a shared core from the caller.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: load-time notices are not the user's concern
        try:
            # as_file gives a real path even if the package is zipped; ONNX Runtime
            # reads the whole file while building the session, so it may vanish after.
            with resources.as_file(self._files / "model.onnx") as path:
                return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbedderError(f"cannot load the local embedding model from {self._files}: {exc}") from exc


# Embedders holding a session, for a forked child to set theirs aside.
_loaded_embedders: weakref.WeakSet[LocalEmbedder] = weakref.WeakSet()


def _set_sessions_aside_in_child() -> None:
    # The parent's sessions are not this process's to use or destroy: their worker
    # threads and any lock a parent thread held inside a run stayed behind. Each
    # embedder loads a fresh session on its next embed (about 0.5 s, 25 MB).
    for embedder in list(_loaded_embedders):
        if embedder._session is not None:
            _onnx_fork.keep_for_ever(embedder._session)
            embedder._session = None
    _loaded_embedders.clear()
    _onnx_fork.after_fork_in_child()


os.register_at_fork(after_in_child=_set_sessions_aside_in_child)


def plan_batches(
    lengths: Sequence[int], batch_size: int, max_tokens: int = MAX_BATCH_TOKENS
) -> list[list[int]]:
    """Group text indices (by token count) into batches that waste little on padding.

    >>> plan_batches([3, 250, 4, 240], batch_size=64)
    [[1, 3], [2, 0]]

    Every text in a batch is padded to the longest, so texts are taken longest first
    and a batch is closed when it is full, when its padded size would pass
    ``max_tokens`` (memory grows with batch x length squared in attention), or when
    the next text is under half the batch's longest (padding would then more than
    double its cost, which outweighs the ~1 ms overhead of another run). Longest
    first also makes a batch too big for memory fail at once rather than at the end
    of a long job.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in order:
        if batch:
            longest = lengths[batch[0]]
            too_many = len(batch) >= batch_size or (len(batch) + 1) * longest > max_tokens
            if too_many or 2 * lengths[index] < longest:
                batches.append(batch)
                batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the token vectors a text really has, as sentence-transformers does."""
    weights = mask.astype(np.float32)
    summed: np.ndarray = np.einsum("btd,bt->bd", hidden, weights)
    counts: np.ndarray = np.clip(weights.sum(axis=1, keepdims=True), 1e-9, None)
    pooled: np.ndarray = summed / counts
    return pooled


def _thread_count(threads: int | None) -> int:
    """The argument, else ``MNEMOSYNE_THREADS``, else 1."""
    if threads is not None:
        if threads < 1:
            raise InvalidInputError(f"threads must be at least 1, got {threads}")
        return threads
    raw = os.environ.get(THREADS_ENV_VAR, "").strip()
    if not raw:
        return 1
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise InvalidInputError(f"{THREADS_ENV_VAR} must be a positive whole number, got {raw!r}")
    return int(raw)
