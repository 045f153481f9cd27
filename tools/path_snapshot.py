"""Save what every path from sentences to layers produces, and compare two such snapshots.

A refactor that moves code should change no number beyond float32 rounding. Run ``save`` on the
tree before the move and on the tree after, then ``compare``: every array is checked for equal
bytes (a difference is reported with its largest size, absolute and relative to the array's
magnitude), every written file by its SHA-256, and every JSON record field by field. The harness reaches the package only through entry points a user has (``BiLM`` and its
file methods, ``embed``, the ``elmo`` component and listeners, ``spacy-elmo embed`` and
``spacy-elmo pretrain``), through small adapters where a name changed, so the same file runs on
both trees. Run it from the repository's root:

    python -m tools.path_snapshot save /tmp/before --tree /path/to/the/old/checkout
    python -m tools.path_snapshot save /tmp/after
    python -m tools.path_snapshot compare /tmp/before /tmp/after

``--tree`` snapshots another checkout with this environment: its ``spacy_elmo`` is imported
here and in the commands the harness runs (default: this checkout). Optional: ``--fixtures``
(AllenNLP's test fixtures; default ``../shared/fixtures/allennlp-elmo``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import numpy

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FIXTURES = REPO.parent / "shared" / "fixtures" / "allennlp-elmo"
TREE = REPO  # the checkout whose spacy_elmo is snapshot (see use_tree)

SENTENCES = [
    ["The", "bank", "raised", "interest", "rates", "."],
    ["They", "sat", "by", "the", "river", "bank", "."],
    [],
    ["Ünïcödé", "wörds", "and", "a", "veryveryveryveryveryveryveryveryveryveryverylongtokenindeed", "!"],
    ["<S>", "</S>", "boundary", "strings"],
    [f"w{i % 37}" for i in range(70)],
    ["One"],
]


class Snapshot:
    """Arrays (saved as .npy) and records (JSON) under names, written into one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.arrays: dict[str, numpy.ndarray] = {}
        self.records: dict[str, Any] = {}

    def array(self, name: str, value: Any) -> None:
        import torch

        if isinstance(value, torch.Tensor):
            value = (
                value.detach().to("cpu").float().numpy()
                if value.dtype == torch.bfloat16
                else value.detach().cpu().numpy()
            )
        value = numpy.asarray(value)
        if name in self.arrays:
            raise KeyError(f"saved twice: {name}")
        self.arrays[name] = numpy.ascontiguousarray(value)

    def record(self, name: str, value: Any) -> None:
        self.records[name] = value

    def file(self, name: str, path: Path) -> None:
        self.record(f"sha256:{name}", hashlib.sha256(path.read_bytes()).hexdigest())

    def write(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        numpy.savez(self.folder / "arrays.npz", **{k.replace("/", "__"): v for k, v in self.arrays.items()})
        (self.folder / "records.json").write_text(json.dumps(self.records, indent=1, sort_keys=True, default=str))


# ---------------------------------------------------------------- the tree under test
def use_tree(tree: Path) -> None:
    """Import ``spacy_elmo`` from ``tree``, here and in the commands run below (their working
    folder is ``tree``), never through an editable install's import hook."""
    global TREE
    TREE = tree.resolve()
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__ + repr(f)]
    sys.path.insert(0, str(TREE))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TREE), os.environ.get("PYTHONPATH")]))


def run_command(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True, cwd=TREE)


# ---------------------------------------------------------------- adapters (names that moved)
def embed_layers(bilm, sentences, **kwargs):
    method = getattr(bilm, "embed_layers", None)
    if method is not None:
        return method(sentences, **kwargs)
    import spacy_elmo

    renamed = {"batch_size": "batch_sentences", "max_batch_tokens": "batch_tokens"}
    return spacy_elmo.embed_layers(bilm, sentences, **{renamed.get(k, k): v for k, v in kwargs.items()})


def with_word_cache(bilm, words: int = 1000):
    """``bilm`` set up so that ``embed_layers`` uses a word cache (wherever the cache lives now)."""
    if hasattr(bilm, "enable_word_cache"):
        bilm.enable_word_cache(words)
        return lambda sentences, **kw: bilm.embed_layers(sentences, **kw)
    from spacy_elmo import Embedder

    embedder = Embedder(bilm, word_cache_words=words)
    return lambda sentences, **kw: embedder.layers(sentences, **kw)


