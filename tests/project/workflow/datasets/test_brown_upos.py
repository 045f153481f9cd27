"""The Brown tag -> UPOS mapping (scripts/workflow/datasets/brown_upos.py); one test reads the
real Brown corpus if fetched."""

from collections import Counter
from pathlib import Path

import pytest

from scripts.workflow.datasets import brown as brown_corpus
from scripts.workflow.datasets import brown_upos

ROOT = Path(__file__).resolve().parents[4]


SAMPLE_TAGS = {
    "nn": "NOUN",
    "nns$": "NOUN",
    "nn$-tl": "NOUN",
    "np-tl": "PROPN",
    "nps$": "PROPN",
    "nn-tl-hl": "NOUN",
    "fw-nn": "NOUN",
    "fw-in-tl": "ADP",
    "fw-*": "PART",
    "pps+bez": "PRON",
    "ppss+md": "PRON",
    "ppss+ber-n": "PRON",
    "in+at-t": "ADP",
    "fw-in+at-tl": "ADP",
    "wdt+ber+pp": "PRON",
    "dt+bez": "PRON",
    "at+nn": "NOUN",
    "fw-at+np-tl": "PROPN",
    "vb+ppo": "VERB",
    "vbg+to": "VERB",
    "md+hv": "AUX",
    "md*": "AUX",
    "bez*": "AUX",
    "dod*": "AUX",
    "hvz*": "AUX",
    "doz*-tl": "AUX",
    "*": "PART",
    "*-hl": "PART",
    "nil": "X",
    "pp$": "PRON",
    "pp$$": "PRON",
    "wp$": "PRON",
    "---hl": "PUNCT",
    "(-hl": "PUNCT",
    "``": "PUNCT",
    "''": "PUNCT",
    "'": "PUNCT",
    ".-nc": "PUNCT",
    "cd$": "NUM",
    "od": "ADJ",
    "ap$": "ADJ",
    "abn": "DET",
    "ql": "ADV",
    "rp": "ADP",
    "to": "PART",
    "uh-tl": "INTJ",
    "cs": "SCONJ",
    "cc": "CCONJ",
    "ex+bez": "PRON",
    "bedz": "AUX",
    "md": "AUX",
    "jj+jj-nc": "ADJ",
    "nr$": "NOUN",
    "rb$": "ADV",
}


def test_brown_upos_mapping_on_sample():
    for tag, upos in SAMPLE_TAGS.items():
        assert brown_upos.brown_to_upos(tag) == upos, tag
        assert brown_upos.brown_to_upos(tag.upper()) == upos, tag
    assert set(brown_upos.BASE_UPOS.values()) <= brown_upos.UPOS_TAGS
    for bad in ("xyz", "nn+xyz", "fw-", ""):
        with pytest.raises(KeyError):
            brown_upos.brown_to_upos(bad)


@pytest.mark.parametrize(
    "tags,expected",
    [
        ("pps hvd ben vbn .", "PRON AUX AUX VERB PUNCT"),
        ("pps hvd at nn .", "PRON VERB DET NOUN PUNCT"),
        ("hvz pps vbn", "AUX PRON VERB"),
        ("ppss hv to vb", "PRON VERB PART VERB"),
        ("dod pps rb vb", "AUX PRON ADV VERB"),
        ("ppss dod at nn", "PRON VERB DET NOUN"),
        ("hv+to vb", "VERB VERB"),
        ("dt nn", "DET NOUN"),
        ("dt bez jj", "PRON AUX ADJ"),
        ("nn wdt hvd", "NOUN PRON VERB"),
        ("wdt jj nns", "DET ADJ NOUN"),
    ],
)
def test_brown_upos_context_rules(tags, expected):
    assert brown_upos.sentence_upos(tags.split()) == expected.split()


def test_every_real_brown_tag_maps():
    brown_dir = ROOT / "assets" / "brown"
    if not brown_dir.is_dir() or not brown_corpus.brown_files(brown_dir):
        pytest.skip("real Brown corpus not fetched (python -m scripts fetch)")
    tags = set()
    problems = Counter()
    for path in brown_corpus.brown_files(brown_dir):
        for sentence in brown_corpus.read_brown_file(path, problems):
            tags.update(tag for _, tag in sentence)
    unmapped = sorted(t for t in tags if not brown_upos.is_mappable(t))
    assert not unmapped
    assert len(tags) > 400 and not problems
