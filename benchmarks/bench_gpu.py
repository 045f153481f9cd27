"""How fast does spacy-elmo embed on a GPU, in each precision, and how exact is each?

For each model size (random weights, non-zero biases) on one CUDA device: tokens/s of
``embed_layers`` on real English sentences in float32, bfloat16 and float16 (the ``precision``
setting), the peak GPU memory of each pass, each precision's error against float32 (the largest
difference over the largest float32 activation, the measure the GPU tests bound), the device's
float32 and bfloat16 GEMM rates measured in the same run, and the speedup over the plain
AllenNLP-style loop of ``plain_elmo.py`` on a subset. ``--fixtures DIR`` (AllenNLP's test model)
also checks float32 on the GPU against the reference activations (bound 1e-5).

    python -m benchmarks.bench_gpu --sizes small,original --max-tokens 40000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable

from .bench_embed import SIZES, default_text, flops_per_token, load_sentences

PRECISIONS = ("float32", "bfloat16", "float16")
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
    """Best wall time of ``repeats`` passes, the last result, and the peak GPU memory (MB)."""
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


def relative_error(approximate: list, exact: list) -> float:
    import numpy

    scale = max(float(numpy.abs(e).max()) for e in exact if e.size)
    return max(float(numpy.abs(a - e).max()) for a, e in zip(approximate, exact) if e.size) / scale


def bench_size(size: str, sentences: list, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from spacy_elmo import embed_layers
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
    rows, exact = [], None
    for precision in PRECISIONS:

        def embed(precision: str = precision) -> list:
            return embed_layers(model, sentences, batch_tokens=args.batch_tokens, precision=precision)

        embed_layers(model, sentences[: args.warmup_sentences], precision=precision)
        seconds, layers, memory = timed_pass(embed, args.repeats)
        exact = layers if exact is None else exact
        row = {
            "size": size,
            "precision": precision,
            "tokens_per_s": n_tokens / seconds,
            "tflops": flops_token * n_tokens / seconds / 1e12,
            "peak_gpu_mb": memory,
            "error": relative_error(layers, exact),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    subset = sentences[: args.plain_sentences]
    plain_seconds, _, _ = timed_pass(lambda: plain_embed_layers(model, subset), 1)
    ours_seconds, _, _ = timed_pass(lambda: embed_layers(model, subset), 1)
    return {"rows": rows, "speedup_over_plain": plain_seconds / ours_seconds}


def conformance(fixtures: Path) -> float:
    """The largest difference from AllenNLP's reference activations, float32 on the GPU."""
    import h5py
    import numpy

    from spacy_elmo import BiLM, embed_layers

    model = BiLM.from_allennlp(fixtures / "options.json", fixtures / "lm_weights.hdf5").cuda()
    with h5py.File(fixtures / "expected_allennlp_stateless.hdf5", "r") as handle:
        sentences = json.loads(handle.attrs["sentences_json"])
        expected = [handle["layers_f64"][str(i)][...] for i in range(len(sentences))]
    return max(float(numpy.abs(a - e).max()) for a, e in zip(embed_layers(model, sentences), expected))


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="small,original")
    parser.add_argument("--max-tokens", type=int, default=40_000)
    parser.add_argument("--batch-tokens", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup-sentences", type=int, default=256)
    parser.add_argument("--plain-sentences", type=int, default=256)
    parser.add_argument("--fixtures", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA device")
    text, tokenizer = default_text()
    sentences = load_sentences(text, tokenizer, args.max_tokens)
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "gemm_fp32_tflops": gpu_gemm_rate(torch.float32) / 1e12,
        "gemm_bf16_tflops": gpu_gemm_rate(torch.bfloat16) / 1e12,
        "sizes": {size: bench_size(size, sentences, args) for size in args.sizes.split(",")},
    }
    if args.fixtures is not None:
        result["conformance_max_abs"] = conformance(args.fixtures)
        assert result["conformance_max_abs"] <= CONFORMANCE_TOLERANCE, result["conformance_max_abs"]
    print(json.dumps(result, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
