"""The bidirectional language model: a shared char encoder and two separate LSTM stacks."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy
import torch
from torch import nn
from torch.nn import functional as F

from ..config import BYTE_ENCODING, BiLMConfig, Lexicon
from ..formats.allennlp import read_allennlp, write_allennlp
from ..formats.elmoformanylangs import read_elmoformanylangs
from ..formats.native import ModelSource, read_lexicon, read_model_config, read_model_weights, write_model_dir
from .derived_cache import DerivedTensors, HeldElsewhere, parameter_versions
from .lstm import LstmStack, active_rows, run_time_major
from .precision import DEFAULT_PRECISION, running_precision
from .words.char_cnn import CharEncoder
from .words.code_points import CodePointEncoding
from .words.word_batch import BYTES, TokenEncoding, distinct_rows

PathLike = Union[str, Path]

# A process forked after torch ran its OpenMP pool (``nlp.pipe(n_process=2)`` after one ``nlp``
# call, say) hangs at its first parallel op: GNU OpenMP is not fork-safe. Forked children run
# torch on one thread, as PyTorch's own DataLoader workers do.
os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))


@dataclass
class BiLMStates:
    """Everything the biLM computes for a batch framed by BOS/EOS (pretraining needs it all).

    ``token_vectors`` is ``(batch, time, P)``; ``forward``/``backward`` hold one
    ``(batch, time, P)`` tensor per LSTM layer, in the original left-to-right order.
    ``lengths`` counts BOS and EOS.
    """

    token_vectors: torch.Tensor
    forward: list[torch.Tensor]
    backward: list[torch.Tensor]
    lengths: torch.Tensor

    def layers(self) -> torch.Tensor:
        """ELMo's layers ``(L+1, batch, time, 2P)``: ``[x; x]``, then ``[forward_j; backward_j]``."""
        layers = [torch.cat([self.token_vectors, self.token_vectors], dim=-1)]
        layers += [torch.cat(pair, dim=-1) for pair in zip(self.forward, self.backward)]
        return torch.stack(layers)


