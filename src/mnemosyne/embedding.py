"""The facade's embedder: chosen once per database, and never allowed to lose a write.

If the model fails (missing files, an HTTP endpoint down), memories are still
stored and found lexically; their vectors are filled in later (on the next open,
by ``sleep``, or ``mnemosyne reembed --missing``). The failure is logged once and
the model is not retried on every call, only after a cool-down.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _fork
from .core.signature import same_embedder
from .embedders import registry
from .embedders.base import Embedder, normalise_rows
from .errors import (
    EmbedderError,
    EmbedderInputError,
    EmbedderMismatchError,
    MissingDependencyError,
)

log = logging.getLogger("mnemosyne")
RETRY_AFTER_S = 300.0
# The shortest opening of a refused text asked for: a model that refuses even this
# much of a text, and takes other texts, refuses what it says, not its length.
SHORTEST_OPENING = 256


class EmbedderSlot:
    """An embedder (or none) plus what to do when it fails."""

    def __init__(
        self, embedder: Embedder | None, recorded: dict[str, Any] | None = None, switched_off: bool = False
    ) -> None:
        self.embedder = embedder
        self._switched_off = switched_off  # "none" was chosen: the model may be right here
        # A database whose recorded embedder can't be loaded here keeps its record:
        # new memories wait for a vector rather than being embedded by another model.
        self.signature = registry.signature(embedder) if embedder is not None else recorded
        self._dimension = _expected_dimension(embedder, recorded)
        if self.signature is not None and self._dimension and not self.signature.get("dimension"):
            self.signature = {**self.signature, "dimension": self._dimension}
        # A model behind an HTTP endpoint: its calls hold no native state in this process.
        self.remote = _address(embedder) is not None
        self._failures = _failures_of(embedder)  # the model's (an endpoint's: shared in the process)
        self._own_failures: dict[str, float] = {}  # answers fit for another database, not this one
        # Texts the model answered without a vector (refused, or all zeros), by digest,
        # with when to ask again: not at every recall and backfill pass.
        self._no_vector: dict[bytes, float] = {}
        self._no_vector_lock = _fork.Lock()  # threads write it while retry_now sweeps it
        self._missed = False  # this slot stored memories without a vector while the model failed
        self.failure: str | None = None  # what the model's last failure here said, and what to do
        # Set when the model answers again after failing: memories stored meanwhile
        # wait for a vector, and the owner starts a backfill.
        self.recovered = False

    @property
    def description(self) -> str:
        if self.signature is None:
            return registry.NONE
        text = registry.describe(self.signature)
        if self.embedder is not None:
            return text
        return f"{text}, switched off here (embedder 'none')" if self._switched_off else f"{text}, unavailable here"

    def describe_for(self, recorded: dict[str, Any] | None) -> str:
        """The embedder of a database's vectors (``recorded``, None before the first),
        as this process sees it: its own, failing or not, or one it does not have
        (another process switched models since this one opened)."""
        if self._switched_off and recorded is not None:  # whichever model it is, this process uses none
            return f"{registry.describe(recorded)}, switched off here (embedder 'none')"
        if recorded is None or (self.signature is not None and same_embedder(recorded, self.signature)):
            own = f"{self.description}, failing" if self.embedder is not None and not self.ready else self.description
            # Before the first vector the database is bound to no model: the next
            # process may choose another.
            return f"{own}, none recorded yet" if recorded is None and self.embedder is not None else own
        return f"{registry.describe(recorded)}, not this process's {self.description}"

    @property
    def ready(self) -> bool:
        if self.embedder is None:
            return False
        failed_at = max(self._failures.get("failed_at", 0.0), self._own_failures.get("failed_at", 0.0))
        return not failed_at or time.monotonic() - failed_at > RETRY_AFTER_S

    def retry_now(self) -> None:
        """Ask a failing model again at the next call, not after its cool-down, and
        for the texts it refused in a way that may pass."""
        with self._no_vector_lock:
            for digest in [digest for digest, again in self._no_vector.items() if again != math.inf]:
                del self._no_vector[digest]
        if self._forget_failures():
            self._missed = True

    def _forget_failures(self) -> bool:
        """Clear the record of failures; return whether there was one."""
        shared = self._failures.pop("failed_at", None) is not None
        return self._own_failures.pop("failed_at", None) is not None or shared

    def embed(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """A vector for each text, or None: for every text while the embedder is absent
        or failing, for a text the model refuses (see ``vectors_for``). Never raises."""
        if not texts:
            return []
        if not self.ready:
            self._missed = self.embedder is not None
            return [None] * len(texts)
        try:
            return self.vectors_for(texts)
        except EmbedderError as exc:
            failures = self._own_failures if isinstance(exc, _SizeThisDatabaseRefuses) else self._failures
            with _FAILURES_LOCK:  # a backfill and a write may fail together: one warning
                first = failures.get("failed_at") is None
                failures["failed_at"] = time.monotonic()
            if isinstance(exc, _SizeThisDatabaseRefuses):
                # Waiting will not mend this one: the model behind the name changed.
                self.failure = (f"{exc}; if the model behind it changed, switch this database to it "
                                f"with {how_to_switch(self.embedder)}")
            else:
                self.failure = f"{exc}; retrying in {RETRY_AFTER_S:.0f} s"
            if first:
                log.warning(
                    "embedder %s failed (%s); memories are stored and searchable lexically and "
                    "get their vectors once it answers",
                    self.description, self.failure,
                )
            self._missed = True
            return [None] * len(texts)

    def vectors_for(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """A vector for each text; None for a text the model refuses (too long for it,
        say), found by halving the batch, so one such text never costs the others
        theirs, and for one it maps to zero (no words it knows): that vector would
        never be found. Either kind is not asked for again by this slot (a refusal
        that may pass, after a cool-down). A failure of the model as a whole raises
        ``EmbedderError``, and so does a model that refuses any text, told by a
        one-word probe as soon as it refuses a batch (a chat model behind the
        endpoint, say): halving would ask it twice per text."""
        vectors: list[np.ndarray | None] = [None] * len(texts)
        now = time.monotonic()
        asked = [i for i, text in enumerate(texts) if self._no_vector.get(_digest(text), now) <= now]
        if not asked:
            return vectors
        try:
            answers = list(self.embed_checked([texts[i] for i in asked]))
        except EmbedderInputError as exc:
            try:
                self.embed_checked(["memory"])
            except EmbedderInputError as probe:
                raise EmbedderError(f"the embedder refuses any text, even one word: {probe}") from exc
            answers = self._split_refused([texts[i] for i in asked], exc)
        for i, vector in zip(asked, answers, strict=True):
            if vector is not None and vector.any():
                vectors[i] = vector
            elif vector is not None:  # all zeros: that will not change
                self._ask_again_at(texts[i], math.inf)
        return vectors

    def _split_refused(self, texts: Sequence[str], refusal: EmbedderInputError) -> list[np.ndarray | None]:
        """Vectors (zero rows included) for ``texts``, which the model refused as a
        batch (``refusal``). A text it refuses for good on its own gets the vector of
        an opening (see ``_opening``); None if it takes none, or if the refusal may
        pass."""
        if len(texts) == 1 and refusal.lasting and (opening := self._opening(texts[0])) is not None:
            return [opening]
        if len(texts) == 1:
            again = time.monotonic() + RETRY_AFTER_S if not refusal.lasting else math.inf
            self._ask_again_at(texts[0], again)
            log.warning("embedder %s refused a text (%s); that memory is found by its words only%s",
                        self.description, refusal, "" if again == math.inf else
                        f" until it is asked again in {RETRY_AFTER_S:.0f} s")
            return [None]
        half = len(texts) // 2
        return self._ask(texts[:half]) + self._ask(texts[half:])

    def _opening(self, text: str) -> np.ndarray | None:
        """The vector of the first of ``text``'s half, quarter, eighth... (its
        openings, down to ``SHORTEST_OPENING`` characters) that the model takes: an
        endpoint refuses a text over its model's token limit (OpenAI's 8,191 tokens)
        where a local model would read its opening. The rest is found by its words."""
        size = len(text) // 2
        while size >= SHORTEST_OPENING:
            try:
                (vector,) = self.embed_checked([text[:size]])
            except EmbedderInputError as exc:
                if not exc.lasting:
                    return None
                size //= 2
                continue
            log.warning("embedder %s refused a text of %d characters; its vector is that of its first %d",
                        self.description, len(text), size)
            return vector
        return None

    def _ask_again_at(self, text: str, when: float) -> None:
        """Ask the model for ``text`` again no sooner than monotonic time ``when``."""
        with self._no_vector_lock:
            self._no_vector[_digest(text)] = when

    def _ask(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        try:
            return list(self.embed_checked(texts))
        except EmbedderInputError as exc:
            return self._split_refused(texts, exc)

    def embed_checked(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts``, one finite row each; any failure raises ``EmbedderError``."""
        assert self.embedder is not None
        try:
            vectors = self.embedder.embed(texts)
        except EmbedderError:
            raise
        except Exception as exc:  # a custom embedder's own error: still never lose the write
            raise EmbedderError(f"{type(exc).__name__}: {exc}") from exc
        vectors = _checked(vectors, len(texts), self._dimension)
        self.failure = None
        if self._forget_failures() or self._missed:
            self._missed, self.recovered = False, True
        if self._dimension is None:
            # A model that tells its size only by answering: its first vectors fix it,
            # here and (with the signature) in the database, so no other size mixes in.
            self._dimension = int(vectors.shape[1])
            self.signature = {**registry.signature(self.embedder), "dimension": self._dimension}
        return vectors


