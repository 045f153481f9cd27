"""``spacy_elmo.BiLM.v1``: Docs in, an ``(L+1, n_tokens, D)`` array of every biLM layer per Doc out.
The model's :class:`Embedder` batches the sentences under a budget of padded tokens; prediction runs
it without autograd, training runs its batches through Thinc's PyTorch wrapper."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union, cast

import numpy
import srsly
import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3, get_torch_default_device, torch2xp
from thinc.layers.pytorchwrapper import convert_pytorch_default_outputs
from thinc.shims import PyTorchShim
from thinc.types import Floats3d

from ..config import BiLMConfig
from ..embedding.batch_forward import to_host
from ..embedding.embedder import DEFAULT_MAX_TOKENS, DEFAULT_WORD_CACHE_WORDS, Embedder
from ..embedding.plan import Window
from ..formats.native import model_files, packed_model
from ..nn.bilm import BiLM
from ..nn.precision import DEFAULT_PRECISION
from ..nn.words.word_batch import encode_padded

PACKED_NAME = "biLM"  # how errors name the model files packed into a component's model


@registry.architectures("spacy_elmo.BiLM.v1")
def build_bilm_model(
    char_embed_dim: int = BiLMConfig.char_embed_dim,
    filters: Sequence[Sequence[int]] = BiLMConfig.filters,
    n_highway: int = BiLMConfig.n_highway,
    activation: str = BiLMConfig.activation,
    lstm_dim: int = BiLMConfig.lstm_dim,
    projection_dim: int = BiLMConfig.projection_dim,
    n_layers: int = BiLMConfig.n_layers,
    cell_clip: Optional[float] = BiLMConfig.cell_clip,
    proj_clip: Optional[float] = BiLMConfig.proj_clip,
    use_skip_connections: bool = BiLMConfig.use_skip_connections,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    batch_max_tokens: int = 2048,
    word_cache_words: int = DEFAULT_WORD_CACHE_WORDS,
) -> Model[List[Doc], List[Floats3d]]:
    """The biLM as a Thinc model (settings: docs/component.md). The sizes only build a random biLM:
    loaded weights bring their own, so the torch module is built at ``initialize``, never when
    a pipeline whose weights come from disk is built."""
    config = BiLMConfig(
        char_embed_dim=char_embed_dim,
        # pairs, unless the config is wrong: BiLMConfig names what is not a (width, n_filters) pair
        filters=cast(Tuple[Tuple[int, int], ...], tuple(tuple(f) for f in filters)),
        n_highway=n_highway,
        activation=activation,
        lstm_dim=lstm_dim,
        projection_dim=projection_dim,
        n_layers=n_layers,
        cell_clip=cell_clip,
        proj_clip=proj_clip,
        use_skip_connections=use_skip_connections,
    )
    if max_tokens < 1 or batch_max_tokens < 1:
        raise ValueError(f"max_tokens ({max_tokens}) and batch_max_tokens ({batch_max_tokens}) must be > 0")
    if word_cache_words < 0:
        raise ValueError(f"word_cache_words must not be negative, not {word_cache_words}")
    wrapper = PyTorchWrapper_v3(
        None,  # type: ignore[arg-type]  # until the weights are known: the shim holds it as is
        convert_inputs=_convert_inputs,
        convert_outputs=convert_pytorch_default_outputs,
        serialize_model=serialize_bilm,
        deserialize_model=deserialize_bilm,
    )
    return Model(
        "elmo_bilm",
        forward,
        init=init,
        layers=[wrapper],
        dims={"nL": None, "nO": None},
        attrs={
            "bilm_config": config.to_dict(),
            "max_tokens": max_tokens,
            "batch_max_tokens": batch_max_tokens,
            "word_cache_words": word_cache_words,
        },
    )


def init(model: Model, X: Optional[List[Doc]] = None, Y: Optional[object] = None) -> None:
    """A random biLM of the configured sizes, unless one is loaded (weights, or ``weights = "random"``)."""
    if get_bilm(model) is None:
        set_bilm(model, random_bilm(model))


def random_bilm(model: Model) -> BiLM:
    return BiLM(BiLMConfig.from_dict(model.attrs["bilm_config"])).eval()


def get_bilm(model: Model) -> Optional[BiLM]:
    """The torch biLM inside a ``spacy_elmo.BiLM.v1`` model (``None`` before initialization)."""
    return model.layers[0].shims[0]._model


def set_bilm(model: Model, bilm: BiLM) -> None:
    """Swap in ``bilm``, on the current Thinc backend's device; the dims and config follow its sizes."""
    model.layers[0].shims[0]._model = bilm.to(get_torch_default_device())
    model.attrs.pop("embedder", None)  # bound to the old biLM: rebuilt on the next call
    model.attrs["bilm_config"] = bilm.config.to_dict()
    model.set_dim("nL", bilm.config.n_output_layers, force=True)
    model.set_dim("nO", bilm.config.output_dim, force=True)


def set_precision(model: Model, precision: str) -> None:
    """The precision of prediction's products (see :class:`Embedder`); training stays float32."""
    model.attrs["precision"] = precision


def get_embedder(model: Model) -> Embedder:
    """The :class:`Embedder` of the model's biLM and settings, built again when either changes.
    It lives in ``model.attrs``: copies of the model get one with an empty word cache, and
    ``to_bytes`` leaves it out (it is no data, and msgpack cannot hold it)."""
    bilm = get_bilm(model)
    if bilm is None:
        raise ValueError("The biLM has no weights yet: load weights or initialize the model first")
    budget = model.attrs["batch_max_tokens"]
    settings = {
        "max_tokens": model.attrs["max_tokens"],
        "batch_tokens": budget,
        "batch_sentences": budget,  # the budget alone bounds a batch
        "word_cache_words": model.attrs.get("word_cache_words", 0),
        "precision": model.attrs.get("precision", DEFAULT_PRECISION),
    }
    embedder = model.attrs.get("embedder")
    if not isinstance(embedder, Embedder) or embedder.bilm is not bilm or embedder.settings != settings:
        embedder = Embedder(bilm, **settings)
        model.attrs["embedder"] = embedder
    return embedder


