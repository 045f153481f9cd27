"""Reading and splitting the Brown files (scripts/workflow/datasets/brown.py)."""

from collections import Counter

from scripts.workflow.datasets import brown as brown_corpus


def test_brown_split_rule():
    assert [brown_corpus.split_of(k) for k in range(20)].count("train") == 16
    assert brown_corpus.split_of(8) == "dev" and brown_corpus.split_of(499) == "test"


def test_brown_malformed_tokens_are_counted(tmp_path):
    path = tmp_path / "ca01"
    path.write_bytes("\tCaf\xe9/nn noslash ok/jj /nn\n".encode("latin-1"))
    problems = Counter()
    sentences = list(brown_corpus.read_brown_file(path, problems))
    assert sentences == [[("Caf\xe9", "nn"), ("ok", "jj")]]
    assert problems["token without word/tag"] == 2
