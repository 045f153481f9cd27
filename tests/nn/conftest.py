"""Fixtures shared by the LSTM loop tests."""

import pytest

from spacy_elmo.nn.lstm import graphed as lstm_graphed


@pytest.fixture
def small_windows(monkeypatch):
    """Windows of 3 steps for 8 rows: an 11-step batch runs 4 windows, the last one partial."""
    monkeypatch.setattr(lstm_graphed, "WINDOW_GATE_ROWS", 24)
