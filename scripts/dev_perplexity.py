"""The exact dev perplexity of a saved biLM, measured apart from any training run.

Usage: ``dev_perplexity.py RUN_DIR [--model model-best] [--dev DEV_TEXT]``. RUN_DIR is a
``spacy-elmo pretrain`` output folder: its ``config.cfg`` says how the dev text is read (and
where it is, unless ``--dev`` names it) and how many sentences are used, so the number is
comparable with the run's own ``metrics.jsonl``. Prints one JSON line
``{"model", "dev", "forward", "backward", "perplexity", "tokens"}``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

import torch

from spacy_elmo.pretrain.text_sentences import SentenceSplitter
from spacy_elmo.nn.batching import length_sorted_batches
from spacy_elmo.pretrain.corpus import read_dev_sentences
from spacy_elmo.pretrain.distributed import Distributed
from spacy_elmo.pretrain.encoding import BatchEncoder
from spacy_elmo.pretrain.evaluate import dev_perplexity
from spacy_elmo.pretrain.initialization import load_existing_model, vocabulary_of
from spacy_elmo.pretrain.settings import load_config, settings_from_config


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--model", default="model-best", help="the model folder inside RUN_DIR")
    parser.add_argument("--dev", default=None, help="dev text (default: the run's paths.dev)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    settings = settings_from_config(load_config(args.run_dir / "config.cfg"))
    dev = args.dev or settings.paths.dev
    if not dev:
        parser.error("the run has no paths.dev: give --dev")
    model = load_existing_model(args.run_dir / args.model)
    vocab = vocabulary_of(model)
    if vocab is None:
        parser.error(f"{args.run_dir / args.model} holds no vocabulary (an AllenNLP model?)")
    splitter = SentenceSplitter(settings.corpus)
    sentences, _ = read_dev_sentences(dev, settings.corpus, splitter, settings.training.max_dev_sentences)
    encoder = BatchEncoder(vocab)
    lengths = [len(s) + 2 for s in sentences]
    groups = length_sorted_batches(lengths, settings.training.max_batch_sentences, 2 * settings.training.batch_tokens)
    batches = [encoder.encode([sentences[i] for i in group]) for group in groups]
    scores = dev_perplexity(model, batches, Distributed())
    if scores is None:
        parser.error(f"the dev text {dev} has no sentences")
    print(json.dumps({"model": str(args.run_dir / args.model), "dev": str(dev), "forward": scores.perplexity_forward,
                      "backward": scores.perplexity_backward, "perplexity": scores.perplexity, "tokens": scores.n_tokens}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
