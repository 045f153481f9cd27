"""What one trained pipeline costs to run: words per CPU-second, peak memory and size on disk.

Why a fresh process per pipeline: peak memory (``ru_maxrss``) only means "this pipeline" in a
process that loaded nothing else, and torch's and numpy's thread pools must be set to one thread
before they start, so that the CPU time is that of one core and comparable across settings.

The measurement (``measure``, run by ``measure_in_subprocess`` in a child ``python``): load the
pipeline on the CPU, read the first ``max_docs`` documents of a ``.spacy`` test file and keep
their words and spaces; make fresh unannotated Docs of them with the pipeline's vocab and run all
the pipeline's components over them with ``nlp.pipe`` at the pipeline's own batch size, twice.
The first pass warms up (lazy allocations, caches of words seen); the second pass is timed by
the process's CPU time (``time.process_time``): words / CPU seconds. The size is that of every
file under the pipeline folder (the ``elmo`` component stores its biLM weights there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

#: at most this many test documents are run (the first ones of the file)
MAX_DOCS = 500
#: the environment variables that fix the thread pools of the BLAS/OpenMP libraries
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
MIB = 1024 * 1024
#: where the child prints its result, the last line of its output
RESULT_PREFIX = "PIPELINE_PRICE "
PROJECT_ROOT = Path(__file__).resolve().parents[3]


def size_on_disk(folder: Path) -> int:
    """Bytes of every regular file under ``folder`` (links followed, as loading reads them)."""
    total = 0
    for root, _, files in os.walk(folder, followlinks=True):
        for name in files:
            total += (Path(root) / name).stat().st_size
    return total


def words_of(test_data: Path, max_docs: int, vocab) -> List[Tuple[List[str], List[bool]]]:
    """The words and spaces of the first ``max_docs`` documents of a ``.spacy`` file."""
    from spacy.tokens import DocBin

    if max_docs < 1:
        raise ValueError(f"max_docs must be at least 1, not {max_docs}")
    try:
        doc_bin = DocBin().from_disk(test_data)
    except (OSError, ValueError) as e:
        raise ValueError(f"{test_data}: not a readable .spacy file ({e})") from e
    found = []
    for doc in doc_bin.get_docs(vocab):
        found.append(([token.text for token in doc], [bool(token.whitespace_) for token in doc]))
        if len(found) == max_docs:
            break
    if not found or not any(words for words, _ in found):
        raise ValueError(f"{test_data}: no documents with words to run the pipeline on")
    return found


def precision_override(model: Path, precision: Optional[str]) -> Dict[str, Any]:
    """The config overrides that set the ``elmo`` component's ``precision`` (none for None); a
    ValueError naming the pipeline when it has no ``elmo`` component or the value is unknown."""
    import spacy

    from spacy_elmo.nn.precision import check_precision

    if precision is None:
        return {}
    check_precision(precision, f"{model}: --precision")
    components = spacy.util.load_config(model / "config.cfg").get("components", {})
    if "elmo" not in components:
        raise ValueError(f"{model}: --precision needs an 'elmo' component, this pipeline has {sorted(components)}")
    return {"components": {"elmo": {"precision": precision}}}


def load_pipeline(model: Path, precision: Optional[str] = None):
    """``spacy.load`` on the CPU; ``precision`` overrides the ``elmo`` component's setting."""
    import spacy

    return spacy.load(model, config=precision_override(model, precision))


def measure(model: Path, test_data: Path, max_docs: int = MAX_DOCS, precision: Optional[str] = None) -> dict:
    """The price of one pipeline, measured in this process (``measure_in_subprocess`` gives it
    the fresh process with one thread that the numbers assume)."""
    import resource
    import time

    import torch

    torch.set_num_threads(1)
    if not (model / "config.cfg").is_file():
        raise ValueError(f"{model}: not a spaCy pipeline folder (no config.cfg)")
    nlp = load_pipeline(model, precision)
    from spacy.tokens import Doc

    texts = words_of(test_data, max_docs, nlp.vocab)
    words = sum(len(w) for w, _ in texts)
    cpu_seconds = 0.0
    for _ in range(2):  # the first pass warms up, the second is measured
        docs = [Doc(nlp.vocab, words=w, spaces=s) for w, s in texts]
        start = time.process_time()
        for _ in nlp.pipe(docs):
            pass
        cpu_seconds = time.process_time() - start
    if cpu_seconds <= 0:
        raise ValueError(f"{test_data}: {words} words ran in no measurable CPU time; run more documents")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "model": str(model),
        "test_data": str(test_data),
        "docs": len(texts),
        "words": words,
        "batch_size": nlp.batch_size,
        "components": list(nlp.pipe_names),
        "precision": precision,
        # the setting the elmo component runs with (None: no elmo component, or one without it)
        "elmo_precision": getattr(nlp.get_pipe("elmo"), "precision", None) if "elmo" in nlp.pipe_names else None,
        "torch_threads": torch.get_num_threads(),
        "cpu_seconds": cpu_seconds,
        "words_per_cpu_second": words / cpu_seconds,
        "peak_memory_mib": peak_kib * 1024 / MIB,
        "size_mib": size_on_disk(model) / MIB,
    }


def measure_in_subprocess(
    model: Path, test_data: Path, max_docs: int = MAX_DOCS, precision: Optional[str] = None, timeout: float = 1800
) -> dict:
    """``measure`` in a fresh ``python`` with one thread everywhere; a failure is a ValueError
    with the child's last lines of error output."""
    env = dict(os.environ, **{name: "1" for name in THREAD_VARIABLES})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", __name__, str(model), str(test_data), str(max_docs)]
    if precision is not None:
        command.append(precision)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if result.returncode != 0 or not lines:
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise ValueError(f"measuring {model} failed (exit code {result.returncode}): {tail}")
    return json.loads(lines[-1][len(RESULT_PREFIX) :])


def _main(argv: List[str]) -> int:
    """The child's entry point: MODEL TEST_DATA MAX_DOCS [PRECISION]; prints the result line."""
    model, test_data, max_docs = Path(argv[0]), Path(argv[1]), int(argv[2])
    precision = argv[3] if len(argv) > 3 else None
    try:
        price = measure(model, test_data, max_docs, precision)
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 1
    print(RESULT_PREFIX + json.dumps(price), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
