"""Saved Docs stay small with spaCy's ``doc_cleaner`` after the ELMo components: without it,
every Doc carries all biLM layers (4 KB per token with the project's biLM). The README's
numbers are measured this way."""

import pytest
import spacy
from spacy.tokens import DocBin

TEXT = "The bank raised interest rates on Friday , they said ."


def pipeline(weights, cleaner=None):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    if cleaner is not None:
        nlp.add_pipe("doc_cleaner", config={"attrs": cleaner})
    return nlp


@pytest.mark.filterwarnings("ignore:.*user hooks")
def test_doc_cleaner_drops_the_layers_and_keeps_the_vectors(tiny_weights):
    full = pipeline(tiny_weights)(TEXT)
    nlp = pipeline(tiny_weights, {"_.elmo_layers": None})
    cleaned = nlp(TEXT)
    n_layers, n_tokens, width = full._.elmo_layers.shape
    assert cleaned._.elmo_layers is None
    # what is saved shrinks by the layers: (L+1) * n * D float32
    saved = len(full.to_bytes()) - len(cleaned.to_bytes())
    assert saved >= n_layers * n_tokens * width * 4
    data = DocBin(store_user_data=True, docs=[cleaned]).to_bytes()
    (restored,) = DocBin(store_user_data=True).from_bytes(data).get_docs(nlp.vocab)
    assert restored._.elmo_layers is None
    assert (restored[1]._.elmo == full[1]._.elmo).all()
    assert cleaned[1].similarity(restored[1]) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.filterwarnings("ignore:.*user hooks")
def test_without_vectors_similarity_says_why(tiny_weights):
    doc = pipeline(tiny_weights, {"_.elmo_layers": None, "_.elmo_vectors": None})(TEXT)
    assert doc[1]._.elmo is None
    with pytest.raises(ValueError, match="Token 'bank' has none"):
        doc[1].similarity(doc[3])
