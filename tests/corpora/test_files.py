"""Reading one corpus file: its format, which files are not read at all, lines in binary mode
(numbers, offsets to restart at, invalid UTF-8, overlong lines), JSONL records and DocBins."""

from __future__ import annotations

import os

import pytest
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_elmo.corpora.files import (
    BadJsonLine,
    JsonlRecord,
    UnreadableFile,
    file_problem,
    guess_format,
    has_lone_surrogate,
    list_corpus_files,
    parse_jsonl_line,
    read_docbin,
    read_lines,
)


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


def test_every_line_comes_with_its_number_and_the_offset_after_it(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffone\r\n\ntwo é\nlast".encode("utf8"))
    lines = list(read_lines(path, 100))
    assert [(line.number, line.text) for line in lines] == [(1, "one"), (2, ""), (3, "two é"), (4, "last")]
    assert [line.end for line in lines] == [8, 9, 16, 20]
    assert not any(line.cut for line in lines)


def test_reading_restarts_at_any_offset_and_keeps_a_later_bom(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("one\n\ufeffsecond\nthird\n".encode("utf8"))
    first, *rest = read_lines(path, 100)
    assert (
        [line.text for line in read_lines(path, 100, first.end)]
        == [line.text for line in rest]
        == ["\ufeffsecond", "third"]
    )


def test_invalid_utf8_gives_no_text_and_the_bad_byte(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\nbad \xff here\nok again\n")
    bad = list(read_lines(path, 100))[1]
    assert (bad.number, bad.text, bad.bad_byte) == (2, None, 4)


def test_a_long_line_is_cut_at_a_character_boundary_and_the_rest_skipped(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xc3\xa9" * 3_000_000 + b"\nafter\n")  # 6 MB of two-byte characters
    long, after = read_lines(path, 1001)
    assert long.cut and long.text == "\u00e9" * 500 and long.end == 6_000_001
    assert (after.number, after.text, after.cut) == (2, "after", False)


def test_a_line_of_exactly_the_limit_is_not_cut(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"12345\n123456\n")
    assert [(line.text, line.cut) for line in read_lines(path, 5)] == [("12345", False), ("12345", True)]


def test_the_limit_must_be_positive(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    with pytest.raises(ValueError, match="positive"):
        list(read_lines(tmp_path / "a.txt", 0))


def test_the_text_field_and_tokens_are_read():
    assert parse_jsonl_line('{"text": "a b", "tokens": ["a", "b"]}', with_tokens=True) == JsonlRecord("a b", ["a", "b"])
    assert parse_jsonl_line('{"text": "a b", "tokens": ["a", "b"]}') == JsonlRecord("a b")
    assert parse_jsonl_line('{"body": "x"}', text_field="body").text == "x"


@pytest.mark.parametrize(
    "line, reason",
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected an object with a string 'text' field"),
        ('{"text": 3}', "expected an object with a string 'text' field"),
        ('{"text": "x", "tokens": [1]}', "'tokens' must be a list of strings"),
        ('{"text": "x", "tokens": "x"}', "'tokens' must be a list of strings"),
        ('{"text": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ],
)
def test_a_bad_line_says_why(line, reason):
    with pytest.raises(BadJsonLine, match=reason):
        parse_jsonl_line(line, with_tokens=True)


def test_lone_surrogates_in_text_or_tokens_are_found():
    assert has_lone_surrogate("bad \ud800") and not has_lone_surrogate("fine é")
    assert parse_jsonl_line('{"text": "ok", "tokens": ["x\\udfff"]}', with_tokens=True).has_lone_surrogate()
    assert not parse_jsonl_line('{"text": "ok", "tokens": ["x"]}', with_tokens=True).has_lone_surrogate()


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