@dataclass(frozen=True)
class DocSentence:
    """One sentence of a Doc: the Doc's index in the batch, its word positions and texts."""

    doc_index: int
    positions: numpy.ndarray
    words: tuple[str, ...]


def doc_sentences(docs: Sequence[Doc]) -> Iterator[DocSentence]:
    """Every sentence of every Doc (the whole Doc without sentence starts: the biLM was trained on
    sentences) that has a word. Whitespace tokens are left out (the biLM never saw them, and they
    would disturb their neighbours' context): they get zero vectors."""
    for doc_index, doc in enumerate(docs):
        if not len(doc):
            continue
        texts = [token.text for token in doc]
        is_word = doc.to_array("IS_SPACE") == 0
        spans = [(s.start, s.end) for s in doc.sents] if doc.has_annotation("SENT_START") else [(0, len(doc))]
        for start, end in spans:
            positions = numpy.flatnonzero(is_word[start:end]) + start
            if len(positions):
                yield DocSentence(doc_index, positions, tuple(texts[i] for i in positions.tolist()))


def forward(model: Model, docs: List[Doc], is_train: bool) -> tuple[List[Floats3d], Callable]:
    embedder = get_embedder(model)
    ops = model.ops
    n_layers, width = model.get_dim("nL"), model.get_dim("nO")
    outputs = [ops.alloc3f(n_layers, len(doc), width) for doc in docs]
    sentences = list(doc_sentences(docs))
    words = [sentence.words for sentence in sentences]
    batches = [batch for group in embedder.plan([len(w) for w in words]) for batch in group.batches]
    if not is_train:
        for batch in batches:
            computed = embedder.run(words, batch)  # on the device; CuPy shares the torch memory
            found: Any = to_host(computed) if ops.xp is numpy else torch2xp(computed.to(torch.float32), ops=ops)
            offset = 0
            for window in batch:
                target = _index(ops, sentences[window.sentence], window)
                outputs[sentences[window.sentence].doc_index][:, target] = found[:, offset : offset + len(window)]
                offset += len(window)
        return outputs, _no_backprop
    torch_bilm = model.layers[0]
    pending: list[tuple[Sequence[Window], tuple[int, ...], Callable]] = []
    for batch in batches:
        layers, backprop_batch = torch_bilm([window.words(words) for window in batch], is_train)
        for row, window in enumerate(batch):
            sentence = sentences[window.sentence]
            outputs[sentence.doc_index][:, _index(ops, sentence, window)] = layers[:, row, : len(window)]
        pending.append((batch, layers.shape, backprop_batch))

    def backprop(d_outputs: List[Floats3d]) -> List[Doc]:
        for batch, shape, backprop_batch in pending:
            d_layers = ops.alloc(shape, dtype="float32")
            for row, window in enumerate(batch):
                sentence = sentences[window.sentence]
                d_layers[:, row, : len(window)] = d_outputs[sentence.doc_index][:, _index(ops, sentence, window)]
            backprop_batch(d_layers)
        return []

    return outputs, backprop


def _no_backprop(d_outputs: Any) -> Any:
    raise ValueError("spacy_elmo.BiLM.v1 ran without is_train: there is no gradient to pass back")


def _index(ops: Any, sentence: DocSentence, window: Window) -> Union[slice, Any]:
    """The Doc positions of ``window``'s tokens, as a slice when contiguous (valid for any array type)."""
    positions = sentence.positions[window.start : window.end]
    first, last = int(positions[0]), int(positions[-1])
    return slice(first, last + 1) if last - first + 1 == len(positions) else ops.asarray_i(positions)


def _convert_inputs(model: Model, X: Sequence[Sequence[str]], is_train: bool):
    """Word sequences as id rows framed by BOS/EOS, on the module's device, and their lengths."""
    char_ids, lengths = encode_padded(X, encoding=model.shims[0]._model.encoding)
    device = cast(PyTorchShim, model.shims[0]).device
    args = (torch.from_numpy(char_ids).to(device), torch.from_numpy(lengths))
    return ArgsKwargs(args=args, kwargs={}), lambda d_inputs: None


def serialize_bilm(bilm: Optional[BiLM]) -> bytes:
    """Our model directory's files as one msgpack message (no pickle); empty bytes for "no biLM yet"."""
    if bilm is None:
        return b""
    return srsly.msgpack_dumps(model_files(bilm.config, bilm.state_arrays(), bilm.vocab, bilm.lexicon))


def deserialize_bilm(current: Optional[BiLM], data: bytes, device: torch.device) -> Optional[BiLM]:
    """The biLM of :func:`serialize_bilm`'s bytes, read from memory: errors name the file inside
    the biLM (``biLM/weights.hdf5``), never a temporary path; the component adds its folder."""
    if not data:
        return current
    try:
        files = srsly.msgpack_loads(data)
    except Exception as err:  # msgpack raises several kinds (and bare ValueErrors) for damaged bytes
        raise ValueError(f"{PACKED_NAME} is damaged: its files cannot be unpacked ({err})") from err
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, bytes) for k, v in files.items()):
        raise ValueError(f"{PACKED_NAME} is damaged: expected a map of file names to bytes")
    return BiLM.from_disk(packed_model(files, PACKED_NAME)).to(device).eval()