# ---------------------------------------------------------------- the paths
def tiny_bilm(seed: int = 0):
    import torch

    from spacy_elmo import BiLM, BiLMConfig

    config = BiLMConfig(
        char_embed_dim=4,
        filters=((1, 8), (2, 8), (3, 16)),
        n_highway=1,
        lstm_dim=24,
        projection_dim=8,
        n_layers=2,
        cell_clip=0.6,
        proj_clip=0.6,
        vocab_size=0,
    )
    torch.manual_seed(seed)
    bilm = BiLM(config)
    with torch.no_grad():
        for p in bilm.parameters():
            p.normal_(0.0, 0.3)
    return bilm.eval()


def snapshot_bilm(snap: Snapshot, name: str, bilm) -> None:
    """forward with autograd (each loop), gradients, layer dropout, embed_layers variants, embed()."""
    import torch

    from spacy_elmo import embed

    nonempty = [s for s in SENTENCES if s]
    char_ids, lengths = _char_ids(nonempty)
    bilm.zero_grad()
    bilm.train()
    out = bilm(char_ids, lengths)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    snap.array(f"{name}/forward", out)
    for pname, p in bilm.named_parameters():
        if p.grad is not None:
            snap.array(f"{name}/grad/{pname}", p.grad)
    bilm.eval()
    with torch.no_grad():
        snap.array(f"{name}/forward_nograd", bilm(char_ids, lengths))
    for i, layers in enumerate(embed_layers(bilm, SENTENCES)):
        snap.array(f"{name}/embed_layers/{i}", layers)
    bilm.zero_grad()
    torch.manual_seed(123)
    states = bilm.contextualize(*_char_ids(nonempty, framed=True), layer_dropout=0.3)
    for j, t in enumerate(states.forward + states.backward):
        snap.array(f"{name}/contextualize_dropout/{j}", t)
    for kw_name, kw in {
        "b1": dict(batch_size=1),
        "b2_t20": dict(batch_size=2, max_batch_tokens=20),
        "none": dict(max_batch_tokens=None),
    }.items():
        for i, layers in enumerate(embed_layers(bilm, SENTENCES, **kw)):
            snap.array(f"{name}/embed_layers/{kw_name}/{i}", layers)
    cached = with_word_cache(bilm)
    for rep in range(2):
        for i, layers in enumerate(cached(SENTENCES)):
            snap.array(f"{name}/word_cache/{rep}/{i}", layers)
    for precision in ("bfloat16", "int8"):
        for i, layers in enumerate(embed_layers(bilm, SENTENCES, precision=precision)):
            snap.array(f"{name}/{precision}/{i}", layers)
    snap.array(f"{name}/embed/default", embed(SENTENCES, bilm))
    n = bilm.config.n_layers + 1
    snap.array(f"{name}/embed/top", embed(SENTENCES, bilm, layer_weights=[0] * (n - 1) + [1], gamma=0.5))


def _char_ids(sentences, framed: bool = False):
    """Char ids framed by BOS/EOS (``framed`` only documents what contextualize expects too)."""
    import importlib

    import torch

    for module in ("spacy_elmo.nn.words.word_batch", "spacy_elmo.nn.words.char_ids", "spacy_elmo.char_ids"):
        try:
            encode_padded = importlib.import_module(module).encode_padded
            break
        except (ImportError, AttributeError):
            continue
    ids, lengths = encode_padded(sentences)
    return torch.from_numpy(ids), torch.from_numpy(lengths)


def snapshot_files(snap: Snapshot, name: str, bilm, tmp: Path) -> None:
    from spacy_elmo import BiLM

    folder = tmp / f"{name}-native"
    bilm.to_disk(folder)
    for path in sorted(folder.iterdir()):
        snap.file(f"{name}/to_disk/{path.name}", path)
    bilm.to_allennlp(tmp / f"{name}-options.json", tmp / f"{name}-weights.hdf5")
    snap.file(f"{name}/to_allennlp/options", tmp / f"{name}-options.json")
    snap.file(f"{name}/to_allennlp/weights", tmp / f"{name}-weights.hdf5")
    again = BiLM.from_allennlp(tmp / f"{name}-options.json", tmp / f"{name}-weights.hdf5")
    for key, value in again.state_dict().items():
        snap.array(f"{name}/from_allennlp/{key}", value)


