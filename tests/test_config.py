"""``BiLMConfig`` refuses settings of the wrong type, values no model can have (NaN clips, a NaN
forget bias) and sizes that would take minutes or all memory, with one ``ValueError`` naming the
setting, for the byte and the code-point encoding alike; ``parameter_count`` is the model's
real size, word table included."""

import math

import pytest

from spacy_elmo.config import (
    CHAR_MARKERS,
    MAX_CHARACTERS_PER_TOKEN,
    MAX_CODE_POINT_CHARACTERS,
    MAX_COUNT,
    MAX_PARAMETERS,
    TINY_CONFIG,
    WORD_MARKERS,
    BiLMConfig,
    Lexicon,
)
from spacy_elmo.nn import BiLM


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"lstm_dim": 64.0}, "lstm_dim must be an integer, not 64.0"),
        ({"n_layers": True}, "n_layers must be an integer, not True"),
        ({"projection_dim": "8"}, "projection_dim must be an integer"),
        ({"filters": ((1, 4.0),)}, "filters must be a list of"),
        ({"filters": ((1, 4, 2),)}, "filters must be a list of"),
        ({"cell_clip": "3"}, "cell_clip must be a number or null"),
        ({"use_skip_connections": "false"}, "use_skip_connections must be true or false"),
        ({"forget_bias": None}, "forget_bias must be a number"),
    ],
)
def test_settings_of_the_wrong_type_are_named(changes, named):
    with pytest.raises(ValueError, match=named):
        TINY_CONFIG.replace(**changes)


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"cell_clip": math.nan}, "cell_clip must be a finite number >= 0"),
        ({"proj_clip": math.inf}, "proj_clip must be a finite number >= 0"),
        ({"cell_clip": -3.0}, "cell_clip must be a finite number >= 0"),
        ({"forget_bias": math.nan}, "forget_bias must be finite"),
    ],
)
def test_non_finite_and_negative_scalars_are_refused(changes, named):
    with pytest.raises(ValueError, match=named):
        TINY_CONFIG.replace(**changes)


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"n_layers": 10**7}, f"n_layers is 10000000, more than {MAX_COUNT}"),
        ({"n_highway": 10**7}, f"n_highway is 10000000, more than {MAX_COUNT}"),
        ({"filters": ((1, 1),) * (MAX_COUNT + 1)}, f"filters is {MAX_COUNT + 1}, more than {MAX_COUNT}"),
        ({"lstm_dim": 10**8}, "more than 8,589,934,592"),
    ],
)
def test_sizes_that_mean_huge_work_are_refused_at_once(changes, named):
    with pytest.raises(ValueError, match=named):
        TINY_CONFIG.replace(**changes)


def test_whole_numbers_of_numpy_and_clips_given_as_ints_are_fine():
    import numpy

    config = TINY_CONFIG.replace(lstm_dim=numpy.int64(16), cell_clip=3, proj_clip=None)
    assert type(config.lstm_dim) is int and config.to_dict()["lstm_dim"] == 16


@pytest.mark.parametrize(
    "config",
    [
        TINY_CONFIG,
        TINY_CONFIG.replace(vocab_size=7, n_highway=0, n_layers=3),
        BiLMConfig(),
    ],
)
def test_parameter_count_is_the_models_size(config):
    shapes = BiLM.state_shapes(config)
    assert config.parameter_count() == sum(math.prod(shape) for shape in shapes.values())
    assert config.parameter_count() <= MAX_PARAMETERS


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda o: o["lstm"].update(dim=64.0), "lstm.dim must be an integer, not 64.0"),
        (lambda o: o["lstm"].update(use_skip_connections="false"), "lstm.use_skip_connections must be true or false"),
        (lambda o: o["char_cnn"].update(n_characters="262"), "char_cnn.n_characters must be an integer"),
        (lambda o: o["char_cnn"].update(filters=[[1, 4], "x"]), "char_cnn.filters must be a list of"),
        (lambda o: o["lstm"].pop("projection_dim"), "the required field lstm.projection_dim is missing"),
        (lambda o: o.pop("char_cnn"), "the required field char_cnn is missing"),
        (lambda o: o["lstm"].update(cell_clip=math.nan), "cell_clip must be a finite number"),
    ],
)
def test_options_name_the_key_that_is_wrong(edit, named):
    options = TINY_CONFIG.to_options()
    edit(options)
    with pytest.raises(ValueError, match=named):
        BiLMConfig.from_options(options)


