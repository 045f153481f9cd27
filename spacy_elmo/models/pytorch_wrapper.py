"""The torch biLM inside a Thinc model: input/output conversion and pickle-free serialization.

Thinc's ``PyTorchWrapper`` does the device handling, the backward pass and the optimizer
step; what is specific to us is here. The wrapped module may be ``None`` until the weights are
known (a config's sizes say nothing when weights are loaded at ``initialize``), so building a
pipeline never allocates a biLM it will throw away. Serialized, the module is our native model
directory (``config.json`` + HDF5 weights) packed into bytes: no pickle anywhere, and the sizes
travel with the weights.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, cast

import srsly
import torch
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3, get_torch_default_device
from thinc.layers.pytorchwrapper import convert_pytorch_default_outputs
from thinc.shims import PyTorchShim

from ..formats.native import model_files, packed_model
from ..nn.bilm import BiLM
from ..nn.words.word_batch import encode_padded

PACKED_NAME = "biLM"  # how errors name the model files packed into a component's model


def TorchBiLM(bilm: Optional[BiLM] = None) -> Model:
    """Word sequences (one batch, as the embedder plans it) -> ``(L+1, B, T, D)`` layers."""
    return PyTorchWrapper_v3(
        bilm,  # type: ignore[arg-type]  # None until the weights are known (see above): the shim holds it as is
        convert_inputs=_convert_inputs,
        convert_outputs=convert_pytorch_default_outputs,
        serialize_model=serialize_bilm,
        deserialize_model=deserialize_bilm,
    )


def get_torch_bilm(model: Model) -> Optional[BiLM]:
    return model.shims[0]._model


def set_torch_bilm(model: Model, bilm: BiLM) -> None:
    """Put ``bilm`` in the wrapper, on the device of the current Thinc backend."""
    model.shims[0]._model = bilm.to(get_torch_default_device())


def _convert_inputs(model: Model, X: Sequence[Sequence[str]], is_train: bool):
    """The words as id rows framed by BOS/EOS (in the biLM's encoding), on the module's device,
    and their lengths."""
    char_ids, lengths = encode_padded(X, encoding=model.shims[0]._model.encoding)
    device = cast(PyTorchShim, model.shims[0]).device  # the wrapper's one shim
    args = (torch.from_numpy(char_ids).to(device), torch.from_numpy(lengths))
    return ArgsKwargs(args=args, kwargs={}), _no_input_gradient


def _no_input_gradient(d_inputs: Any) -> None:
    return None


def serialize_bilm(bilm: Optional[BiLM]) -> bytes:
    """The model directory's files as one msgpack message; empty bytes for "no biLM yet"."""
    if bilm is None:
        return b""
    return srsly.msgpack_dumps(model_files(bilm.config, bilm.state_arrays(), bilm.vocab, bilm.lexicon))


def deserialize_bilm(current: Optional[BiLM], data: bytes, device: torch.device) -> Optional[BiLM]:
    """Rebuild the biLM from :func:`serialize_bilm`'s bytes, with the sizes stored in them. The
    files are read from memory, so an error names the file inside the biLM (``biLM/weights.hdf5``),
    never a temporary path; the component adds its pipeline directory."""
    if not data:
        return current
    try:
        files = srsly.msgpack_loads(data)
    except Exception as err:  # msgpack raises several kinds (and bare ValueErrors) for damaged bytes
        raise ValueError(f"{PACKED_NAME} is damaged: its files cannot be unpacked ({err})") from err
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, bytes) for k, v in files.items()):
        raise ValueError(f"{PACKED_NAME} is damaged: expected a map of file names to bytes")
    return BiLM.from_disk(packed_model(files, PACKED_NAME)).to(device).eval()