def snapshot_component(snap: Snapshot, weights: Path, tmp: Path) -> None:
    import spacy

    texts = [
        "The bank raised interest rates. They sat by the river bank.",
        "Short one.",
        " ".join(f"tok{i % 13}" for i in range(600)),  # no sentence boundaries: windows
        "",
        "Spaces  \n\n between   words .",
    ]
    for variant, config in {
        "default": {},
        "nocache": {"model": {"word_cache_words": 0}},
        "mix": {"layer_weights": [0.2, 0.3, 0.5], "gamma": 2.0},
    }.items():
        nlp = spacy.blank("en")
        if variant == "default":
            nlp.add_pipe("sentencizer")
        elmo_cfg = {"weights": str(weights)}
        if "model" in config:
            from spacy_elmo.pipeline.elmo import DEFAULT_ELMO_MODEL

            model = dict(DEFAULT_ELMO_MODEL)
            model.update(config["model"])
            elmo_cfg["model"] = model
        elmo_cfg.update({k: v for k, v in config.items() if k != "model"})
        nlp.add_pipe("elmo", config=elmo_cfg)
        for i, doc in enumerate(nlp.pipe(texts, batch_size=2)):
            snap.array(f"component/{variant}/layers/{i}", doc._.elmo_layers)
            snap.array(f"component/{variant}/vectors/{i}", doc._.elmo_vectors)
        nlp.to_disk(tmp / f"pipeline-{variant}")
        again = spacy.load(tmp / f"pipeline-{variant}")
        snap.array(f"component/{variant}/reloaded", again(texts[0])._.elmo_layers)
    _snapshot_training(snap, weights)


def _snapshot_training(snap: Snapshot, weights: Path) -> None:
    """A listening tagger trained a few steps, frozen and fine-tuned: its params and the biLM's."""
    import random

    import spacy
    import torch
    from spacy.training import Example
    from thinc.api import fix_random_seed

    words = ["the", "cat", "sat", "on", "a", "mat", "dogs", "run", "fast", "."]
    tags = {
        "the": "DET",
        "a": "DET",
        "cat": "NOUN",
        "mat": "NOUN",
        "dogs": "NOUN",
        "sat": "VERB",
        "run": "VERB",
        "on": "ADP",
        "fast": "ADV",
        ".": "PUNCT",
    }
    for grad_factor in (0.0, 1.0):
        fix_random_seed(0)
        torch.manual_seed(0)
        nlp = spacy.blank("en")
        nlp.add_pipe("elmo", config={"weights": str(weights)})
        model = {
            "@architectures": "spacy.Tagger.v2",
            "tok2vec": {
                "@architectures": "spacy_elmo.ElmoTok2Vec.v1",
                "elmo": {
                    "@architectures": "spacy_elmo.ElmoListener.v1",
                    "upstream": "elmo",
                    "grad_factor": grad_factor,
                },
                "embed": {
                    "@architectures": "spacy.MultiHashEmbed.v2",
                    "width": 8,
                    "attrs": ["NORM"],
                    "rows": [100],
                    "include_static_vectors": False,
                },
                "encode": {
                    "@architectures": "spacy.MaxoutWindowEncoder.v2",
                    "width": 8,
                    "depth": 1,
                    "window_size": 1,
                    "maxout_pieces": 2,
                },
            },
        }
        nlp.add_pipe("tagger", config={"model": model})
        rng = random.Random(0)
        examples = []
        for _ in range(12):
            sent = [rng.choice(words) for _ in range(rng.randint(3, 9))]
            doc = nlp.make_doc(" ".join(sent))
            examples.append(Example.from_dict(doc, {"tags": [tags[w] for w in sent]}))
        optimizer = nlp.initialize(lambda examples=examples: examples)
        for step in range(4):
            losses = nlp.update(examples[step * 3 : step * 3 + 3], sgd=optimizer, drop=0.1)
            snap.record(f"train/{grad_factor}/loss/{step}", {k: float(v) for k, v in losses.items()})
        for node in nlp.get_pipe("tagger").model.walk():
            for pname in node.param_names:
                if node.has_param(pname):
                    snap.array(
                        f"train/{grad_factor}/tagger/{node.name}/{node.id - nlp.get_pipe('tagger').model.id}/{pname}",
                        node.get_param(pname),
                    )
        bilm = nlp.get_pipe("elmo").bilm
        for key, value in bilm.state_dict().items():
            snap.array(f"train/{grad_factor}/bilm/{key}", value)
        doc = nlp("the cat sat on a mat .")
        snap.record(f"train/{grad_factor}/tags", [t.tag_ for t in doc])