def reverse_padded(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row's first ``length`` steps along dim 1, leaving the padding in place."""
    steps = values.shape[1]
    positions = torch.arange(steps, device=values.device)[None, :]
    lengths = lengths.to(values.device)[:, None]
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    index = index.reshape(*index.shape, *([1] * (values.dim() - 2))).expand_as(values)
    return values.gather(1, index)


class BiLM(nn.Module):
    """ELMo's biLM. The forward stack at position k sees only tokens <= k, the backward stack
    only tokens >= k; they share the char encoder and the (optional) output softmax.

    :meth:`contextualize` is the one way from char ids to layers: embedding, training and
    pretraining all call it. Batching sentences, windows and the word cache are
    :mod:`spacy_elmo.embedding`'s.
    """

    def __init__(
        self, config: BiLMConfig, vocab: Optional[Sequence[str]] = None, lexicon: Optional[Lexicon] = None
    ) -> None:
        super().__init__()
        if vocab is not None and config.vocab_size not in (0, len(vocab)):
            raise ValueError(f"vocab has {len(vocab)} words but config.vocab_size is {config.vocab_size}")
        if vocab is not None and not config.vocab_size:
            config = config.replace(vocab_size=len(vocab))
        self.config = config
        self.vocab: Optional[list[str]] = list(vocab) if vocab is not None else None
        self.lexicon = lexicon
        self.encoding = _token_encoding(config, lexicon)
        self.char_encoder = CharEncoder(config)
        make_stack = functools.partial(
            LstmStack,
            input_dim=config.projection_dim,
            cell_dim=config.lstm_dim,
            projection_dim=config.projection_dim,
            n_layers=config.n_layers,
            cell_clip=config.cell_clip,
            proj_clip=config.proj_clip,
            use_skip_connections=config.use_skip_connections,
            forget_bias=config.forget_bias,
        )
        self.forward_lstm = make_stack()
        self.backward_lstm = make_stack()
        self.softmax: Optional[nn.Linear] = (
            nn.Linear(config.projection_dim, config.vocab_size) if config.vocab_size else None
        )
        self._held_elsewhere = HeldElsewhere()  # caches of others derived from these weights
        self._weights_generation = 0  # bumped by weights_changed(): part of every version

    # ----------------------------------------------------------------- derived data
    def char_encoder_version(self) -> Optional[tuple]:
        """What layer-0 vectors depend on: the char encoder's weights (identity and version
        counter of each). None when changes cannot be detected (then nothing derived may be kept)."""
        params = parameter_versions(list(self.char_encoder.parameters()))
        return None if params is None else (params, self._weights_generation)

    def weights_version(self) -> Optional[tuple]:
        """What every layer's output depends on: identity and version counter of every weight
        and buffer; it changes whenever one of them does (not a content hash). None when changes
        cannot be detected."""
        versions = parameter_versions(list(self.parameters()) + list(self.buffers()))
        return None if versions is None else (id(self), versions, self._weights_generation)

    def register_derived_cache(self, cache: object) -> None:
        """Have ``cache`` (anything with a ``clear()`` method, e.g. an embedder's word cache)
        cleared whenever this model frees what it derived from its weights: on ``.to()`` and
        the like and on :meth:`weights_changed`. Held weakly: this keeps nothing alive."""
        self._held_elsewhere.add(cache)

    def clear_inference_caches(self) -> None:
        """Free what inference derives from the weights (converted LSTM weights, char-CNN tables,
        the caches registered by :meth:`register_derived_cache`); all of it is rebuilt on demand.
        Called on ``.to()`` and the like, so that old copies of the weights are not kept alive."""
        for module in self.modules():
            for value in module.__dict__.values():
                caches = value.values() if isinstance(value, dict) else [value]
                for cache in caches:
                    if isinstance(cache, DerivedTensors):
                        cache.clear()
        held = getattr(self, "_held_elsewhere", None)
        if held is not None:
            held.clear()

    def weights_changed(self) -> None:
        """Tell the model its weights were edited where torch cannot see it (through ``param.data`` or
        a numpy view), so that nothing derived from the old values is served again; changes through
        the parameters themselves bump torch's version counters and need no call."""
        self._weights_generation += 1
        self.clear_inference_caches()

    def _apply(self, fn, *args, **kwargs):  # type: ignore[override]
        self.clear_inference_caches()
        return super()._apply(fn, *args, **kwargs)

    # ----------------------------------------------------------------- computation
    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def token_ids(self, words: Sequence[str]) -> numpy.ndarray:
        """The id rows ``(n_words, config.ids_per_token)`` of ``words`` in this model's encoding
        (UTF-8 bytes, or code points and word ids); sentences are framed by ``encoding.boundaries``."""
        return self.encoding.ids(words)

    def encode_words(self, ids: torch.Tensor, precision: str = DEFAULT_PRECISION) -> torch.Tensor:
        """Layer-0 vectors ``(n, P)`` for id rows ``(n, ids_per_token)`` (from :meth:`token_ids`),
        in the model's dtype; ``precision`` must be one that runs here."""
        return self.char_encoder(ids, precision).to(self.dtype)

    def contextualize(
        self,
        char_ids: torch.Tensor,
        lengths: torch.Tensor,
        *,
        precision: str = DEFAULT_PRECISION,
        final_boundary: bool = True,
        token_dropout: float = 0.0,
        layer_dropout: float = 0.0,
        word_vectors: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    ) -> BiLMStates:
        """Every state of the biLM for ids ``(batch, time, ids_per_token)`` framed by BOS/EOS.

        ``precision``: float32 runs where the device cannot run it (said once). The char encoder runs
        once per distinct id row, or ``word_vectors(unique_ids)`` serves them (a word cache).
        ``final_boundary=False`` skips each direction's last step, which only the boundary positions
        read (left zero). ``token_dropout`` drops layer-0 vectors per position, ``layer_dropout`` the
        inputs of the LSTM layers above the first."""
        training = torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters())
        precision = running_precision(precision, char_ids.device, training)
        lengths = lengths.to(torch.long).cpu()
        batch, steps, _ = char_ids.shape
        inside = (torch.arange(steps)[None, :] < lengths[:, None]).to(char_ids.device)
        unique, inverse = distinct_rows(char_ids[inside])
        vectors = word_vectors(unique) if word_vectors is not None else self.encode_words(unique, precision)
        token_vectors = vectors.new_zeros(batch, steps, vectors.shape[-1]).index_put((inside,), vectors[inverse])
        if token_dropout:
            token_vectors = F.dropout(token_vectors, token_dropout)

        order = torch.argsort(lengths, descending=True, stable=True)
        restore = torch.argsort(order).to(char_ids.device)
        sorted_lengths = lengths[order]
        sorted_vectors = token_vectors[order.to(char_ids.device)]
        both = torch.stack([sorted_vectors, reverse_padded(sorted_vectors, sorted_lengths)]).transpose(1, 2)
        run_lengths = sorted_lengths if final_boundary else (sorted_lengths - 1).clamp(min=0)
        layers = run_time_major(
            [self.forward_lstm, self.backward_lstm],
            both.contiguous(),
            active_rows(run_lengths.tolist(), steps),
            precision=precision,
            layer_dropout=layer_dropout,
        )
        forward = [layer[0].transpose(0, 1)[restore] for layer in layers]
        backward = [reverse_padded(layer[1].transpose(0, 1), sorted_lengths)[restore] for layer in layers]
        return BiLMStates(token_vectors, forward, backward, lengths)

    def forward(
        self, char_ids: torch.Tensor, lengths: torch.Tensor, precision: str = DEFAULT_PRECISION
    ) -> torch.Tensor:
        """All layers ``(L+1, batch, time-2, 2P)`` for ids framed by BOS/EOS, boundaries dropped.

        Layer 0 is ``[x; x]``, layer j is ``[forward_j; backward_j]``; padding is zero.
        """
        states = self.contextualize(char_ids, lengths, precision=precision, final_boundary=False)
        return _drop_boundaries(states.layers(), states.lengths)

    # ----------------------------------------------------------------- persistence
    # :mod:`spacy_elmo.formats` reads and writes files as a config plus numpy arrays named as in
    # ``state_dict()`` and sits below this module; the methods below turn those arrays into a
    # model and back.
    #: Where the weights were read from (the loaders set it), so that errors about them name it.
    source: Optional[str] = None

    @classmethod
    def state_shapes(
        cls, config: BiLMConfig, vocab: Optional[Sequence[str]] = None, lexicon: Optional[Lexicon] = None
    ) -> dict[str, tuple[int, ...]]:
        """Names and shapes of the state dict of ``cls(config, vocab, lexicon)``, allocating
        nothing (the model is built on the meta device): what a weight file must hold, checked
        before reading."""
        with torch.device("meta"):
            skeleton = cls(config, vocab=vocab, lexicon=lexicon)
        return {name: tuple(t.shape) for name, t in skeleton.state_dict().items()}

    @classmethod
    def from_state_arrays(
        cls,
        config: BiLMConfig,
        arrays: Mapping[str, numpy.ndarray],
        vocab: Optional[Sequence[str]] = None,
        lexicon: Optional[Lexicon] = None,
        source: Optional[str] = None,
    ) -> "BiLM":
        """A model in eval mode with the weights ``arrays`` (every state-dict entry, by name)."""
        model = cls(config, vocab=vocab, lexicon=lexicon)
        model.load_state_dict({name: torch.from_numpy(array) for name, array in arrays.items()})
        model.source = source
        return model.eval()

    def state_arrays(self, dtype: Optional[torch.dtype] = None) -> dict[str, numpy.ndarray]:
        """The state dict as numpy arrays on the CPU, in ``dtype`` (default: as they are)."""
        state = self.state_dict()
        return {name: t.detach().to(device="cpu", dtype=dtype).numpy() for name, t in state.items()}

    @classmethod
    def from_allennlp(cls, options_file: PathLike, weight_file: PathLike) -> "BiLM":
        """Load bilm-tf / AllenNLP ``options.json`` + weights ``.hdf5``."""
        config, arrays = read_allennlp(options_file, weight_file)
        return cls.from_state_arrays(config, arrays, source=str(weight_file))

    def to_allennlp(self, options_file: PathLike, weight_file: PathLike) -> None:
        """Write ``options.json`` + ``.hdf5`` in bilm-tf's layout (AllenNLP can read them)."""
        write_allennlp(options_file, weight_file, self.config, self.state_arrays(torch.float32))

    @classmethod
    def from_elmoformanylangs(cls, path: PathLike) -> "BiLM":
        """Load an ELMoForManyLangs model directory (``config.json``, its model config,
        ``char.dic``, ``word.dic``, ``token_embedder.pkl``, ``encoder.pkl``); its layers equal
        those of their own code with the states reset for every call."""
        config, arrays, lexicon = read_elmoformanylangs(path)
        return cls.from_state_arrays(config, arrays, lexicon=lexicon, source=str(path))

    def to_disk(self, path: PathLike) -> None:
        """Write our own model directory (config, weights, vocabulary, dictionaries)."""
        write_model_dir(path, self.config, self.state_arrays(), self.vocab, self.lexicon)

    @classmethod
    def from_disk(cls, path: Union[PathLike, ModelSource]) -> "BiLM":
        """Load a model directory written by :meth:`to_disk` (or by pretraining), or its files
        packed into bytes (:func:`~spacy_elmo.formats.native.packed_model`)."""
        config, vocab = read_model_config(path)
        lexicon = read_lexicon(path, config)
        arrays = read_model_weights(path, cls.state_shapes(config, vocab, lexicon))
        source = path.where if isinstance(path, ModelSource) else str(path)
        return cls.from_state_arrays(config, arrays, vocab, lexicon, source)


def _token_encoding(config: BiLMConfig, lexicon: Optional[Lexicon]) -> TokenEncoding:
    """The byte encoding, or the code-point one of ``lexicon`` (which must fit ``config``)."""
    if config.char_encoding == BYTE_ENCODING:
        if lexicon is not None:
            raise ValueError("a byte-encoded biLM has no char dictionary (lexicon)")
        return BYTES
    if lexicon is None:
        raise ValueError(
            f"a {config.char_encoding} biLM needs its char dictionary (a Lexicon): load it with its files "
            "(BiLM.from_elmoformanylangs, BiLM.from_disk) rather than from sizes alone"
        )
    problems = lexicon.problems(config)
    if problems:
        raise ValueError("The dictionaries do not fit the biLM config: " + "; ".join(problems))
    return CodePointEncoding(config, lexicon)


def _drop_boundaries(layers: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Remove BOS (position 0) and each row's EOS (position length-1); zero what is left over."""
    inner = layers[:, :, 1:-1] if layers.shape[2] >= 2 else layers[:, :, :0]
    steps = inner.shape[2]
    keep = torch.arange(steps)[None, :] < (lengths - 2)[:, None]
    return inner * keep.to(device=inner.device, dtype=inner.dtype)[None, :, :, None]
