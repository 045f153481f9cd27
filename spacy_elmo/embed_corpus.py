"""Embedding a whole corpus into one HDF5 file, laid out as ``allennlp elmo`` wrote it.

Layout: one float32 dataset per sentence, named by its key (see
:mod:`spacy_elmo.sentence_sources`), shaped ``(L+1, n_tokens, 2P)`` for ``layers="all"`` and
``(n_tokens, 2P)`` otherwise; plus ``sentence_to_index``, a one-element string dataset holding
the JSON map from sentence text to key. Root attributes record the layer options, so that
resuming with different ones is refused instead of mixing outputs.

Streaming: sentences are read lazily, ``chunk_tokens`` tokens at a time; a chunk is sorted
by length and cut into batches of at most ``batch_tokens`` padded tokens (a large chunk means
batches of near-equal lengths, so little work is wasted on short rows). Each batch is written,
and the file closed, before the next is computed: memory is bounded by one batch's vectors
plus one chunk's tokens, and a run killed while computing leaves a complete, readable file.

Resuming: chunks and batches depend only on the input, so a rerun forms the same batches,
skips those already written and computes the rest exactly as before: the file ends up equal
to an uninterrupted run's. A journal (``OUTPUT.journal``) names the keys of the batch being
written; if a run dies while writing, the next one deletes those datasets and writes them again.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence, Union

import h5py
import numpy

from .embed import mix_layers
from .nn.bilm import BiLM
from .nn.batching import length_sorted_batches
from .nn.inference import DEFAULT_BATCH_SENTENCES, DEFAULT_BATCH_TOKENS
from .sentence_sources import Sentence

PathLike = Union[str, Path]
LAYER_MODES = ("all", "top", "average", "mix")
DEFAULT_CHUNK_TOKENS = 100_000
SENTENCE_INDEX = "sentence_to_index"
_OPTIONS_ATTR = "spacy_elmo_embed_options"


@dataclass
class EmbedSummary:
    sentences: int = 0
    embedded: int = 0
    skipped: int = 0
    tokens_embedded: int = 0
    seconds: float = 0.0


def reduce_layers(
    layers: numpy.ndarray, mode: str, mix_weights: Optional[Sequence[float]] = None, gamma: float = 1.0
) -> numpy.ndarray:
    """``(L+1, n, 2P)`` layers as stored for ``mode``: all of them, the top one, their mean or a mix."""
    if mode == "all":
        return layers
    if mode == "top":
        return layers[-1]
    if mode == "average":
        return mix_layers(layers)
    if mode == "mix":
        return mix_layers(layers, mix_weights, gamma)
    raise ValueError(f"layers must be one of {LAYER_MODES}, not {mode!r}")


def embed_corpus(
    bilm: BiLM,
    sentences: Iterable[Sentence],
    output: PathLike,
    layers: str = "all",
    mix_weights: Optional[Sequence[float]] = None,
    gamma: float = 1.0,
    batch_tokens: Optional[int] = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    progress: bool = True,
) -> EmbedSummary:
    """Embed ``sentences`` into ``output`` (created, or resumed if it exists)."""
    from tqdm import tqdm

    if layers not in LAYER_MODES:
        raise ValueError(f"layers must be one of {LAYER_MODES}, not {layers!r}")
    if layers == "mix":
        if mix_weights is None or len(mix_weights) != bilm.config.n_output_layers:
            raise ValueError(f"layers='mix' needs {bilm.config.n_output_layers} mix weights, got {mix_weights}")
    output = Path(output)
    options = {
        "layers": layers,
        "n_layers": bilm.config.n_output_layers,
        "dim": bilm.config.output_dim,
        "mix_weights": list(mix_weights) if layers == "mix" else None,
        "gamma": gamma if layers == "mix" else None,
    }
    done = _open_output(output, options)
    summary = EmbedSummary()
    sentence_to_index: dict[str, str] = {}
    start = time.perf_counter()
    with tqdm(unit="tok", unit_scale=True, disable=not progress, desc="embed", dynamic_ncols=True) as bar:
        for chunk in _chunks(sentences, chunk_tokens):
            for sentence in chunk:
                sentence_to_index[sentence.text] = sentence.key
            lengths = [len(s.tokens) for s in chunk]
            for batch in length_sorted_batches(lengths, DEFAULT_BATCH_SENTENCES, batch_tokens or DEFAULT_BATCH_TOKENS):
                todo = [chunk[i] for i in batch if chunk[i].key not in done]
                summary.sentences += len(batch)
                summary.skipped += len(batch) - len(todo)
                if todo:
                    arrays = bilm.embed_layers([s.tokens for s in todo], batch_size=len(todo), max_batch_tokens=None)
                    _write_batch(output, [(s.key, reduce_layers(a, layers, mix_weights, gamma)) for s, a in zip(todo, arrays)])
                    n_tokens = sum(len(s.tokens) for s in todo)
                    summary.embedded += len(todo)
                    summary.tokens_embedded += n_tokens
                    bar.update(n_tokens)
                bar.set_postfix(sentences=summary.embedded, skipped=summary.skipped, refresh=False)
    _write_sentence_index(output, sentence_to_index)
    summary.seconds = time.perf_counter() - start
    return summary


def journal_path(output: Path) -> Path:
    return output.with_name(output.name + ".journal")


def _chunks(sentences: Iterable[Sentence], chunk_tokens: int) -> Iterator[list[Sentence]]:
    """Consecutive sentences, about ``chunk_tokens`` tokens at a time (decided by the input only)."""
    chunk: list[Sentence] = []
    tokens = 0
    for sentence in sentences:
        chunk.append(sentence)
        tokens += len(sentence.tokens)
        if tokens >= chunk_tokens:
            yield chunk
            chunk, tokens = [], 0
    if chunk:
        yield chunk


def _open_output(output: Path, options: dict) -> set[str]:
    """Create ``output`` or check it matches ``options``; repair an interrupted write; return its keys."""
    encoded = json.dumps(options, sort_keys=True)
    if not output.exists():
        output.parent.mkdir(parents=True, exist_ok=True)
        with h5py.File(output, "w") as handle:
            handle.attrs[_OPTIONS_ATTR] = encoded
        journal_path(output).unlink(missing_ok=True)
        return set()
    try:
        handle = h5py.File(output, "a")
    except OSError as err:
        raise ValueError(f"{output} exists but cannot be read as HDF5 ({err}); move it away to start over") from err
    with handle:
        found = handle.attrs.get(_OPTIONS_ATTR)
        if found is not None and json.loads(found) != options:
            raise ValueError(
                f"{output} was written with other options ({found}); use another output file "
                f"or the same options ({encoded}) to resume"
            )
        handle.attrs[_OPTIONS_ATTR] = encoded
        journal = journal_path(output)
        if journal.exists():
            for key in json.loads(journal.read_text(encoding="utf8")):
                if key in handle:
                    del handle[key]  # possibly incomplete: the chunk is written again
        keys = {key for key in handle.keys() if key != SENTENCE_INDEX}
    journal_path(output).unlink(missing_ok=True)
    return keys


def _write_batch(output: Path, items: list[tuple[str, numpy.ndarray]]) -> None:
    journal = journal_path(output)
    _atomic_write(journal, json.dumps([key for key, _ in items]))
    with h5py.File(output, "a") as handle:
        for key, array in items:
            handle.create_dataset(key, data=numpy.ascontiguousarray(array, dtype=numpy.float32))
    journal.unlink()


def _write_sentence_index(output: Path, sentence_to_index: dict[str, str]) -> None:
    with h5py.File(output, "a") as handle:
        if SENTENCE_INDEX in handle:
            del handle[SENTENCE_INDEX]
        dataset = handle.create_dataset(SENTENCE_INDEX, (1,), dtype=h5py.string_dtype(encoding="utf-8"))
        dataset[0] = json.dumps(sentence_to_index, ensure_ascii=False)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf8")
    os.replace(tmp, path)


def read_sentence_index(output: PathLike) -> dict[str, str]:
    """The ``sentence_to_index`` map of an embedding file."""
    with h5py.File(output, "r") as handle:
        raw = handle[SENTENCE_INDEX][0]
    return json.loads(raw.decode("utf8") if isinstance(raw, bytes) else raw)
