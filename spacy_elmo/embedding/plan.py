"""The plan of a run: which windows go into which biLM batch, decided by lengths and settings only.

One policy for every caller: sentences of at most ``max_tokens`` tokens are batched by length
(longest first) under ``batch_tokens`` padded tokens and ``batch_sentences`` sentences per
batch; a longer sentence is read as windows (:mod:`.windows`) of its own, batched together
``batch_tokens // max_tokens`` at a time. A :class:`Group` is what finishes together: one batch
of short sentences, or every window of one long sentence. Because the plan depends on nothing
but the lengths, two processes (or a rerun) form the same groups: ``spacy-elmo embed`` writes
one crash-safe part per group and splits groups between shards, and the ``elmo`` component's
Thinc layer runs the same batches through the torch wrapper when it trains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Optional, Sequence

from .batching import length_sorted_batches
from .windows import Window, cut


@dataclass(frozen=True)
class Group:
    """``sentences`` (indices into the caller's list) and the batches of windows computing them.

    Empty sentences belong to a group but to no batch (their layers have no tokens).
    """

    sentences: tuple[int, ...]
    batches: tuple[tuple[Window, ...], ...]

    def only(self, keep: Container[int]) -> "Group":
        """The same group without the sentences not in ``keep`` (e.g. those already stored)."""
        batches = (tuple(w for w in batch if w.sentence in keep) for batch in self.batches)
        return Group(tuple(i for i in self.sentences if i in keep), tuple(b for b in batches if b))


def plan_groups(
    lengths: Sequence[int], max_tokens: int, batch_tokens: Optional[int], batch_sentences: int
) -> list[Group]:
    """The groups for sentences of ``lengths`` tokens: short sentences' batches (longest first),
    then one group per sentence longer than ``max_tokens``, in input order.

    ``batch_tokens=None``: no budget of padded tokens (a long sentence's windows in one batch).
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    groups = []
    short = [i for i, n in enumerate(lengths) if n <= max_tokens]
    for batch in length_sorted_batches([lengths[i] for i in short], batch_sentences, batch_tokens):
        members = tuple(short[j] for j in batch)
        windows = tuple(w for i in members for w in cut(i, lengths[i], max_tokens))
        groups.append(Group(members, (windows,) if windows else ()))
    for i, n in enumerate(lengths):
        if n > max_tokens:
            windows = cut(i, n, max_tokens)
            per_batch = len(windows) if batch_tokens is None else max(1, batch_tokens // max_tokens)
            batches = tuple(tuple(windows[k : k + per_batch]) for k in range(0, len(windows), per_batch))
            groups.append(Group((i,), batches))
    return groups
