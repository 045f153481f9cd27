"""How fast does spacy-elmo embed on a GPU, per loop and precision, and how exact is each?

For each model size (random weights, non-zero biases) on one CUDA device:

- tokens/s of ``spacy_elmo.embed_layers`` on real English sentences for: the in-place loop without
  graphs (``cuda_graphs=False``), the CUDA-graph window loop for every batch
  (``lstm_loop="windowed"``), the library's default (graphs for small batches only), each
  with bfloat16 / float16 matmuls too (``use_autocast``); TF32 matmuls as a reference point;
  the graph loop with the word cache warm; the same with small batches (``--small-batch``);
- peak GPU memory of each pass (``torch.cuda.max_memory_allocated``);
- each path's error against the float32 in-place loop, as the largest absolute difference
  over all layers and tokens divided by the largest float32 activation (the measure the
  documented bounds in ``BiLM.use_autocast`` use);
- dense FLOPs per token, the device's float32 and bfloat16 GEMM rates measured in the same run
  (8192^3), and the fraction of the float32 rate reached by the graph loop and by the default;
- the speedup over the plain AllenNLP-style loop in ``plain_elmo.py`` on a subset;
- where the default path's time goes (layer 0, LSTM, gathering the tokens; the rest is the
  copy to the host and Python), each part timed between device synchronisations;
- the LSTM alone at fixed shapes (rows x steps): the in-place loop against the graph loop, in
  float32 and bfloat16, to show where recording graphs pays.

``--fixtures DIR`` (AllenNLP's test model: ``options.json``, ``lm_weights.hdf5``,
``expected_allennlp_stateless.hdf5``) also checks every GPU path against the reference
activations (conformance bound 1e-5).

Example (from the repository root)::

    python -m benchmarks.bench_gpu --sizes small,original --max-tokens 40000 --json out.json
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path
from typing import Any, Callable, Optional

from .bench_embed import SIZES, default_text, flops_per_token, load_sentences

CONFORMANCE_TOLERANCE = 1e-5


def gpu_gemm_rate(dtype: Any, size: int = 8192, repeats: int = 10) -> float:
    """Mean FLOP/s of ``size``^3 matmuls in ``dtype`` (TF32 off), after warm-ups."""
    import torch

    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    for _ in range(3):
        torch.mm(a, b)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        torch.mm(a, b)
    torch.cuda.synchronize()
    return 2.0 * size**3 * repeats / (time.perf_counter() - start)


def timed_pass(run: Callable[[], Any], repeats: int) -> tuple[float, Any, float]:
    """Best wall time of ``repeats`` passes (each ends with the arrays on the host), the last
    result, and the peak GPU memory (MB) over the passes."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best, result, torch.cuda.max_memory_allocated() / 2**20


