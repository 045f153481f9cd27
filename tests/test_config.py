"""``BiLMConfig`` refuses settings of the wrong type, values no model can have (NaN clips, a NaN
forget bias) and sizes that would take minutes or all memory, with one ``ValueError`` naming the
setting; ``parameter_count`` is the model's real size."""
import math

import pytest

from spacy_elmo.config import MAX_COUNT, MAX_PARAMETERS, TINY_CONFIG, BiLMConfig
from spacy_elmo.nn import BiLM


@pytest.mark.parametrize("changes, named", [
    ({"lstm_dim": 64.0}, "lstm_dim must be an integer, not 64.0"),
    ({"n_layers": True}, "n_layers must be an integer, not True"),
    ({"projection_dim": "8"}, "projection_dim must be an integer"),
    ({"filters": ((1, 4.0),)}, "filters must be a list of"),
    ({"filters": ((1, 4, 2),)}, "filters must be a list of"),
    ({"cell_clip": "3"}, "cell_clip must be a number or null"),
    ({"use_skip_connections": "false"}, "use_skip_connections must be true or false"),
    ({"forget_bias": None}, "forget_bias must be a number"),
])
def test_settings_of_the_wrong_type_are_named(changes, named):
    with pytest.raises(ValueError, match=named):
        TINY_CONFIG.replace(**changes)


@pytest.mark.parametrize("changes, named", [
    ({"cell_clip": math.nan}, "cell_clip must be a finite number >= 0"),
    ({"proj_clip": math.inf}, "proj_clip must be a finite number >= 0"),
    ({"cell_clip": -3.0}, "cell_clip must be a finite number >= 0"),
    ({"forget_bias": math.nan}, "forget_bias must be finite"),
])
def test_non_finite_and_negative_scalars_are_refused(changes, named):
    with pytest.raises(ValueError, match=named):
        TINY_CONFIG.replace(**changes)


@pytest.mark.parametrize("changes, named", [
    ({"n_layers": 10**7}, f"n_layers is 10000000, more than {MAX_COUNT}"),
    ({"n_highway": 10**7}, f"n_highway is 10000000, more than {MAX_COUNT}"),
    ({"filters": ((1, 1),) * (MAX_COUNT + 1)}, f"filters is {MAX_COUNT + 1}, more than {MAX_COUNT}"),
    ({"lstm_dim": 10**8}, "more than 8,589,934,592"),
])
def test_sizes_that_mean_huge_work_are_refused_at_once(changes, named):
    with pytest.raises(ValueError, match=named):
        TINY_CONFIG.replace(**changes)


def test_whole_numbers_of_numpy_and_clips_given_as_ints_are_fine():
    import numpy

    config = TINY_CONFIG.replace(lstm_dim=numpy.int64(16), cell_clip=3, proj_clip=None)
    assert type(config.lstm_dim) is int and config.to_dict()["lstm_dim"] == 16


@pytest.mark.parametrize("config", [
    TINY_CONFIG,
    TINY_CONFIG.replace(vocab_size=7, n_highway=0, n_layers=3),
    BiLMConfig(),
])
def test_parameter_count_is_the_models_size(config):
    shapes = BiLM.state_shapes(config)
    assert config.parameter_count() == sum(math.prod(shape) for shape in shapes.values())
    assert config.parameter_count() <= MAX_PARAMETERS


@pytest.mark.parametrize("edit, named", [
    (lambda o: o["lstm"].update(dim=64.0), "lstm.dim has the wrong type or form: 64.0"),
    (lambda o: o["lstm"].update(use_skip_connections="false"), "lstm.use_skip_connections has the wrong type"),
    (lambda o: o["char_cnn"].update(n_characters="262"), "char_cnn.n_characters has the wrong type"),
    (lambda o: o["char_cnn"].update(filters=[[1, 4], "x"]), "char_cnn.filters has the wrong type"),
    (lambda o: o["lstm"].pop("projection_dim"), "the required field lstm.projection_dim is missing"),
    (lambda o: o.pop("char_cnn"), "the required field char_cnn is missing"),
    (lambda o: o["lstm"].update(cell_clip=math.nan), "cell_clip must be a finite number"),
])
def test_options_name_the_key_that_is_wrong(edit, named):
    options = TINY_CONFIG.to_options()
    edit(options)
    with pytest.raises(ValueError, match=named):
        BiLMConfig.from_options(options)
