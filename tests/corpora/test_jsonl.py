"""A JSONL line as a record: the text field, optional tokens, and the reason a line is bad."""

from __future__ import annotations

import pytest

from spacy_elmo.corpora.jsonl import BadJsonLine, JsonlRecord, has_lone_surrogate, parse_jsonl_line


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
