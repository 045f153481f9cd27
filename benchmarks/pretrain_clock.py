"""Run ``spacy-elmo pretrain`` from a given source tree and record a clock reading at every step.

The child process of :mod:`benchmarks.bench_pretrain_command`; it works with any commit of the
project that has ``spacy_elmo.pretrain.data.step_inputs.StepInputBuilder`` (called
``spacy_elmo.pretrain.encoding.BatchEncoder`` in older checkouts) and a torch optimizer, so the same
measurement runs on today's code and on an old checkout side by side::

    python benchmarks/pretrain_clock.py TREE OUT.json -- pretrain configs/bilm_small.cfg OUT_DIR ...

``TREE`` goes first on ``sys.path`` and the editable install's import hook is removed, so every
``spacy_elmo`` module comes from ``TREE`` (``OUT.json`` records the file that was imported).
After each optimizer step it notes the process CPU time, the wall time, the CPU time spent so
far in ``StepInputBuilder.encode`` and the tokens (predictions per direction) of the batch that
step trained on.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def _isolate(tree: str) -> None:
    """Import ``spacy_elmo`` from ``tree`` only, never through the editable install's finder."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__ + repr(f)]
    sys.path.insert(0, os.path.abspath(tree))


def main() -> None:
    tree, out_json, sep, *args = sys.argv[1:]
    if sep != "--":
        raise SystemExit("usage: pretrain_clock.py TREE OUT.json -- ARGS")
    _isolate(tree)
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    import spacy_elmo

    try:
        from spacy_elmo.pretrain.data.step_inputs import StepInputBuilder as inputs_builder
    except ImportError:  # an older checkout
        from spacy_elmo.pretrain.encoding import BatchEncoder as inputs_builder

    record: dict = {"tree": tree, "module": spacy_elmo.__file__, "args": args, "steps": []}
    state = {"tokens": 0, "encode_cpu": 0.0}
    original_encode = inputs_builder.encode

    def encode(self, sentences):  # type: ignore[no-untyped-def]
        start = time.process_time()
        batch = original_encode(self, sentences)
        state["encode_cpu"] += time.process_time() - start
        state["tokens"] = int(batch.n_tokens)
        return batch

    inputs_builder.encode = encode

    def after_step(optimizer, *_):  # type: ignore[no-untyped-def]
        record["steps"].append(
            (time.process_time(), time.perf_counter(), state["encode_cpu"], state["tokens"], os.getloadavg()[0])
        )

    register_optimizer_step_post_hook(after_step)
    record["start"] = (time.process_time(), time.perf_counter(), os.getloadavg()[0])
    sys.argv = ["spacy-elmo", *args]
    from spacy_elmo.cli import main as cli_main

    try:
        cli_main()
    except SystemExit as stop:
        record["exit"] = stop.code
    record["end"] = (time.process_time(), time.perf_counter(), os.getloadavg()[0])
    record["threads"] = torch.get_num_threads()
    record["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(out_json, "w", encoding="utf8") as handle:
        json.dump(record, handle)


if __name__ == "__main__":
    main()
