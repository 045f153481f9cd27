"""Reading raw files: every format, every kind of damage, and restarting mid-file."""

from __future__ import annotations

import json
import logging
import os

from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_elmo.corpora.files import list_corpus_files
from spacy_elmo.corpora.record_stream import ReadStats, RecordPosition, RecordReader


def read_all(files, stats=None, start=RecordPosition(), **kwargs):
    reader = RecordReader(list(files), max_line_bytes=kwargs.pop("max_line_bytes", 1000), **kwargs)
    return list(reader.records(start, stats if stats is not None else ReadStats()))


def test_text_lines_skip_blanks_strip_bom_and_crlf(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffFirst line.\r\n\n   \nSecond line.".encode("utf8"))
    assert [text for _, text in read_all([path])] == ["First line.", "Second line."]


def test_invalid_utf8_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good one\n\xff\xfe broken\nalso good\ncut \xe2\x82\n")
    stats = ReadStats()
    assert [text for _, text in read_all([path], stats)] == ["good one", "also good"]
    assert stats.invalid_utf8_lines == 2


def test_binary_and_empty_files_are_skipped_and_named(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blob.bin").write_bytes(os.urandom(2000) + b"\x00" * 10)
    (tmp_path / "ok.txt").write_text("fine\n")
    stats = ReadStats(warn=True)
    texts = [text for _, text in read_all(list_corpus_files(tmp_path), stats)]
    assert texts == ["fine"]
    assert stats.empty_files == [str(tmp_path / "empty.txt")]
    assert stats.binary_files == [str(tmp_path / "blob.bin")]
    assert "1 empty" in stats.summary() and "1 binary" in stats.summary()


def test_a_megabyte_line_without_newline_or_spaces_is_cut_not_loaded(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"short\n" + b"\xc3\xa9" * 500_000 + b"\nafter\n")  # 1 MB of two-byte characters
    stats = ReadStats()
    texts = [text for _, text in read_all([path], stats, max_line_bytes=1001)]
    assert texts[0] == "short" and texts[2] == "after"
    assert texts[1] == "\u00e9" * 500  # cut at 1001 bytes, the half character dropped
    assert stats.overlong_lines == 1


def test_jsonl_reads_the_text_field_and_counts_bad_lines(tmp_path):
    path = tmp_path / "docs.jsonl"
    lines = [json.dumps({"text": "One."}), "{not json", json.dumps({"title": "no text"}), json.dumps({"text": "Two."})]
    path.write_text("\n".join(lines) + "\n")
    stats = ReadStats()
    assert [text for _, text in read_all([path], stats)] == ["One.", "Two."]
    assert stats.bad_json_lines == 2


def test_jsonl_lone_surrogates_are_skipped_and_counted(tmp_path, caplog):
    """json.loads accepts "\\ud800"; the text could never be encoded, so the line is skipped, not
    the run aborted."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "One."}\n{"text": "bad \\ud800 here"}\n{"text": "Two."}\n', encoding="utf8")
    stats = ReadStats(warn=True)
    with caplog.at_level(logging.WARNING):
        assert [text for _, text in read_all([path], stats)] == ["One.", "Two."]
    assert stats.invalid_utf8_lines == 1
    assert f"{path}: line 2 holds a lone surrogate" in caplog.text


def test_spacy_files_give_docs(tmp_path):
    vocab = Vocab()
    docs = DocBin(docs=[Doc(vocab, words=["A", "doc", "."]), Doc(vocab, words=["Another"])])
    docs.to_disk(tmp_path / "x.spacy")
    records = read_all([tmp_path / "x.spacy"], spacy_vocab=vocab)
    assert [doc.text for _, doc in records] == ["A doc . ", "Another "]


def test_a_corrupt_spacy_file_is_skipped(tmp_path):
    (tmp_path / "broken.spacy").write_bytes(b"this is not a DocBin")
    stats = ReadStats()
    assert read_all([tmp_path / "broken.spacy"], stats, spacy_vocab=Vocab()) == []
    assert stats.unreadable_files == [str(tmp_path / "broken.spacy")]


def test_reading_restarts_exactly_after_any_record(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n\nthree\n")
    (tmp_path / "b.jsonl").write_text('{"text": "four"}\n{"text": "five"}\n')
    files = list_corpus_files(tmp_path)
    everything = read_all(files)
    assert [text for _, text in everything] == ["one", "two", "three", "four", "five"]
    for index, (position, _) in enumerate(everything):
        rest = read_all(files, start=position)
        assert rest == everything[index + 1 :]
        assert position.record_index == index + 1


def test_ndjson_and_json_files_are_jsonl_as_for_embed(tmp_path):
    (tmp_path / "a.ndjson").write_text('{"text": "one"}\n')
    (tmp_path / "b.json").write_text('{"text": "two"}\n{"oops": 1}\n')
    stats = ReadStats()
    assert [text for _, text in read_all(list_corpus_files(tmp_path), stats)] == ["one", "two"]
    assert stats.bad_json_lines == 1
