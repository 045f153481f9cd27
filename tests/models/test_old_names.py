"""Names users could import from ``spacy_elmo.models`` before issue 29 renamed them still work."""

from spacy_elmo import models
from spacy_elmo.models.scalar_mix import mix_softmax_weights
from spacy_elmo.models.standalone import elmo_layers_node


def test_the_old_names_are_the_new_functions():
    assert models.ElmoLayers is elmo_layers_node
    assert models.layer_weights is mix_softmax_weights
    assert {"ElmoLayers", "layer_weights", "elmo_layers_node", "mix_softmax_weights"} <= set(models.__all__)
