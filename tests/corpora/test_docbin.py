"""Docs from ``.spacy`` files, and one clear error naming a damaged file."""

from __future__ import annotations

import pytest
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_elmo.corpora.docbin import UnreadableFile, read_docbin


def test_docs_come_back_with_their_words(tmp_path):
    vocab = Vocab()
    DocBin(docs=[Doc(vocab, words=["A", "doc"]), Doc(vocab, words=["Another"])]).to_disk(tmp_path / "x.spacy")
    assert [[t.text for t in doc] for doc in read_docbin(tmp_path / "x.spacy", Vocab())] == [["A", "doc"], ["Another"]]


def test_a_damaged_file_is_one_error_naming_it(tmp_path):
    path = tmp_path / "broken.spacy"
    path.write_bytes(b"this is not a DocBin")
    with pytest.raises(UnreadableFile, match="broken.spacy: not a readable .spacy file") as caught:
        list(read_docbin(path, Vocab()))
    assert isinstance(caught.value, ValueError) and caught.value.path == path
