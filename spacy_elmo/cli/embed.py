"""``spacy-elmo embed``: a corpus to an HDF5 file of ELMo vectors (replaces ``allennlp elmo``)."""

from pathlib import Path
from typing import Optional

import typer

from ..embedding.embedder import DEFAULT_MAX_TOKENS, DEFAULT_WORD_CACHE_WORDS
from ..nn.precision import DEFAULT_PRECISION, check_precision
from ._app import app


@app.command("embed")
def embed_cli(
    input_path: Path = typer.Argument(
        ..., help="Text (one sentence per line), JSONL ('text' field) or .spacy", exists=True, dir_okay=False
    ),
    output_path: Path = typer.Argument(..., help="HDF5 file to write (resumed if it or OUTPUT.parts exists)"),
    weights: Path = typer.Option(
        ...,
        "--weights",
        "-w",
        help="spacy-elmo model dir, AllenNLP dir (options.json + one .hdf5), .hdf5 with options.json beside it, or an ELMoForManyLangs model dir",
    ),
    layers: str = typer.Option("all", "--layers", help="all | top | average | mix"),
    mix_weights: Optional[str] = typer.Option(
        None, "--mix-weights", help="with --layers mix: one weight per layer, comma-separated"
    ),
    gamma: float = typer.Option(1.0, "--gamma", help="with --layers mix: scale of the mixed vector"),
    batch_tokens: Optional[int] = typer.Option(
        None, "--batch-tokens", help="max padded tokens per batch (bounds memory; default 8192)"
    ),
    chunk_tokens: Optional[int] = typer.Option(
        None, "--chunk-tokens", help="tokens read ahead and sorted by length together (default 100000)"
    ),
    max_tokens: int = typer.Option(
        DEFAULT_MAX_TOKENS,
        "--max-tokens",
        help="longer sentences are read as windows of this many tokens (stored as one dataset)",
    ),
    input_format: str = typer.Option("auto", "--input-format", help="auto | text | jsonl | spacy"),
    max_line_bytes: Optional[int] = typer.Option(
        None,
        "--max-line-bytes",
        help="longer input lines are skipped (counted, logged with file and line), never cut (default 16 MiB)",
        min=1,
    ),
    spacy_pipeline: Optional[str] = typer.Option(
        None,
        "--spacy-pipeline",
        help="tokenize and split paragraphs with this pipeline (name, path, or a language code like 'en')",
    ),
    cache_words: int = typer.Option(
        DEFAULT_WORD_CACHE_WORDS,
        "--cache-words",
        help="word-vector cache size (0: off); outputs are identical either way",
    ),
    precision: str = typer.Option(
        DEFAULT_PRECISION,
        "--precision",
        help="float32 | bfloat16 | int8: precision of the LSTMs' products (cell state and outputs stay float32; "
        "float32 runs where the CPU lacks the instructions). Recorded in the output: a resume needs the same",
    ),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch CPU threads (default: torch's)"),
    device: str = typer.Option("cpu", "--device", help="torch device, e.g. cpu or cuda:0"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show a progress bar with tokens/s"),
    shard: Optional[str] = typer.Option(
        None,
        "--shard",
        help="K/N: compute only share K of N (0-based); the last shard to finish joins the result. Under torchrun taken from RANK/WORLD_SIZE",
    ),
) -> None:
    """Embed every sentence of INPUT into OUTPUT.hdf5: one dataset per sentence, keyed by line.

    Several workers: torchrun --nproc_per_node N -m spacy_elmo embed ... (or --shard K/N under any
    other scheduler, one process per K, all writing to the same OUTPUT on a shared file system).
    """
    import os

    import torch

    from ..corpora.keyed_sentences import SkippedLines, read_sentences
    from ..corpora.pipelines import load_pipeline
    from ..embedding.embedder import DEFAULT_BATCH_TOKENS, Embedder
    from ..loading import load_bilm
    from ..vector_file.job import embed_corpus, parse_shard

    if threads:
        torch.set_num_threads(threads)
    weights_list = None
    if mix_weights is not None:
        try:
            weights_list = [float(w) for w in mix_weights.split(",")]
        except ValueError as err:
            raise typer.BadParameter(f"--mix-weights must be comma-separated numbers: {err}") from err
    shard_index, n_shards = parse_shard(shard)
    check_precision(precision, "--precision")
    if device == "cuda" and "LOCAL_RANK" in os.environ:
        device = f"cuda:{int(os.environ['LOCAL_RANK'])}"  # one GPU per torchrun worker
    bilm = load_bilm(weights).to(device).eval()
    skipped_lines = SkippedLines()
    limits = {"max_line_bytes": max_line_bytes} if max_line_bytes else {}
    nlp = load_pipeline(spacy_pipeline) if spacy_pipeline else None
    sentences = read_sentences(input_path, input_format, nlp, skipped=skipped_lines, **limits)
    embedder = Embedder(
        bilm,
        max_tokens=max_tokens,
        batch_tokens=batch_tokens or DEFAULT_BATCH_TOKENS,
        word_cache_words=max(cache_words, 0),
        precision=precision,
    )
    summary = embed_corpus(
        embedder,
        sentences,
        output_path,
        layers=layers,
        mix_weights=weights_list,
        gamma=gamma,
        progress=progress,
        shard=(shard_index, n_shards),
        **({"chunk_tokens": chunk_tokens} if chunk_tokens else {}),
    )
    if not summary.joined:
        typer.echo(
            f"Shard {shard_index}/{n_shards} done: {summary.embedded} sentences embedded, {summary.skipped} already "
            f"present; the last shard to finish writes {output_path}",
            err=True,
        )
        return
    rate = summary.tokens_embedded / summary.seconds if summary.seconds else 0.0
    stats = summary.word_cache
    notes = [
        f"word cache hit rate {stats.hit_rate:.1%}" if stats is not None and stats.tokens else "",
        f"{skipped_lines.count} unreadable line(s) skipped (see the warnings)" if skipped_lines.count else "",
        f"{summary.dropped} earlier dataset(s) dropped (no longer in the input)" if summary.dropped else "",
    ]
    typer.echo(
        f"Wrote {output_path}: {summary.embedded} sentences embedded ({summary.tokens_embedded} tokens, "
        f"{rate:.0f} tokens/s), {summary.skipped} already present" + "".join(f"; {n}" for n in notes if n),
        err=True,
    )