def snapshot_embed_cli(snap: Snapshot, weights: Path, tmp: Path) -> None:
    import h5py

    text = tmp / "corpus.txt"
    lines = [" ".join(s) for s in SENTENCES if s] + [" ".join(f"x{i % 11}" for i in range(300)), "A final line ."]
    text.write_text("\n".join(lines) + "\n", encoding="utf8")
    for mode, extra in {
        "all": [],
        "top": [],
        "average": [],
        "mix": ["--mix-weights", "0.1,0.2,0.7", "--gamma", "1.5"],
    }.items():
        for cache in ("0", "100"):
            out = tmp / f"embed-{mode}-{cache}.hdf5"
            cmd = [
                sys.executable,
                "-m",
                "spacy_elmo",
                "embed",
                str(text),
                str(out),
                "--weights",
                str(weights),
                "--layers",
                mode,
                "--max-tokens",
                "64",
                "--batch-tokens",
                "200",
                "--cache-words",
                cache,
                "--no-progress",
                "--threads",
                "1",
                *extra,
            ]
            run_command(cmd)
            with h5py.File(out, "r") as handle:
                for key in sorted(handle):
                    value = handle[key][()]
                    if key == "sentence_to_index":
                        snap.record(
                            f"embed_cli/{mode}/{cache}/{key}",
                            value[0].decode() if isinstance(value[0], bytes) else value[0],
                        )
                    else:
                        snap.array(f"embed_cli/{mode}/{cache}/{key}", value)
                        snap.record(
                            f"embed_cli/{mode}/{cache}/{key}/attrs", {k: str(v) for k, v in handle[key].attrs.items()}
                        )
                snap.record(f"embed_cli/{mode}/{cache}/attrs", {k: str(v) for k, v in handle.attrs.items()})


def record_datasets(snap: Snapshot, prefix: str, handle: Any) -> None:
    """Every dataset of an open HDF5 file, under ``prefix/<its path>``."""
    import h5py

    def visit(key: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset):
            snap.array(f"{prefix}/{key}", obj[()])

    handle.visititems(visit)


