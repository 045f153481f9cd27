"""Lines in binary mode: numbers, byte offsets to restart at, invalid UTF-8 and overlong lines."""

from __future__ import annotations

import pytest

from spacy_elmo.corpora.lines import read_lines


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
