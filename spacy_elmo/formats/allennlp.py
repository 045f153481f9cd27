"""bilm-tf / AllenNLP weights: ``options.json`` and an ``.hdf5`` in bilm-tf's layout, to and from
arrays named as in ``BiLM.state_dict()`` (the mapping is the table in docs/weights.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator, Mapping, Union

import h5py
import numpy

from ..config import BiLMConfig
from ..durable import write_files_atomically
from .hdf5_arrays import hdf5_image, named_damage, open_hdf5, read_weight_arrays
from .regular_files import read_json_file

PathLike = Union[str, Path]
StateArrays = dict[str, numpy.ndarray]

_LSTM_PREFIX = "RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
_CHARS = "char_encoder."  # the state-dict names of the char-CNN, highway and projection
_STACKS = ("forward_lstm", "backward_lstm")  # ... and of the LSTMs, RNN_0 and RNN_1


def dataset_shapes(config: BiLMConfig) -> dict[str, tuple[int, ...]]:
    """Every dataset of a bilm-tf file for ``config`` and its shape, in writing order."""
    d, nf, p, c = config.char_embed_dim, config.n_filters, config.projection_dim, config.lstm_dim
    shapes: dict[str, tuple[int, ...]] = {"char_embed": (config.n_characters - 1, d)}
    for i, (width, n) in enumerate(config.filters):
        shapes[f"CNN/W_cnn_{i}"] = (1, width, d, n)
        shapes[f"CNN/b_cnn_{i}"] = (n,)
    for i in range(config.n_highway):
        shapes.update({f"CNN_high_{i}/W_transform": (nf, nf), f"CNN_high_{i}/W_carry": (nf, nf)})
        shapes.update({f"CNN_high_{i}/b_transform": (nf,), f"CNN_high_{i}/b_carry": (nf,)})
    shapes.update({"CNN_proj/W_proj": (nf, p), "CNN_proj/b_proj": (p,)})
    for prefix, _ in _lstm_layers(config):  # every layer's input is P wide (layer 0: the projection)
        shapes.update({prefix + "W_0": (p + p, 4 * c), prefix + "B": (4 * c,), prefix + "W_P_0": (c, p)})
    if config.vocab_size:
        shapes.update({"softmax/W": (config.vocab_size, p), "softmax/b": (config.vocab_size,)})
    return shapes


def _lstm_layers(config: BiLMConfig) -> Iterator[tuple[str, str]]:
    """(dataset prefix, state-dict prefix) of every LSTM layer, forward direction first."""
    for direction, stack in enumerate(_STACKS):
        for layer in range(config.n_layers):
            yield _LSTM_PREFIX.format(direction=direction, layer=layer), f"{stack}.layers.{layer}."


def _state_from_file(config: BiLMConfig, read: Callable[[str], numpy.ndarray]) -> StateArrays:
    char_embed = read("char_embed")  # ids 1..261: id 0 (padding) gets a zero row
    padding = numpy.zeros_like(char_embed[:1])
    state = {_CHARS + "char_embedding.weight": numpy.concatenate([padding, char_embed])}
    for i in range(len(config.filters)):  # (1, width, in, out) -> (out, in, width)
        state[f"{_CHARS}convolutions.{i}.weight"] = read(f"CNN/W_cnn_{i}")[0].transpose(2, 1, 0)
        state[f"{_CHARS}convolutions.{i}.bias"] = read(f"CNN/b_cnn_{i}")
    for i in range(config.n_highway):  # one linear map: the transform rows, then the gate rows
        weights = [read(f"CNN_high_{i}/W_{part}").T for part in ("transform", "carry")]
        biases = [read(f"CNN_high_{i}/b_{part}") for part in ("transform", "carry")]
        state[f"{_CHARS}highway.layers.{i}.weight"] = numpy.concatenate(weights)
        state[f"{_CHARS}highway.layers.{i}.bias"] = numpy.concatenate(biases)
    state[_CHARS + "projection.weight"] = read("CNN_proj/W_proj").T
    state[_CHARS + "projection.bias"] = read("CNN_proj/b_proj")
    for prefix, ours in _lstm_layers(config):
        gates = read(prefix + "W_0").T  # (4C, input + P): the input's columns, then the state's
        state[ours + "input_weight"] = gates[:, : config.projection_dim]
        state[ours + "recurrent_weight"] = gates[:, config.projection_dim :]
        state[ours + "bias"] = read(prefix + "B")
        state[ours + "projection_weight"] = read(prefix + "W_P_0").T
    if config.vocab_size:
        state["softmax.weight"], state["softmax.bias"] = read("softmax/W"), read("softmax/b")
    return state


def _file_from_state(config: BiLMConfig, state: Mapping[str, numpy.ndarray]) -> StateArrays:
    """The inverse of :func:`_state_from_file`."""
    stored = {"char_embed": state[_CHARS + "char_embedding.weight"][1:]}
    for i in range(len(config.filters)):
        stored[f"CNN/W_cnn_{i}"] = state[f"{_CHARS}convolutions.{i}.weight"].transpose(2, 1, 0)[None]
        stored[f"CNN/b_cnn_{i}"] = state[f"{_CHARS}convolutions.{i}.bias"]
    nf = config.n_filters
    for i in range(config.n_highway):
        weight, bias = state[f"{_CHARS}highway.layers.{i}.weight"], state[f"{_CHARS}highway.layers.{i}.bias"]
        stored[f"CNN_high_{i}/W_transform"], stored[f"CNN_high_{i}/W_carry"] = weight[:nf].T, weight[nf:].T
        stored[f"CNN_high_{i}/b_transform"], stored[f"CNN_high_{i}/b_carry"] = bias[:nf], bias[nf:]
    stored["CNN_proj/W_proj"] = state[_CHARS + "projection.weight"].T
    stored["CNN_proj/b_proj"] = state[_CHARS + "projection.bias"]
    for prefix, ours in _lstm_layers(config):
        gates = numpy.concatenate([state[ours + "input_weight"], state[ours + "recurrent_weight"]], axis=1)
        stored[prefix + "W_0"] = gates.T
        stored[prefix + "B"] = state[ours + "bias"]
        stored[prefix + "W_P_0"] = state[ours + "projection_weight"].T
    if config.vocab_size:
        stored["softmax/W"], stored["softmax/b"] = state["softmax.weight"], state["softmax.bias"]
    return stored


def read_allennlp(options_file: PathLike, weight_file: PathLike) -> tuple[BiLMConfig, StateArrays]:
    """The config and state-dict arrays, every dataset checked against the options before any is read."""
    options = read_json_file(options_file, "options file", dict)
    try:
        config = BiLMConfig.from_options(options)
    except ValueError as err:
        raise ValueError(f"{options_file}: {err}") from err
    with open_hdf5(weight_file) as handle:
        with named_damage(str(weight_file)):
            softmax = handle.get("softmax/W")
            if isinstance(softmax, h5py.Dataset) and softmax.ndim >= 1:
                config = config.replace(vocab_size=int(softmax.shape[0]))
        expected = dataset_shapes(config)
        arrays = read_weight_arrays(handle, str(weight_file), expected, str(options_file), "the options imply")
    return config, _state_from_file(config, arrays.__getitem__)


def write_allennlp(
    options_file: PathLike, weight_file: PathLike, config: BiLMConfig, state: Mapping[str, numpy.ndarray]
) -> None:
    """Write ``options.json`` and the ``.hdf5``, both or neither (an earlier export stays on a crash)."""
    options_file, weight_file = Path(options_file), Path(weight_file)
    stored = _file_from_state(config, state)

    def fill(handle: h5py.File) -> None:
        for name, shape in dataset_shapes(config).items():
            array = stored[name]
            assert array.shape == shape, (name, array.shape, shape)
            handle.create_dataset(name, data=numpy.ascontiguousarray(array, dtype=numpy.float32))

    options = json.dumps(config.to_options(), indent=2).encode("utf8")
    options_file.parent.mkdir(parents=True, exist_ok=True)
    weight_file.parent.mkdir(parents=True, exist_ok=True)
    write_files_atomically({options_file: options, weight_file: hdf5_image(fill)})
