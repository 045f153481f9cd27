"""The gold-and-silver training reader: the mix it yields, its draws, its errors, and that a
config's dev corpus never sees the silver."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import List

import catalogue
import pytest
import spacy
import tomllib
from spacy.tokens import DocBin
from spacy.util import load_config, registry
from thinc.api import Config

from spacy_elmo.corpora.silver import create_gold_and_silver_corpus

ROOT = Path(__file__).resolve().parents[2]
READER = "spacy_elmo.GoldAndSilverCorpus.v1"


def write_docs(path: Path, texts: List[str], label: str) -> Path:
    """One Doc per text, its first word an entity of ``label`` (so gold and silver differ)."""
    nlp = spacy.blank("en")
    docs = []
    for text in texts:
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(0, len(doc[0].text), label=label)]
        docs.append(doc)
    DocBin(docs=docs).to_disk(path)
    return path


@pytest.fixture
def corpora(tmp_path):
    gold = write_docs(tmp_path / "gold.spacy", [f"Gold{i} said hello ." for i in range(20)], "GOLD")
    silver = write_docs(tmp_path / "silver.spacy", [f"Silver{i} went home ." for i in range(30)], "SILVER")
    dev = write_docs(tmp_path / "dev.spacy", [f"Dev{i} was here ." for i in range(5)], "GOLD")
    return {"gold": gold, "silver": silver, "dev": dev}


def kinds(examples) -> List[str]:
    return [eg.reference[0].text.rstrip("0123456789") for eg in examples]


@pytest.mark.parametrize("per_gold, n_silver", [(0, 0), (0.25, 5), (1, 20), (1.5, 30), (100, 30)])
def test_every_gold_document_and_the_configured_share_of_silver(corpora, per_gold, n_silver):
    nlp = spacy.blank("en")
    reader = create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], silver_per_gold=per_gold)
    examples = list(reader(nlp))
    assert sorted(eg.reference.text for eg in examples if kinds([eg])[0] == "Gold") == sorted(
        f"Gold{i} said hello ." for i in range(20)
    )
    silver = [eg for eg in examples if kinds([eg])[0] == "Silver"]
    assert len(silver) == n_silver and len({eg.reference.text for eg in silver}) == n_silver
    # the teacher's labels come through as they are: every silver entity is the silver's own
    assert all([(e.text, e.label_) for e in eg.reference.ents] == [(eg.reference[0].text, "SILVER")] for eg in silver)
    assert len(examples) == 20 + n_silver


def test_gold_and_silver_are_shuffled_together_and_seeded(corpora):
    nlp = spacy.blank("en")
    orders = [
        [eg.reference.text for eg in create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], seed=s)(nlp)]
        for s in (0, 0, 1)
    ]
    assert orders[0] == orders[1] and orders[0] != orders[2]
    assert kinds(create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], seed=0)(nlp))[:20] != ["Gold"] * 20


def test_without_a_seed_the_draw_is_the_runs(corpora):
    """spacy train seeds Python's random with the run's seed before it makes the reader."""
    nlp = spacy.blank("en")
    orders = []
    for run_seed in (4, 4, 5):
        random.seed(run_seed)
        reader = create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], silver_per_gold=0.5)
        orders.append([eg.reference.text for eg in reader(nlp)])
    assert orders[0] == orders[1] and orders[0] != orders[2]


def test_each_call_draws_again_without_replacement(corpora):
    """spaCy reads the corpus once (one draw for the whole training); a later call draws anew."""
    nlp = spacy.blank("en")
    reader = create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], silver_per_gold=0.35, seed=0)
    calls = [[eg.reference.text for eg in reader(nlp) if eg.reference.text.startswith("Silver")] for _ in range(3)]
    assert [len(call) for call in calls] == [7, 7, 7] and all(len(set(call)) == 7 for call in calls)
    assert len({frozenset(call) for call in calls}) == 3


def test_limit_counts_gold_documents_only(corpora):
    reader = create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], silver_per_gold=1, limit=4)
    assert sorted(kinds(reader(spacy.blank("en")))) == ["Gold"] * 4 + ["Silver"] * 4


def test_bad_settings_are_clear_errors_naming_the_file(corpora, tmp_path):
    with pytest.raises(ValueError, match="missing.spacy: silver corpus not found"):
        create_gold_and_silver_corpus(corpora["gold"], tmp_path / "missing.spacy")
    with pytest.raises(ValueError, match="silver_per_gold must be 0 or more"):
        create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], silver_per_gold=-1)
    with pytest.raises(ValueError, match="the silver corpus is the gold one"):
        create_gold_and_silver_corpus(corpora["gold"], corpora["gold"])
    with pytest.raises(ValueError, match="needs both path"):
        create_gold_and_silver_corpus(corpora["gold"], None)
    empty = tmp_path / "empty.spacy"
    DocBin().to_disk(empty)
    with pytest.raises(ValueError, match="empty.spacy: the silver corpus holds no documents"):
        list(create_gold_and_silver_corpus(corpora["gold"], empty)(spacy.blank("en")))
    # no silver wanted: an empty silver file is never read
    assert len(list(create_gold_and_silver_corpus(corpora["gold"], empty, silver_per_gold=0)(spacy.blank("en")))) == 20


def test_pyproject_entry_point_names_the_reader(tmp_path):
    """The name resolves through pyproject.toml's entry point alone, as in a ``spacy train``
    process that never imported spacy_elmo: a fresh interpreter whose only install of the group
    is a dist-info written from pyproject's ``spacy_readers`` table (spaCy reads entry points
    once, when it is imported)."""
    group = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["spacy_readers"]
    info = tmp_path / "entry_points_only-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: entry-points-only\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[spacy_readers]\n" + "".join(f"{k} = {v}\n" for k, v in group.items()))
    child = (
        "import sys; from spacy.util import registry; assert 'spacy_elmo' not in sys.modules; "
        f"f = registry.readers.get_entry_point({READER!r}); print(f.__module__ + '.' + f.__qualname__)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["spacy_elmo.corpora.silver.create_gold_and_silver_corpus"]


def test_a_student_config_trains_on_gold_and_silver_and_evaluates_on_gold_alone(corpora, monkeypatch):
    """The reader in ``[corpora.train]``; ``[corpora.dev]`` (dev scores, model-best) is spaCy's
    own reader of its gold file, as any test corpus is: no silver document reaches them. (The
    name is registered here as the entry point registers it in an installed package.)"""
    monkeypatch.setitem(catalogue.REGISTRY, ("spacy", "readers", READER), create_gold_and_silver_corpus)
    config = Config().from_str(
        f"""
        [system]
        seed = 3
        [corpora]
        [corpora.train]
        @readers = "{READER}"
        path = "{corpora["gold"]}"
        silver_path = "{corpora["silver"]}"
        silver_per_gold = 0.5
        [corpora.dev]
        @readers = "spacy.Corpus.v1"
        path = "{corpora["dev"]}"
        gold_preproc = false
        """
    )
    random.seed(3)  # as spacy train seeds it before it makes the readers
    resolved = registry.resolve(config)["corpora"]
    nlp = spacy.blank("en")
    train = [eg.reference.text for eg in resolved["train"](nlp)]
    assert sorted(kinds(resolved["train"](nlp))) == ["Gold"] * 20 + ["Silver"] * 10
    assert kinds(resolved["dev"](nlp)) == ["Dev"] * 5
    random.seed(3)
    reader = create_gold_and_silver_corpus(corpora["gold"], corpora["silver"], silver_per_gold=0.5)
    assert train == [eg.reference.text for eg in reader(nlp)]  # the draw is the run's


@pytest.mark.parametrize("task", ["ner", "tagger"])
def test_the_student_configs_are_the_baselines_with_silver_in_training_only(task, corpora, monkeypatch):
    """configs/TASK_silver.cfg: the baseline config but for the training reader (and its path);
    resolved, its dev corpus is gold only."""
    student = load_config(ROOT / "configs" / f"{task}_silver.cfg", interpolate=False)
    baseline = load_config(ROOT / "configs" / f"{task}_baseline.cfg", interpolate=False)
    train, gold_train = student["corpora"].pop("train"), baseline["corpora"].pop("train")
    assert train["@readers"] == READER and train["silver_path"] == "${paths.silver}" and train["seed"] is None
    assert {k: v for k, v in gold_train.items() if k != "@readers"}.items() <= train.items()
    assert student["paths"].pop("silver") is None
    assert student == baseline
    monkeypatch.setitem(catalogue.REGISTRY, ("spacy", "readers", READER), create_gold_and_silver_corpus)
    overrides = {"paths.train": str(corpora["gold"]), "paths.dev": str(corpora["dev"])}
    config = load_config(
        ROOT / "configs" / f"{task}_silver.cfg",
        overrides={**overrides, "paths.silver": str(corpora["silver"])},
        interpolate=True,
    )
    resolved = registry.resolve(config["corpora"])
    nlp = spacy.blank("en")
    assert sorted(kinds(resolved["train"](nlp))) == ["Gold"] * 20 + ["Silver"] * 20
    assert kinds(resolved["dev"](nlp)) == ["Dev"] * 5