def snapshot_pretrain(snap: Snapshot, tmp: Path) -> None:
    import random

    import h5py

    rng = random.Random(4)
    vocab = "the a cat dog bird sees chases likes in garden house river big small red .".split()
    for split, n in (("train", 600), ("dev", 60)):
        (tmp / f"{split}.txt").write_text(
            "\n".join(" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 14))) for _ in range(n)) + "\n"
        )
    config = TREE / "configs" / "bilm_tiny.cfg"
    base = [sys.executable, "-m", "spacy_elmo", "pretrain", str(config)]
    common = [
        "--paths.train",
        str(tmp / "train.txt"),
        "--paths.dev",
        str(tmp / "dev.txt"),
        "--training.eval_every",
        "3",
        "--training.checkpoint_every",
        "3",
        "--quiet",
        *_full_precision_pretraining(),
    ]
    runs = {
        "straight": [["--training.max_steps", "6"]],
        "resumed": [["--training.max_steps", "3"], ["--training.max_steps", "6", "--resume"]],
        "decay": [["--training.max_steps", "6", "--training.lr_decay", "linear", "--training.dropout", "0.1"]],
    }
    for name, calls in runs.items():
        out = tmp / f"pretrain-{name}"
        for call in calls:
            resume = "--resume" in call
            args = [a for a in call if a != "--resume"]
            run_command(base + [str(out)] + (["--resume"] if resume else []) + common + args)
        with h5py.File(out / "model-last" / "weights.hdf5", "r") as handle:
            record_datasets(snap, f"pretrain/{name}/last", handle)
        metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        for row in metrics:
            for key in list(row):
                if any(word in key for word in ("time", "second", "per_s", "wall", "elapsed", "rate_tok")):
                    row.pop(key)
        snap.record(f"pretrain/{name}/metrics", metrics)
        snap.file(f"pretrain/{name}/vocab", out / "vocab.json")


def _full_precision_pretraining() -> list[str]:
    """The override that keeps pretraining in float32 (a boolean ``bf16`` before the ``precision`` setting)."""
    from spacy_elmo.pretrain.settings import SystemSettings

    return ["--system.bf16", "false"] if hasattr(SystemSettings, "bf16") else ["--system.precision", "float32"]


def save(folder: Path, fixtures: Optional[Path]) -> None:
    import torch

    torch.set_num_threads(1)
    snap = Snapshot(folder)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bilm = tiny_bilm()
        steps: list[tuple[str, Callable[[], None]]] = [("tiny", lambda: snapshot_bilm(snap, "tiny", bilm))]
        steps.append(("tiny-files", lambda: snapshot_files(snap, "tiny", bilm, tmp)))
        weights = tmp / "tiny-weights"
        tiny_bilm().to_disk(weights)
        if fixtures is not None and (fixtures / "lm_weights.hdf5").is_file():
            from spacy_elmo import BiLM

            fixture = BiLM.from_allennlp(fixtures / "options.json", fixtures / "lm_weights.hdf5")
            steps.append(("fixture", lambda: snapshot_bilm(snap, "fixture", fixture)))
            steps.append(("fixture-files", lambda: snapshot_files(snap, "fixture", fixture, tmp)))
        steps += [
            ("component", lambda: snapshot_component(snap, weights, tmp)),
            ("embed-cli", lambda: snapshot_embed_cli(snap, weights, tmp)),
            ("pretrain", lambda: snapshot_pretrain(snap, tmp)),
        ]
        for label, step in steps:
            print(f"{label} ...", flush=True)
            step()
    snap.write()
    print(f"{len(snap.arrays)} arrays, {len(snap.records)} records in {folder}")


def compare(a: Path, b: Path) -> int:
    left, right = numpy.load(a / "arrays.npz"), numpy.load(b / "arrays.npz")
    rec_a, rec_b = (json.loads((p / "records.json").read_text()) for p in (a, b))
    problems = []
    for key in sorted(set(left.files) | set(right.files)):
        if key not in left.files or key not in right.files:
            problems.append(f"only in {'before' if key in left.files else 'after'}: {key}")
            continue
        x, y = left[key], right[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            problems.append(f"{key}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
        elif x.tobytes() != y.tobytes():
            if x.dtype.kind == "f":
                diff = numpy.abs(x.astype(numpy.float64) - y.astype(numpy.float64)).max()
                scale = max(1.0, float(numpy.abs(x).max()))
                problems.append(f"{key}: differs (max abs {diff:.3g}, {diff / scale:.3g} of max(1, |before|))")
            else:
                problems.append(f"{key}: differs")
    for key in sorted(set(rec_a) | set(rec_b)):
        if rec_a.get(key) != rec_b.get(key):
            problems.append(f"{key}: {str(rec_a.get(key))[:120]} vs {str(rec_b.get(key))[:120]}")
    print(f"{len(left.files)} / {len(right.files)} arrays, {len(rec_a)} / {len(rec_b)} records compared")
    for line in problems:
        print("  DIFF", line)
    print("bit-identical" if not problems else f"{len(problems)} difference(s)")
    return 1 if problems else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    save_parser = sub.add_parser("save")
    save_parser.add_argument("folder", type=Path)
    save_parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    save_parser.add_argument("--tree", type=Path, default=None, help="another checkout to snapshot (default: this one)")
    compare_parser = sub.add_parser("compare")
    compare_parser.add_argument("before", type=Path)
    compare_parser.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "save":
        if args.tree is not None:
            use_tree(args.tree)
        save(args.folder, args.fixtures)
    else:
        raise SystemExit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