# When an endpoint last failed, for every slot of this process that uses it with the
# same timeout: an MCP server opens an instance per session, and each would otherwise
# wait out the endpoint's timeout and log the failure again. (One that waits longer
# may get answers a hastier one gave up on.) Other models keep theirs per slot.
_ENDPOINT_FAILURES: dict[tuple[str, str, str, object], dict[str, float]] = {}
_FAILURES_LOCK = _fork.Lock()


def _address(embedder: Embedder | None) -> str | None:
    address = getattr(embedder, "base_url", None)
    return address if isinstance(address, str) else None


def _failures_of(embedder: Embedder | None) -> dict[str, float]:
    address = _address(embedder)
    if embedder is None or address is None:
        return {}
    key = (embedder.name, embedder.model, address, getattr(embedder, "timeout", None))
    with _FAILURES_LOCK:
        return _ENDPOINT_FAILURES.setdefault(key, {})


class _SizeThisDatabaseRefuses(EmbedderError):
    """Vectors of another size than this slot's (its database's, or the size its
    embedder declares): the model may serve other slots well."""


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _expected_dimension(embedder: Embedder | None, recorded: dict[str, Any] | None) -> int | None:
    """The size its vectors must have: the model's own, else (an HTTP model that has
    not answered yet) the size this database recorded for that model. An endpoint
    now serving another size is a failure, not a silent loss of every vector."""
    if embedder is None:
        return None
    if embedder.dimension:
        return int(embedder.dimension)
    if recorded is not None and (recorded.get("name"), recorded.get("model")) == (embedder.name, embedder.model):
        return int(recorded.get("dimension") or 0) or None
    return None


