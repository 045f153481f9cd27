"""One path in, a :class:`~spacy_elmo.nn.BiLM` out: the one loader of the ``elmo`` component,
``spacy-elmo embed`` and ``--init-from``."""

from __future__ import annotations

from pathlib import Path
from typing import Union

from .formats.elmoformanylangs import is_elmoformanylangs_dir
from .formats.resolve import MESSAGES, Messages, find_weights
from .nn.bilm import BiLM

PathLike = Union[str, Path]


def load_bilm(path: PathLike, *, messages: Messages = MESSAGES, without_softmax: bool = False) -> BiLM:
    """``without_softmax`` drops the softmax and vocabulary (only pretraining uses them), in eval mode."""
    path = Path(path).expanduser()
    allennlp_files = find_weights(path, messages=messages)
    if allennlp_files is not None:
        bilm = BiLM.from_allennlp(*allennlp_files)
    elif is_elmoformanylangs_dir(path):
        bilm = BiLM.from_elmoformanylangs(path)
    else:
        bilm = BiLM.from_disk(path)
    return _drop_softmax(bilm) if without_softmax else bilm


def _drop_softmax(bilm: BiLM) -> BiLM:
    if bilm.softmax is None:
        return bilm.eval()
    stripped = BiLM(bilm.config.replace(vocab_size=0), lexicon=bilm.lexicon)
    state = {name: t for name, t in bilm.state_dict().items() if not name.startswith("softmax.")}
    stripped.load_state_dict(state)
    stripped.source = bilm.source
    return stripped.to(device=bilm.device, dtype=bilm.dtype).eval()
