"""bilm-tf / AllenNLP weights: ``options.json`` plus an ``.hdf5`` in bilm-tf's variable layout.

The mapping, for each piece of our model:
- ``char_embed`` (261, d): rows for ids 1..261; our table has an extra zero row 0 for padding.
- ``CNN/W_cnn_i`` (1, width, d, n) and ``CNN/b_cnn_i``: convolution i.
- ``CNN_high_i/W_transform|W_carry`` (in, out) and biases: highway i; bilm-tf's carry gate
  multiplies the transform branch, which is our convention too, so no sign flip.
- ``CNN_proj/W_proj`` (n_filters, P) and ``b_proj``.
- ``RNN_{0|1}/RNN/MultiRNNCell/Cell{k}/LSTMCell/W_0`` (input + P, 4C): rows for the input, then
  for the recurrent state; gates in TF's order i, j, f, o (ours too); ``B`` (4C) without the
  forget bias of 1.0 that is added at run time; ``W_P_0`` (C, P) the projection. RNN_0 is the
  forward direction, RNN_1 the backward one.
- ``softmax/W`` (V, P) and ``softmax/b`` (V,) when the model has an output softmax (ours only;
  AllenNLP ignores them).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Union

import h5py
import numpy
import torch

from ..nn.bilm import BiLM
from ..nn.config import BiLMConfig
from .hdf5_arrays import check_no_unused, check_shape, open_hdf5, read_array

PathLike = Union[str, Path]

_LSTM_PREFIX = "RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"


def read_options(options_file: PathLike) -> BiLMConfig:
    path = Path(options_file)
    if not path.is_file():
        raise FileNotFoundError(f"Options file not found: {path}")
    try:
        options = json.loads(path.read_text(encoding="utf8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a valid options.json: {err}") from err
    if not isinstance(options, dict):
        raise ValueError(f"{path} is not a valid options.json: expected a JSON object")
    return BiLMConfig.from_options(options)


def _weight_map(model: BiLM) -> Iterator[tuple[str, torch.Tensor, tuple[int, ...], str]]:
    """(dataset, tensor slice, stored shape, how the stored array maps onto the tensor)."""
    config = model.config
    encoder = model.char_encoder
    d = config.char_embed_dim
    yield "char_embed", encoder.char_embedding.weight[1:], (config.n_characters - 1, d), "same"
    for i, ((width, n), conv) in enumerate(zip(config.filters, encoder.convolutions)):
        yield f"CNN/W_cnn_{i}", conv.weight, (1, width, d, n), "conv"
        yield f"CNN/b_cnn_{i}", conv.bias, (n,), "same"
    nf = config.n_filters
    for i, layer in enumerate(encoder.highway.layers):
        yield f"CNN_high_{i}/W_transform", layer.weight[:nf], (nf, nf), "transpose"
        yield f"CNN_high_{i}/W_carry", layer.weight[nf:], (nf, nf), "transpose"
        yield f"CNN_high_{i}/b_transform", layer.bias[:nf], (nf,), "same"
        yield f"CNN_high_{i}/b_carry", layer.bias[nf:], (nf,), "same"
    p, c = config.projection_dim, config.lstm_dim
    yield "CNN_proj/W_proj", encoder.projection.weight, (nf, p), "transpose"
    yield "CNN_proj/b_proj", encoder.projection.bias, (p,), "same"
    for direction, stack in enumerate((model.forward_lstm, model.backward_lstm)):
        for k, layer in enumerate(stack.layers):
            prefix = _LSTM_PREFIX.format(direction=direction, layer=k)
            i_dim = layer.input_dim
            yield prefix + "W_0", torch.cat([layer.input_weight, layer.recurrent_weight], 1), (i_dim + p, 4 * c), "lstm"
            yield prefix + "B", layer.bias, (4 * c,), "same"
            yield prefix + "W_P_0", layer.projection_weight, (c, p), "transpose"
    if model.softmax is not None:
        yield "softmax/W", model.softmax.weight, (config.vocab_size, p), "same"
        yield "softmax/b", model.softmax.bias, (config.vocab_size,), "same"


def _to_ours(array: numpy.ndarray, how: str) -> numpy.ndarray:
    if how == "conv":  # (1, width, in, out) -> (out, in, width)
        return array[0].transpose(2, 1, 0)
    if how in ("transpose", "lstm"):
        return array.T
    return array


def load_allennlp(options_file: PathLike, weight_file: PathLike) -> BiLM:
    """A :class:`BiLM` with the weights of a bilm-tf/AllenNLP model, checked dataset by dataset.

    Every dataset's shape is checked against the options before the model is allocated (so a
    small file claiming huge sizes fails at once), every dataset must be one the options use,
    and every value must be finite.
    """
    config = read_options(options_file)
    with open_hdf5(weight_file) as handle:
        softmax = handle.get("softmax/W")
        if isinstance(softmax, h5py.Dataset) and softmax.ndim >= 1:
            config = config.replace(vocab_size=int(softmax.shape[0]))
        with torch.device("meta"):  # names and shapes only: no memory is allocated
            skeleton = BiLM(config)
        expected = {name: shape for name, _, shape, _ in _weight_map(skeleton)}
        for name, shape in expected.items():
            check_shape(handle, name, shape)
        check_no_unused(handle, set(expected), str(options_file))
        model = BiLM(config)
        with torch.no_grad():
            model.char_encoder.char_embedding.weight[0].zero_()
            for name, tensor, shape, how in _weight_map(model):
                array = _to_ours(read_array(handle, name, shape), how)
                if how == "lstm":
                    layer = _lstm_layer(model, name)
                    layer.input_weight.copy_(torch.from_numpy(numpy.ascontiguousarray(array[:, : layer.input_dim])))
                    layer.recurrent_weight.copy_(torch.from_numpy(numpy.ascontiguousarray(array[:, layer.input_dim :])))
                else:
                    tensor.copy_(torch.from_numpy(numpy.ascontiguousarray(array)))
    model.eval()
    return model


def _lstm_layer(model: BiLM, name: str):
    direction = int(name[len("RNN_")])
    layer = int(name.split("/Cell")[1].split("/")[0])
    stack = model.forward_lstm if direction == 0 else model.backward_lstm
    return stack.layers[layer]


def save_allennlp(model: BiLM, options_file: PathLike, weight_file: PathLike) -> None:
    """Write the model in bilm-tf's layout; :func:`load_allennlp` reads it back bit for bit."""
    Path(options_file).parent.mkdir(parents=True, exist_ok=True)
    Path(weight_file).parent.mkdir(parents=True, exist_ok=True)
    Path(options_file).write_text(json.dumps(model.config.to_options(), indent=2), encoding="utf8")
    with h5py.File(weight_file, "w") as handle:
        for name, tensor, shape, how in _weight_map(model):
            ours = tensor.detach().to("cpu", torch.float32).numpy()
            if how == "conv":
                stored = ours.transpose(2, 1, 0)[None]
            elif how in ("transpose", "lstm"):
                stored = ours.T
            else:
                stored = ours
            assert stored.shape == shape, (name, stored.shape, shape)
            handle.create_dataset(name, data=numpy.ascontiguousarray(stored, dtype=numpy.float32))