def _checked(vectors: np.ndarray, count: int, dimension: int | None) -> np.ndarray:
    """``vectors``, scaled to unit length (zero rows stay zero), if it holds one finite
    row of ``dimension`` (when known) per text: a server that drops or garbles rows
    must not pair a vector with the wrong memory."""
    try:
        vectors = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged rows, or not numbers
        raise EmbedderError(f"the embedder returned something that is not vectors: {exc}") from exc
    if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] == 0:
        raise EmbedderError(f"the embedder returned vectors of shape {vectors.shape} for {count} texts")
    if dimension and vectors.shape[1] != dimension:
        raise _SizeThisDatabaseRefuses(f"the embedder returned {vectors.shape[1]}-dimensional vectors, not {dimension}")
    if not np.isfinite(vectors).all():
        raise EmbedderError("the embedder returned vectors with NaN or infinite values")
    # The contract asks for unit rows; a custom model that skips it would defeat the
    # similarity floor below which meaning alone makes no result.
    return normalise_rows(vectors)


def how_to_switch(embedder: Embedder | None) -> str:
    """The command that moves a database to ``embedder``: the CLI's for one it builds
    from a spec, the API's for an object only the caller has (even one named "local")."""
    if embedder is not None and registry.built_here(embedder):
        return f"`mnemosyne reembed --embedder {registry.spec_of(registry.signature(embedder))} --db PATH`"
    return "`Mnemosyne(db_path=PATH).reembed(your_embedder)`"


def choose(requested: str | Embedder | None, recorded: dict[str, Any] | None) -> EmbedderSlot:
    """Pick the embedder: the argument, else ``$MNEMOSYNE_EMBEDDER``, else the one the
    database recorded, else the best one installed.

    An explicit choice that differs from the database's is refused: mixing vectors
    of two models would silently ruin recall.
    """
    explicit = requested if requested is not None else registry.requested_spec()
    if explicit is not None:
        embedder = registry.from_spec(explicit) if isinstance(explicit, str) else explicit
        if embedder is None:
            # "none" means "don't embed here", not another model: the database keeps
            # its record and a process that has the model backfills later.
            return EmbedderSlot(None, recorded, switched_off=True)
        current = registry.signature(embedder)
        if recorded is not None and not same_embedder(recorded, current):
            raise EmbedderMismatchError(
                f"this database's vectors were made by {registry.describe(recorded)}, not "
                f"{registry.describe(current)}; open it without choosing an embedder to use the "
                f"recorded one, or switch it with {how_to_switch(embedder)}"
            )
        return EmbedderSlot(embedder, recorded)
    spec = registry.spec_of(recorded) if recorded is not None else registry.best_installed_spec()
    if not registry.names_a_kind(spec):
        # A custom embedder object recorded by another program: pass it as embedder=
        # to use it here. Until then, nothing is mixed, nothing is lost.
        log.warning("embedder %s is a custom one, not available here; recall is lexical only", spec)
        return EmbedderSlot(None, recorded)
    try:
        embedder = registry.from_spec(spec)
    except (MissingDependencyError, EmbedderError) as exc:  # a bad setting (InvalidInputError) is refused
        log.warning("embedder %s is unavailable here (%s); recall is lexical only", spec, exc)
        return EmbedderSlot(None, recorded)
    if embedder is not None and recorded is not None and not same_embedder(recorded, registry.signature(embedder)):
        # The spec names another model here (a custom model called "local", or the
        # bundled one of another release): its vectors would not compare with these.
        log.warning("embedder %s is not available here (%r builds %s); recall is lexical only",
                    registry.describe(recorded), spec, registry.describe(registry.signature(embedder)))
        return EmbedderSlot(None, recorded)
    return EmbedderSlot(embedder, recorded)
