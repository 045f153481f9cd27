"""The CoNLL-2003 converter (scripts/workflow/datasets/conll.py) on synthetic files in the
shared task's format: documents, the low-resource sample of whole documents, the unlabeled rest,
malformed lines named by file and line, and the left-out corpus."""

import json
import re

import pytest
from spacy.tokens import DocBin
from spacy.vocab import Vocab

from scripts.workflow.datasets import conll, left_out

TEXT = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
1996-08-22 CD I-NP O
"""


def _docs(path):
    return list(DocBin().from_disk(path).get_docs(Vocab()))


def _write_splits(folder, conll_text, n_documents=(12, 4, 5)):
    folder.mkdir(parents=True, exist_ok=True)
    for seed, (name, n) in enumerate(zip(("train.txt", "valid.txt", "test.txt"), n_documents)):
        (folder / name).write_text(conll_text(seed, n))
    return folder


def test_documents_and_their_sentences(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(TEXT)
    documents = list(conll.read_documents(path, "train"))
    # the empty document between two -DOCSTART- lines is skipped; names count the kept ones
    assert [d.name for d in documents] == ["train-0000", "train-0001"]
    assert [len(d.sentences) for d in documents] == [2, 1]
    assert documents[0].sentences[1] == [("Peter", "B-PER"), ("Blackburn", "I-PER")]
    assert documents[1].sentences[0] == [("BRUSSELS", "B-LOC"), ("1996-08-22", "O")]


@pytest.mark.parametrize(
    "line, error",
    [
        ("EU NNP B-ORG", "expected 4 space-separated fields"),
        ("EU NNP B-NP B-COMPANY", "tag 'B-COMPANY' is not O, B-TYPE or I-TYPE"),
        ("EU NNP B-NP I-ORG", "I-ORG continues no ORG entity"),
    ],
)
def test_a_malformed_line_is_named_by_file_and_line(tmp_path, line, error):
    path = tmp_path / "valid.txt"
    path.write_text("-DOCSTART- -X- -X- O\n\nThe DT B-NP O\n" + line + "\n")
    with pytest.raises(conll.ConllFormatError, match=re.escape(error)) as failure:
        list(conll.read_documents(path, "dev"))
    assert f"{path}, line 4" in str(failure.value)


def test_the_sample_is_whole_documents_that_just_reach_the_count():
    documents = [conll.Document(f"d{k}", [[("w", "O")]] * size) for k, size in enumerate([5, 1, 7, 3, 2, 9, 4, 6])]
    for seed in range(20):
        chosen = conll.sample_documents(documents, 10, seed)
        assert chosen == sorted(set(chosen))
        sizes = [len(documents[i].sentences) for i in chosen]
        assert sum(sizes) >= 10
        # the draw stops once the count is reached: without the last document drawn it was not
        order = list(range(len(documents)))
        import random

        random.Random(seed).shuffle(order)
        taken = [i for i in order if i in chosen]
        assert taken == order[: len(chosen)]
        assert sum(len(documents[i].sentences) for i in taken[:-1]) < 10
    assert conll.sample_documents(documents, 10, 0) == conll.sample_documents(documents, 10, 0)
    assert len({tuple(conll.sample_documents(documents, 10, seed)) for seed in range(20)}) > 1
    assert conll.sample_documents(documents, 1000, 3) == list(range(len(documents)))


def test_convert_writes_the_sample_the_unlabeled_rest_dev_and_test(tmp_path, conll_text):
    source = _write_splits(tmp_path / "assets", conll_text)
    out = tmp_path / "corpus"
    stats = conll.convert(source, out, small_sentences=7, seed=0)
    train, small, unlabeled = (
        _docs(out / "train.spacy"),
        _docs(out / "train_small.spacy"),
        _docs(out / "unlabeled.spacy"),
    )
    names = lambda docs: {doc.user_data[conll.DOCUMENT_KEY] for doc in docs}  # noqa: E731
    # the sample and the rest split the training documents, whole
    assert names(small) | names(unlabeled) == names(train) and not names(small) & names(unlabeled)
    assert len(small) + len(unlabeled) == len(train) and len(small) >= 7
    assert sorted(names(small)) == stats["train_small_documents"]
    # the rest keeps its text, never its labels
    assert [doc.text for doc in unlabeled] == [
        doc.text for doc in train if doc.user_data[conll.DOCUMENT_KEY] in names(unlabeled)
    ]
    assert all(doc.ents for doc in small) and not any(doc.has_annotation("ENT_IOB") for doc in unlabeled)
    lines = (out / "unlabeled.txt").read_text().splitlines()
    assert lines == [" ".join(token.text for token in doc) for doc in unlabeled]
    # dev and test: every document, named for the evaluation's counts per document
    dev, test = _docs(out / "dev.spacy"), _docs(out / "test.spacy")
    assert len(names(dev)) == 4 and len(names(test)) == 5 and sorted(names(test))[0] == "test-0000"
    assert {ent.label_ for doc in test for ent in doc.ents} <= set(conll.LABELS)
    written = json.loads((out / "stats.json").read_text())
    assert written["splits"]["train_small"]["sentences"] == len(small)
    assert written["splits"]["test"]["entities"] == sum(len(doc.ents) for doc in test)
    assert "entities" not in written["splits"]["unlabeled"]
    assert not (out / left_out.MARKER).exists()


def test_the_command_and_the_left_out_corpus(tmp_path, conll_text, run_command, capsys):
    source = _write_splits(tmp_path / "assets", conll_text)
    out = tmp_path / "corpus"
    argv = ["preprocess", "conll", str(source), str(out), "--small-sentences", "5", "--seed", "1"]
    assert run_command(argv) == 0
    assert _docs(out / "train_small.spacy") and left_out.left_out(out / "train_small.spacy") is None
    # left out: every output there, empty, and the marker naming the dataset (the old corpus replaced)
    assert run_command(argv + ["--leave-out=wnut16,conll2003"]) == 0
    for part in conll.OUTPUTS:
        assert _docs(out / f"{part}.spacy") == []
    assert (out / "unlabeled.txt").read_text() == ""
    assert left_out.left_out(out / "train_small.spacy") == "conll2003"
    # and back: the marker goes
    assert run_command(argv + ["--leave-out="]) == 0
    assert left_out.left_out(out / "train_small.spacy") is None and _docs(out / "test.spacy")
    # missing files are named
    (source / "valid.txt").unlink()
    with pytest.raises(SystemExit):
        run_command(argv)
    assert "valid.txt" in capsys.readouterr().out