def time_parts(embed: Callable[[], Any]) -> dict[str, float]:
    """Seconds spent in each stage of one ``embed()`` pass (synchronised around each call)."""
    import torch

    from spacy_elmo.embedding import batch_forward

    parts = {"layer0": 0.0, "lstm": 0.0, "gather": 0.0}
    originals = {
        "layer0": batch_forward.layer0_table,
        "lstm": batch_forward.run_time_major,
        "gather": batch_forward._gather_tokens,
    }

    def timing(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            torch.cuda.synchronize()
            start = time.perf_counter()
            result = function(*args, **kwargs)
            torch.cuda.synchronize()
            parts[name] += time.perf_counter() - start
            return result

        return wrapped

    batch_forward.layer0_table = timing("layer0", originals["layer0"])
    batch_forward.run_time_major = timing("lstm", originals["lstm"])
    batch_forward._gather_tokens = timing("gather", originals["gather"])
    try:
        torch.cuda.synchronize()
        start = time.perf_counter()
        embed()
        torch.cuda.synchronize()
        parts["total"] = time.perf_counter() - start
    finally:
        batch_forward.layer0_table = originals["layer0"]
        batch_forward.run_time_major = originals["lstm"]
        batch_forward._gather_tokens = originals["gather"]
    parts["host_copy_and_python"] = parts["total"] - parts["layer0"] - parts["lstm"] - parts["gather"]
    return parts


def lstm_only(model: Any, shapes: list[tuple[int, int]], repeats: int) -> list[dict[str, Any]]:
    """Seconds per call of the LSTM stacks on random inputs, per loop and precision."""
    import torch

    from spacy_elmo.nn.lstm import run_time_major

    stacks = [model.forward_lstm, model.backward_lstm]
    rows = []
    for batch, steps in shapes:
        inputs = torch.randn(2, steps, batch, model.config.projection_dim, device=model.device)
        active = [batch] * steps
        row: dict[str, Any] = {"rows": batch, "steps": steps}
        for name, graphs, dtype in [
            ("fp32_in_place", False, None),
            ("fp32_graphs", True, None),
            ("bf16_autograd_safe", False, torch.bfloat16),
            ("bf16_graphs", True, torch.bfloat16),
        ]:
            call = functools.partial(run_time_major, stacks, inputs, active, dtype, cuda_graphs=graphs, windowed=graphs)
            with torch.inference_mode():
                call()
                seconds, _, _ = timed_pass(call, repeats)
            row[name + "_ms"] = 1000 * seconds
        row["graphs_speedup_fp32"] = row["fp32_in_place_ms"] / row["fp32_graphs_ms"]
        row["graphs_speedup_bf16"] = row["bf16_autograd_safe_ms"] / row["bf16_graphs_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def relative_error(approximate: list, exact: list) -> float:
    import numpy

    scale = max(float(numpy.abs(e).max()) for e in exact if e.size)
    return max(float(numpy.abs(a - e).max()) for a, e in zip(approximate, exact) if e.size) / scale


def configure(model: Any, graphs: Any, dtype: Any, tf32: bool = False) -> None:
    import torch

    # "default": the library's own choice per batch; True: graphs for every batch; False: none.
    model.cuda_graphs = graphs is not False
    model.lstm_loop = "windowed" if graphs is True else "fused"
    model.use_autocast(dtype)
    model.clear_inference_caches()  # recorded graphs keep the math mode they were recorded with
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def bench_size(size: str, sentences: list, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from spacy_elmo import Embedder, embed_layers
    from spacy_elmo.nn import BiLM, BiLMConfig

    from .plain_elmo import plain_embed_layers

    torch.manual_seed(0)
    config = BiLMConfig(**SIZES[size])
    model = BiLM(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.uniform_(-0.1, 0.1)
    model.cuda()
    n_tokens = sum(len(s) for s in sentences)
    flops_token = sum(flops_per_token(config, n_tokens, len(sentences)).values())
    embed = lambda: embed_layers(model, sentences, batch_sentences=args.batch_sentences, batch_tokens=args.batch_tokens)  # noqa: E731

    paths = [
        ("float32, in-place loop", False, None, False),
        ("float32, CUDA graphs", True, None, False),
        ("bfloat16, autograd-safe loop", False, torch.bfloat16, False),
        ("bfloat16, CUDA graphs", True, torch.bfloat16, False),
        ("float16, CUDA graphs", True, torch.float16, False),
        ("tf32, CUDA graphs", True, None, True),
        ("float32, default", "default", None, False),
        ("bfloat16, default", "default", torch.bfloat16, False),
    ]
    rows, exact = [], None
    for name, graphs, dtype, tf32 in paths:
        configure(model, graphs, dtype, tf32)
        embed_layers(model, sentences[: args.warmup_sentences])  # records the graphs of most buckets
        embed()  # and of the rest
        seconds, result, memory = timed_pass(embed, args.repeats)
        if exact is None:
            exact = result
        rows.append(
            {
                "path": name,
                "tokens_per_s": n_tokens / seconds,
                "peak_gpu_mb": memory,
                "relative_error_vs_float32": relative_error(result, exact),
            }
        )
        print(json.dumps({"size": size, **rows[-1]}), flush=True)
    small_batches = []
    for name, graphs, dtype in [
        ("float32, in-place loop", False, None),
        ("float32, default", "default", None),
        ("bfloat16, autograd-safe loop", False, torch.bfloat16),
        ("bfloat16, default", "default", torch.bfloat16),
    ]:
        configure(model, graphs, dtype)
        few = lambda: embed_layers(model, sentences[:4000], batch_sentences=args.small_batch)  # noqa: E731
        few()
        seconds, _, _ = timed_pass(few, args.repeats)
        small_batches.append(
            {
                "path": name,
                "batch_sentences": args.small_batch,
                "tokens_per_s": sum(len(s) for s in sentences[:4000]) / seconds,
            }
        )
        print(json.dumps({"size": size, **small_batches[-1]}), flush=True)
    configure(model, True, None)
    embedder = Embedder(
        model, batch_sentences=args.batch_sentences, batch_tokens=args.batch_tokens, word_cache_words=args.cache_words
    )
    cache = embedder.word_cache
    embedder.layers(sentences)
    cache.reset_stats()
    seconds, result, memory = timed_pass(lambda: embedder.layers(sentences), args.repeats)
    rows.append(
        {
            "path": "float32, CUDA graphs, word cache warm",
            "tokens_per_s": n_tokens / seconds,
            "peak_gpu_mb": memory,
            "relative_error_vs_float32": relative_error(result, exact),
            "hit_rate": cache.stats.hit_rate,
        }
    )
    print(json.dumps({"size": size, **rows[-1]}), flush=True)

    subset, total = [], 0
    for sentence in sentences:
        if total + len(sentence) > args.reference_tokens and subset:
            break
        subset.append(sentence)
        total += len(sentence)
    subset_tokens = sum(len(s) for s in subset)
    plain_seconds, plain_out, _ = timed_pass(lambda: plain_embed_layers(model, subset), 1)
    ours_seconds, ours_out, _ = timed_pass(lambda: embed_layers(model, subset), args.repeats)
    fp32_rate, bf16_rate = gpu_gemm_rate(torch.float32), gpu_gemm_rate(torch.bfloat16)
    default = rows[1]
    configure(model, "default", None)
    parts = time_parts(embed)
    print(json.dumps({"size": size, "parts_s": parts}), flush=True)
    lstm = lstm_only(model, [(32, 32), (128, 32), (512, 32)], args.repeats)
    return {
        "size": size,
        "sentences": len(sentences),
        "tokens": n_tokens,
        "flops_per_token": flops_token,
        "gemm_fp32_tflops": fp32_rate / 1e12,
        "gemm_bf16_tflops": bf16_rate / 1e12,
        "roofline_fraction_fp32_graphs": default["tokens_per_s"] * flops_token / fp32_rate,
        "roofline_fraction_fp32_default": rows[6]["tokens_per_s"] * flops_token / fp32_rate,
        "graphs_speedup_fp32": rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"],
        "reference_tokens": subset_tokens,
        "plain_tokens_per_s": subset_tokens / plain_seconds,
        "speedup_vs_plain_on_subset": plain_seconds / ours_seconds,
        "max_abs_diff_vs_plain": max(float(abs(a - b).max()) for a, b in zip(ours_out, plain_out)),
        "paths": rows,
        "small_batches": small_batches,
        "default_path_parts_s": parts,
        "lstm_only": lstm,
    }


def conformance(fixtures: Path) -> dict[str, float]:
    """Largest absolute difference from AllenNLP's expected activations, per GPU path."""
    import h5py
    import numpy
    import torch

    from spacy_elmo import embed_layers
    from spacy_elmo.nn import BiLM

    model = BiLM.from_allennlp(fixtures / "options.json", fixtures / "lm_weights.hdf5").cuda()
    with h5py.File(fixtures / "expected_allennlp_stateless.hdf5", "r") as handle:
        sentences = json.loads(handle.attrs["sentences_json"])
        expected = [handle["layers_f64"][str(i)][...] for i in range(len(sentences))]
    results = {}
    for name, graphs, loop in [
        ("cuda_graphs", True, "fused"),
        ("in_place", False, "fused"),
        ("per_direction", False, "per_direction"),
    ]:
        model.cuda_graphs, model.lstm_loop = graphs, loop
        actual = embed_layers(model, sentences)
        results[name] = max(float(numpy.abs(a - e).max()) for a, e in zip(actual, expected))
    for dtype in (torch.bfloat16, torch.float16):
        model.cuda_graphs, model.lstm_loop = True, "fused"
        model.use_autocast(dtype)
        results[f"{dtype}_relative"] = relative_error(embed_layers(model, sentences), expected)
        model.use_autocast(None)
    return results


def cycled_sentences(path: Path, tokenizer: str, max_tokens: int) -> list[list[str]]:
    """Sentences from ``path`` up to ``max_tokens``, repeating the file if it is shorter."""
    base = load_sentences(path, tokenizer, max_tokens)
    sentences, total = [], 0
    while total < max_tokens:
        for sentence in base:
            sentences.append(sentence)
            total += len(sentence)
            if total >= max_tokens:
                break
    return sentences


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--text", type=Path, help="text file, one sentence per line (default: corpus dev text or the bundled sample)"
    )
    parser.add_argument("--tokenizer", choices=["whitespace", "regex"], help="how to split lines (default: by source)")
    parser.add_argument("--sizes", default="small,original")
    parser.add_argument("--max-tokens", type=int, default=40000, help="tokens per pass (the text is cycled if shorter)")
    parser.add_argument("--reference-tokens", type=int, default=3000, help="tokens for the plain-loop comparison")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-tokens", type=int, default=16384, help="max padded tokens per batch")
    parser.add_argument("--batch-sentences", type=int, default=512)
    parser.add_argument("--warmup-sentences", type=int, default=2000)
    parser.add_argument("--small-batch", type=int, default=32, help="sentences per batch for the small-batch measure")
    parser.add_argument("--cache-words", type=int, default=100_000)
    parser.add_argument("--fixtures", type=Path, help="AllenNLP fixture folder: also check conformance on the GPU")
    parser.add_argument("--json", type=Path, help="write all results here")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu.py needs a CUDA device")
    text, default_tokenizer = default_text() if args.text is None else (args.text, "whitespace")
    sentences = cycled_sentences(text, args.tokenizer or default_tokenizer, args.max_tokens)
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "text": str(text),
        "results": [],
    }
    if args.fixtures is not None:
        report["conformance_max_abs_diff"] = conformance(args.fixtures)
        print(json.dumps(report["conformance_max_abs_diff"]), flush=True)
    for size in args.sizes.split(","):
        report["results"].append(bench_size(size, sentences, args))
        print(json.dumps({k: v for k, v in report["results"][-1].items() if k != "paths"}), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    for result in report["results"]:
        print(
            f"\n{result['size']}: {result['tokens']} tokens, {result['flops_per_token'] / 1e9:.3f} GFLOP/token, "
            f"GEMM fp32 {result['gemm_fp32_tflops']:.1f} / bf16 {result['gemm_bf16_tflops']:.1f} TFLOP/s"
        )
        print(f"{'path':42} {'tok/s':>10} {'GPU MB':>8} {'rel. error':>10}")
        for row in result["paths"]:
            print(
                f"{row['path']:42} {row['tokens_per_s']:>10.0f} {row['peak_gpu_mb']:>8.0f} {row['relative_error_vs_float32']:>10.2e}"
            )
        print(
            f"plain loop {result['plain_tokens_per_s']:.0f} tok/s; default path {result['speedup_vs_plain_on_subset']:.1f}x "
            f"faster on {result['reference_tokens']} tokens; CUDA graphs {result['graphs_speedup_fp32']:.2f}x the in-place loop"
        )
        print(
            f"batches of {args.small_batch} sentences: "
            + ", ".join(f"{r['path']} {r['tokens_per_s']:.0f} tok/s" for r in result["small_batches"])
        )
        print(
            "default path, seconds per pass: "
            + ", ".join(f"{k} {v:.3f}" for k, v in result["default_path_parts_s"].items())
        )
        print(
            f"{'LSTM only: rows x steps':24} {'fp32 in-place':>13} {'fp32 graphs':>11} {'bf16 eager':>10} {'bf16 graphs':>11}  (ms)"
        )
        for row in result["lstm_only"]:
            print(
                f"{row['rows']:>11} x {row['steps']:<10} {row['fp32_in_place_ms']:>13.2f} {row['fp32_graphs_ms']:>11.2f} "
                f"{row['bf16_autograd_safe_ms']:>10.2f} {row['bf16_graphs_ms']:>11.2f}"
            )


if __name__ == "__main__":
    main()
