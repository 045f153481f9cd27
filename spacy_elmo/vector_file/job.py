"""``spacy-elmo embed``'s driver: chunks of sentences planned into groups by the ``Embedder``; a group
already stored with the same tokens is skipped, each other becomes one part. Shard ``k`` of ``n``
computes the groups numbered ``k`` modulo ``n``: the groups depend on the input only."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence, Union

import numpy

from ..corpora.keyed_sentences import Sentence
from ..embedding.embedder import Embedder
from ..embedding.mix import mix_layers
from ..embedding.word_cache import WordCacheStats
from ..nn.bilm import BiLM
from .parts import FORMAT_VERSION, PartStore

PathLike = Union[str, Path]
LAYER_MODES = ("all", "top", "average", "mix")
DEFAULT_CHUNK_TOKENS = 100_000


@dataclass
class EmbedSummary:
    embedded: int = 0
    skipped: int = 0
    tokens_embedded: int = 0
    seconds: float = 0.0
    windows: int = 0  # biLM sequences run (a sentence over max_tokens takes several)
    joined: bool = False  # False: other shards are still running (the last one to finish joins)
    dropped: int = 0  # datasets of an earlier run left out because their key is gone from the input
    word_cache: Optional[WordCacheStats] = None  # the embedder's word cache counters (None: no cache)


def reduce_layers(
    layers: numpy.ndarray, mode: str, mix_weights: Optional[Sequence[float]] = None, gamma: float = 1.0
) -> numpy.ndarray:
    if mode == "all":
        return layers
    if mode == "top":
        return layers[-1]
    return mix_layers(layers, mix_weights, gamma) if mode == "mix" else mix_layers(layers)


def tokens_hash(tokens: Sequence[str]) -> str:
    """What a sentence's vectors depend on besides the weights: its tokens, in order."""
    digest = hashlib.blake2b(digest_size=16)
    for token in tokens:
        raw = token.encode("utf-8", errors="surrogatepass")
        digest.update(len(raw).to_bytes(4, "little"))
        digest.update(raw)
    return digest.hexdigest()


def weights_digest(bilm: BiLM) -> str:
    """A hash of the sizes, dictionaries and weights the vectors depend on (not the softmax)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps(bilm.config.to_dict(), sort_keys=True).encode())
    if bilm.lexicon is not None:  # a code-point model's ids depend on its dictionaries too
        tables = [dict(bilm.lexicon.chars), dict(bilm.lexicon.words or {})]
        digest.update(json.dumps(tables, sort_keys=True).encode())
    for module in (bilm.char_encoder, bilm.forward_lstm, bilm.backward_lstm):
        for name, tensor in sorted(module.state_dict().items()):
            array = tensor.detach().cpu().contiguous().numpy()
            digest.update(f"{name}:{array.dtype}:{array.shape}".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


def embed_corpus(
    embedder: Embedder,
    sentences: Iterable[Sentence],
    output: PathLike,
    layers: str = "all",
    mix_weights: Optional[Sequence[float]] = None,
    gamma: float = 1.0,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    progress: bool = True,
    shard: tuple[int, int] = (0, 1),
) -> EmbedSummary:
    """Embed this shard's share of ``sentences`` into ``output``, resuming what is stored."""
    from ..progress import progress_bar

    bilm, max_tokens = embedder.bilm, embedder.max_tokens
    if layers not in LAYER_MODES:
        raise ValueError(f"layers must be one of {LAYER_MODES}, not {layers!r}")
    if layers == "mix":
        if mix_weights is None or len(mix_weights) != bilm.config.n_output_layers:
            raise ValueError(f"layers='mix' needs {bilm.config.n_output_layers} mix weights, got {mix_weights}")
    shard_index, n_shards = shard
    if not (n_shards >= 1 and 0 <= shard_index < n_shards):
        raise ValueError(f"shard must be K/N with 0 <= K < N, not {shard_index}/{n_shards}")
    # What the stored vectors depend on: the weights and the settings that change them, with the
    # precision that runs (float32 where the device cannot run the one asked for).
    settings = {
        "layers": layers,
        "n_layers": bilm.config.n_output_layers,
        "dim": bilm.config.output_dim,
        "mix_weights": [float(w) for w in mix_weights] if layers == "mix" and mix_weights is not None else None,
        "gamma": float(gamma) if layers == "mix" else None,
        "max_tokens": int(max_tokens),
        "dtype": str(bilm.dtype).replace("torch.", ""),
        "precision": embedder.running_precision(),
    }
    manifest = {"format": FORMAT_VERSION, "settings": settings, "weights": weights_digest(bilm)}
    parts = PartStore(Path(output), manifest, shard_index, n_shards)
    try:
        summary = EmbedSummary()
        wanted: dict[str, str] = {}
        sentence_to_index: dict[str, str] = {}
        start = time.perf_counter()
        number = -1  # groups seen so far, in every shard: the split depends on the input only
        with progress_bar(unit="tok", unit_scale=True, disable=not progress, desc="embed", dynamic_ncols=True) as bar:
            for chunk in _chunks(sentences, chunk_tokens):
                hashes = [tokens_hash(s.tokens) for s in chunk]
                for sentence, digest in zip(chunk, hashes):
                    sentence_to_index[sentence.text] = sentence.key
                    wanted[sentence.key] = digest
                tokens = [s.tokens for s in chunk]
                for group in embedder.plan([len(t) for t in tokens]):
                    number += 1
                    if number % n_shards != shard_index:
                        continue
                    todo = [i for i in group.sentences if not parts.has(chunk[i].key, hashes[i])]
                    summary.skipped += len(group.sentences) - len(todo)
                    if not todo:
                        continue
                    group = group.only(set(todo))
                    arrays = embedder.group_layers(tokens, group)
                    summary.windows += sum(len(batch) for batch in group.batches)
                    items = [
                        (chunk[i].key, hashes[i], reduce_layers(a, layers, mix_weights, gamma))
                        for i, a in zip(group.sentences, arrays)
                    ]
                    parts.write_part(items)
                    n_tokens = sum(len(tokens[i]) for i in todo)
                    summary.embedded += len(todo)
                    summary.tokens_embedded += n_tokens
                    bar.update(n_tokens)
                    bar.set_postfix(sentences=summary.embedded, skipped=summary.skipped, refresh=False)
        summary.joined, summary.dropped = parts.finish(wanted, sentence_to_index)
    finally:
        parts.close()
    summary.seconds = time.perf_counter() - start
    summary.word_cache = embedder.word_cache_stats()
    return summary


def _chunks(sentences: Iterable[Sentence], chunk_tokens: int) -> Iterator[list[Sentence]]:
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


def parse_shard(text: Optional[str], environ: Optional[dict] = None) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)``; without it, torchrun's ``RANK``/``WORLD_SIZE`` (else ``(0, 1)``)."""
    environ = dict(os.environ) if environ is None else environ
    if text is None:
        if "WORLD_SIZE" in environ and "RANK" in environ:
            text = f"{environ['RANK']}/{environ['WORLD_SIZE']}"
        else:
            return 0, 1
    found = re.fullmatch(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", text)  # ASCII digits only: not "²/3" or "０/２"
    if found is None or not 0 <= int(found.group(1)) < int(found.group(2)):
        raise ValueError(f"--shard must be K/N with 0 <= K < N (like 0/4), not {text!r}")
    return int(found.group(1)), int(found.group(2))
