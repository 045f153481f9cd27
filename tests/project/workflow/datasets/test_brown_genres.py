"""Brown paragraphs -> genre classification Docs (scripts/workflow/datasets/brown_genres.py)."""

from pathlib import Path

from spacy.tokens import DocBin
from spacy.vocab import Vocab

from scripts.workflow.datasets import brown_genres

# 20 files of two genres; sorted, k % 10 == 8 is dev and k % 10 == 9 test
NAMES = [f"ca{i:02d}" for i in range(1, 11)] + [f"cr{i:02d}" for i in range(1, 11)]


def make_brown(folder: Path, paragraphs: int = 5) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        text = ["", ""]
        for p in range(paragraphs):  # two sentences per paragraph; blank lines part paragraphs
            text += [f"\tP{p}/np of/in {name}/np ./.", "\tIt/pps ends/vbz ./.", "", ""]
        (folder / name).write_text("\n".join(text), encoding="latin-1")
    (folder / "README").write_text("not a corpus file")
    return folder


def read(path: Path):
    return list(DocBin().from_disk(path).get_docs(Vocab()))


def test_split_by_file_paragraphs_and_genres(tmp_path):
    stats = brown_genres.convert(make_brown(tmp_path / "brown"), tmp_path / "out", {"train": 2, "dev": 0, "test": 0})
    splits = {split: read(tmp_path / "out" / f"{split}.spacy") for split in ("train", "dev", "test")}
    files = {split: {doc.user_data[brown_genres.FILE_KEY] for doc in docs} for split, docs in splits.items()}
    assert files["dev"] == {"ca09", "cr09"} and files["test"] == {"ca10", "cr10"}
    assert not (files["train"] & files["dev"]) and not (files["train"] & files["test"])
    assert len(splits["train"]) == 16 * 2 and len(splits["test"]) == 2 * 5  # 2 kept per file / all
    doc = splits["test"][0]
    assert doc.text == "P0 of ca10 . It ends ."
    assert [sent.text for sent in doc.sents] == ["P0 of ca10 .", "It ends ."]
    assert doc.cats["press_reportage"] == 1.0 and sum(doc.cats.values()) == 1.0 and len(doc.cats) == 15
    assert splits["test"][-1].cats["humor"] == 1.0
    assert stats["splits"]["train"]["genres"]["humor"] == 16
    # evenly spaced: paragraphs 0 and 2 of 5 in a training file
    assert [doc.text.split()[0] for doc in splits["train"][:2]] == ["P0", "P2"]


def test_evenly_spaced():
    assert brown_genres.evenly_spaced(5, 0) == [0, 1, 2, 3, 4]
    assert brown_genres.evenly_spaced(10, 3) == [0, 3, 6]
    assert brown_genres.evenly_spaced(2, 4) == [0, 1]
