"""Does the code-point char-CNN (ELMoForManyLangs' encoding) keep the byte version's speed?

Layer 0 alone (ids -> one vector per word, the table-lookup path of inference), at the
published CNN size (filters up to width 7, 2048 in all, 2 highway layers, projection to 512),
on the same English words for every model, then on words of a large (CJK-like) alphabet:

- ``bytes``: bilm-tf's encoding (262 ids, char embedding 16);
- ``code points, N chars``: their encoding with a char dictionary of N entries (the text's
  characters plus unused ones up to N), char embedding 16 (as bytes) or 50 (their published
  size), with and without their word table (100 dims). Up to about 1,360 entries at this size
  the whole table set is kept (as for bytes); above, each call builds the tables of the
  characters it uses (:mod:`spacy_elmo.nn.words.alphabet`).

Words go through ``BiLM.token_ids`` (the id rows, timed apart) and ``BiLM.encode_words`` in
calls of ``--call-words`` words, the number of distinct words a 2048-token batch brings. One
torch thread; the process CPU time (the best of ``--repeats``) is reported next to wall time.

    python -m benchmarks.bench_char_cnn
    python -m benchmarks.bench_char_cnn --words 4000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Callable, Optional

import torch

from benchmarks.bench_embed import BUNDLED_TEXT, FILTERS, TOKEN

CNN = dict(filters=FILTERS, n_highway=2, lstm_dim=8, projection_dim=512, n_layers=1)
MARKERS = ("<bow>", "<eow>", "<bos>", "<eos>", "<oov>", "<pad>")


def english_words(limit: int) -> list[str]:
    """Running tokens of the bundled English sample, repeated up to ``limit``."""
    tokens = TOKEN.findall(BUNDLED_TEXT.read_text(encoding="utf8"))
    return (tokens * (limit // len(tokens) + 1))[:limit]


def cjk_words(limit: int, alphabet: int, seed: int = 0) -> list[str]:
    """Words of 1-3 characters drawn with Zipf-like frequencies from ``alphabet`` CJK characters."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(alphabet)]
    chars = [chr(0x4E00 + i) for i in range(alphabet)]
    return ["".join(rng.choices(chars, weights, k=rng.randint(1, 3))) for _ in range(limit)]


def byte_model():
    from spacy_elmo.nn import BiLM, BiLMConfig

    return BiLM(BiLMConfig(char_embed_dim=16, **CNN)).eval()


def code_point_model(text_chars: set[str], size: int, char_dim: int, word_dim: int, words: list[str]):
    from spacy_elmo.config import Lexicon
    from spacy_elmo.nn import BiLM, BiLMConfig

    chars = sorted(text_chars)[: size - len(MARKERS)]
    filler = (chr(0x3400 + i) for i in range(10**6))
    while len(chars) < size - len(MARKERS):
        extra = next(filler)
        if extra not in text_chars:
            chars.append(extra)
    lexicon_chars = {c: i for i, c in enumerate(chars + list(MARKERS))}
    vocabulary = None
    if word_dim:
        common = sorted(set(words))[:20000]
        vocabulary = {w: i for i, w in enumerate(["<oov>", "<bos>", "<eos>", "<pad>"] + common)}
    config = BiLMConfig(
        char_embed_dim=char_dim,
        char_encoding="code_points",
        n_characters=len(lexicon_chars) + 1,
        word_dim=word_dim,
        n_words=len(vocabulary) + 1 if vocabulary else 0,
        **CNN,
    )
    return BiLM(config, lexicon=Lexicon(lexicon_chars, vocabulary)).eval()


def timed(run: Callable[[], None], repeats: int) -> tuple[float, float]:
    """(best wall seconds, best process CPU seconds) over ``repeats`` runs."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def measure(label: str, bilm, words: list[str], call_words: int, repeats: int) -> dict:
    calls = [sorted(set(words[i : i + call_words])) for i in range(0, len(words), call_words)]
    n_words = sum(len(call) for call in calls)
    ids = [bilm.token_ids(call) for call in calls]

    def encode() -> None:
        with torch.inference_mode():
            for block in ids:
                bilm.encode_words(torch.from_numpy(block))

    encode()  # builds cached tables where the model keeps them
    wall, cpu = timed(encode, repeats)
    ids_wall, ids_cpu = timed(lambda: [bilm.token_ids(call) for call in calls], repeats)
    row = {
        "model": label,
        "words": n_words,
        "words_per_s_cpu": round(n_words / cpu),
        "words_per_s_wall": round(n_words / wall),
        "ids_words_per_s_cpu": round(n_words / ids_cpu),
        "ids_words_per_s_wall": round(n_words / ids_wall),
    }
    print(json.dumps(row), flush=True)
    return row


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=8000, help="running tokens per text")
    parser.add_argument(
        "--call-words", type=int, default=2048, help="tokens per encoder call (distinct ones are encoded)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    english = english_words(args.words)
    text_chars = {c for w in english for c in w}
    rows = [measure("bytes", byte_model(), english, args.call_words, args.repeats)]
    for size, char_dim, word_dim in ((300, 16, 0), (300, 50, 0), (300, 50, 100), (5000, 16, 0), (5000, 50, 100)):
        bilm = code_point_model(text_chars, size, char_dim, word_dim, english)
        rows.append(
            measure(
                f"code points, {size} chars, dim {char_dim}, words {word_dim}",
                bilm,
                english,
                args.call_words,
                args.repeats,
            )
        )
    cjk = cjk_words(args.words, 5000)
    cjk_chars = {c for w in cjk for c in w}
    for size in (6000, 20000):
        bilm = code_point_model(cjk_chars, size, 50, 100, cjk)
        rows.append(
            measure(
                f"code points, CJK-like words, {size} chars, dim 50, words 100",
                bilm,
                cjk,
                args.call_words,
                args.repeats,
            )
        )
    base = rows[0]["words_per_s_cpu"]
    print("\n| model | words/s (CPU time) | vs bytes | ids: words/s |")
    print("| --- | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['model']} | {row['words_per_s_cpu']:,} | {row['words_per_s_cpu'] / base:.2f} | {row['ids_words_per_s_cpu']:,} |"
        )


if __name__ == "__main__":
    main()
