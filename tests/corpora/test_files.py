"""Which files a corpus holds, what format each one is, and which ones are not read at all."""

from __future__ import annotations

import os

import pytest

from spacy_elmo.corpora.files import file_problem, guess_format, list_corpus_files


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        list_corpus_files(tmp_path / "nope")


def test_folders_are_read_recursively_in_sorted_order_without_hidden_files(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / ".hidden").write_text("secret\n")
    (tmp_path / "sub" / "b.txt").write_text("b\n")
    (tmp_path / "a.txt").write_text("a\n")
    assert [p.name for p in list_corpus_files(tmp_path)] == ["a.txt", "b.txt"]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("a.jsonl", "jsonl"),
        ("a.JSONL", "jsonl"),
        ("a.ndjson", "jsonl"),
        ("a.json", "jsonl"),
        ("a.spacy", "spacy"),
        ("a.txt", "text"),
        ("a", "text"),
        ("a.jsonl.gz", "text"),
    ],
)
def test_the_format_follows_the_file_name(name, expected):
    assert guess_format(name) == expected


def test_empty_binary_and_unreadable_files_are_named_with_the_reason(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blob.txt").write_bytes(os.urandom(100) + b"\x00")
    (tmp_path / "ok.txt").write_text("fine\n")
    assert file_problem(tmp_path / "empty.txt", "text").kind == "empty"
    binary = file_problem(tmp_path / "blob.txt", "jsonl")
    assert binary.kind == "binary" and "NUL bytes" in binary.detail
    unreadable = file_problem(tmp_path / "gone.txt", "text")
    assert unreadable.kind == "unreadable" and "cannot be read" in unreadable.detail
    assert file_problem(tmp_path / "ok.txt", "text") is None


def test_spacy_files_are_binary_by_design(tmp_path):
    (tmp_path / "x.spacy").write_bytes(b"\x00\x01 a DocBin is binary")
    assert file_problem(tmp_path / "x.spacy", "spacy") is None
