"""``embed``'s reader: keys a rerun reproduces, and what it skips (with file and line) or refuses."""

from __future__ import annotations

import json
import logging

import pytest
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_elmo.corpora.keyed_sentences import SkippedLines, read_sentences
from spacy_elmo.corpora.pipelines import load_pipeline


def keyed(path, **kwargs):
    return [(s.key, s.tokens) for s in read_sentences(path, **kwargs)]


def test_text_keys_are_line_numbers_past_blank_lines_a_bom_and_crlf(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("\ufeffFirst line .\r\n\r\n   \n  Second  one \r\nlast".encode("utf8"))
    sentences = list(read_sentences(path))
    assert [(s.key, s.text, s.tokens) for s in sentences] == [
        ("0", "First line .", ["First", "line", "."]),
        ("3", "Second  one", ["Second", "one"]),
        ("4", "last", ["last"]),
    ]


def test_a_pipeline_splits_lines_into_sentences_numbered_in_order(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("One here. Two there.\n\nThree.\n")
    assert keyed(path, nlp=load_pipeline("en")) == [
        ("0", ["One", "here", "."]),
        ("1", ["Two", "there", "."]),
        ("2", ["Three", "."]),
    ]


def test_an_overlong_line_is_skipped_with_file_and_line_never_cut(tmp_path, caplog):
    path = tmp_path / "in.txt"
    path.write_text("short line\n" + "word " * 100 + "\nafter it\n")
    skipped = SkippedLines()
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        assert keyed(path, skipped=skipped, max_line_bytes=100) == [("0", ["short", "line"]), ("2", ["after", "it"])]
    assert skipped.count == 1 and f"{path}:2: longer than 100 bytes; line skipped" in caplog.text
    assert len(keyed(path)) == 3  # the default bound is far past any sentence worth embedding


def test_a_binary_file_is_refused_at_once(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"looks like text \x00 but is not\n")
    with pytest.raises(ValueError, match="in.txt: looks binary"):
        read_sentences(path)


def test_an_empty_file_has_no_sentences(tmp_path):
    (tmp_path / "in.txt").write_bytes(b"")
    assert keyed(tmp_path / "in.txt") == []


@pytest.mark.parametrize(
    "line, reason",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"title": "x"}), "expected an object with a string 'text' field"),
        (json.dumps({"text": "x", "tokens": [1, 2]}), "'tokens' must be a list of strings"),
    ],
)
def test_a_bad_jsonl_line_stops_with_its_file_and_line(tmp_path, line, reason):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "fine"}) + "\n\n" + line + "\n")
    with pytest.raises(ValueError, match=f"in.jsonl:3: {reason}"):
        list(read_sentences(path))


def test_ndjson_is_jsonl(tmp_path):
    path = tmp_path / "in.ndjson"
    path.write_text(json.dumps({"text": "a b"}) + "\n")
    assert keyed(path) == [("0", ["a", "b"])]


def test_a_damaged_spacy_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / "in.spacy"
    path.write_bytes(b"not a DocBin")
    with pytest.raises(ValueError, match="in.spacy: not a readable .spacy file"):
        list(read_sentences(path))


def test_spacy_docs_without_boundaries_are_one_sentence_even_with_a_pipeline(tmp_path):
    vocab = Vocab()
    DocBin(docs=[Doc(vocab, words=["One", ".", "Two", "."])]).to_disk(tmp_path / "in.spacy")
    assert keyed(tmp_path / "in.spacy", nlp=load_pipeline("en")) == [("0", ["One", ".", "Two", "."])]


def test_missing_file_and_unknown_format_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt is missing \\(the input file\\)"):
        read_sentences(tmp_path / "nope.txt")
    (tmp_path / "in.txt").write_text("x\n")
    with pytest.raises(ValueError, match="input format must be one of"):
        read_sentences(tmp_path / "in.txt", "csv")