# ------------------------------------------------------------------ the code-point encoding's settings
def code_point_config(**changes) -> BiLMConfig:
    """A tiny code-point config (ELMoForManyLangs' encoding) with a word table of 9 rows."""
    settings = dict(
        char_embed_dim=3,
        filters=((1, 4), (2, 5)),
        n_highway=1,
        lstm_dim=8,
        projection_dim=4,
        n_layers=1,
        char_encoding="code_points",
        max_characters_per_token=9,
        n_characters=20,
        word_dim=3,
        n_words=9,
    )
    return BiLMConfig(**{**settings, **changes})


def code_point_lexicon(config: BiLMConfig) -> Lexicon:
    letters = [chr(0x4E00 + i) for i in range(config.n_characters - 1 - len(CHAR_MARKERS))]
    chars = {entry: index for index, entry in enumerate(letters + list(CHAR_MARKERS))}
    words = None
    if config.word_dim:
        words = {entry: index for index, entry in enumerate(list(WORD_MARKERS) + letters[: config.n_words - 3])}
    return Lexicon(chars, words)


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"char_encoding": 1}, "char_encoding must be one of"),
        ({"char_encoding": "utf8"}, "char_encoding must be one of"),
        ({"word_dim": 3.0}, "word_dim must be an integer, not 3.0"),
        ({"n_words": "9"}, "n_words must be an integer"),
        ({"n_words": -1, "word_dim": 0}, "n_words must not be negative"),
        ({"word_dim": -2, "n_words": 0}, "word_dim must not be negative"),
        ({"word_dim": 0}, r"word_dim \(0\) > 0 needs a word table \(n_words 9\) and 0 none"),
        ({"max_characters_per_token": 6}, "max_characters_per_token must be at least 7"),
        ({"n_characters": 5}, "n_characters must count the padding row and the 6 markers"),
        ({"filters": ((10, 4),)}, "every filter needs 1 <= width <= 9"),
    ],
)
def test_code_point_settings_of_the_wrong_type_or_value_are_named(changes, named):
    with pytest.raises(ValueError, match=named):
        code_point_config(**changes)


@pytest.mark.parametrize(
    "changes, named",
    [
        (
            {"max_characters_per_token": 10**7},
            f"max_characters_per_token is 10000000, more than {MAX_CHARACTERS_PER_TOKEN}",
        ),
        ({"n_characters": 0x110000 + 8}, f"n_characters is {0x110000 + 8}, more than {MAX_CODE_POINT_CHARACTERS}"),
        ({"n_words": 10**10}, "more than 8,589,934,592"),  # a word table alone too big
    ],
)
def test_code_point_sizes_that_mean_huge_work_are_refused_at_once(changes, named):
    with pytest.raises(ValueError, match=named):
        code_point_config(**changes)


def test_the_byte_encoding_keeps_its_fixed_sizes_and_has_no_word_table():
    with pytest.raises(ValueError, match="the byte encoding has max_characters_per_token=50 and n_characters=262"):
        TINY_CONFIG.replace(n_characters=300)
    with pytest.raises(ValueError, match="the byte encoding has no word table"):
        TINY_CONFIG.replace(word_dim=3, n_words=9)


@pytest.mark.parametrize(
    "config",
    [
        code_point_config(),
        code_point_config(word_dim=0, n_words=0, n_characters=4000, n_highway=0),
        code_point_config(vocab_size=5, n_layers=2),
    ],
)
def test_parameter_count_is_the_size_of_a_code_point_model(config):
    """The word table and a code-point char table of any size count, so the bound is right for them."""
    vocab = [str(i) for i in range(config.vocab_size)] or None
    shapes = BiLM.state_shapes(config, vocab, code_point_lexicon(config))
    assert config.parameter_count() == sum(math.prod(shape) for shape in shapes.values())


def test_a_byte_config_dict_has_no_encoding_keys_and_a_code_point_one_has_them_all():
    assert not {"char_encoding", "word_dim", "n_words"} & set(TINY_CONFIG.to_dict())
    settings = code_point_config().to_dict()
    assert (settings["char_encoding"], settings["word_dim"], settings["n_words"]) == ("code_points", 3, 9)
    assert BiLMConfig.from_dict(settings) == code_point_config()


def test_whole_number_clips_in_options_are_read_as_floats():
    """bilm-tf's options.json says ``"cell_clip": 3``; the config's dict (config.json, embed's
    weights digest) has always said 3.0, and a strict reader must not change that."""
    options = TINY_CONFIG.to_options()
    options["lstm"].update(cell_clip=3, proj_clip=3)
    config = BiLMConfig.from_options(options)
    assert type(config.cell_clip) is float and type(config.proj_clip) is float
    assert config.to_dict() == TINY_CONFIG.to_dict() and config.to_options() == TINY_CONFIG.to_options()
