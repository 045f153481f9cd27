"""One JSONL line as a record: its text field and, where asked for, its tokens.

A bad line raises :class:`BadJsonLine` with the reason; whether that ends the read or is
counted and passed over is the caller's choice (``embed`` stops, pretraining goes on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional


class BadJsonLine(ValueError):
    """A line that is not a JSON object with the wanted fields; the message says why."""


@dataclass(frozen=True)
class JsonlRecord:
    text: str
    tokens: Optional[list[str]] = None

    def has_lone_surrogate(self) -> bool:
        """True when the text or a token holds ``"\\ud800"``-like escapes, which have no UTF-8 form."""
        return has_lone_surrogate(self.text) or any(has_lone_surrogate(t) for t in self.tokens or ())


def parse_jsonl_line(line: str, text_field: str = "text", with_tokens: bool = False) -> JsonlRecord:
    """The record of ``line``; with ``with_tokens`` an optional ``tokens`` list of strings too."""
    try:
        record = json.loads(line)
    except ValueError as err:
        raise BadJsonLine(f"not valid JSON: {err}") from err
    except RecursionError as err:
        raise BadJsonLine("not usable JSON: nested too deeply") from err
    if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
        raise BadJsonLine(f"expected an object with a string {text_field!r} field")
    if not with_tokens:
        return JsonlRecord(record[text_field])
    tokens = record.get("tokens")
    if tokens is not None and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
        raise BadJsonLine("'tokens' must be a list of strings")
    return JsonlRecord(record[text_field], tokens)


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a surrogate code point, which has no UTF-8 encoding."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
