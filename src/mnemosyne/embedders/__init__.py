"""Embedders turn text into vectors for semantic recall (see ``base.Embedder``)."""
