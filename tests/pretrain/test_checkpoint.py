"""Checkpoints: plain data only, atomic, and they bring every random generator back; their
content: the keys earlier releases wrote, read back from files in that layout (written here
without CheckpointState), and a resume from them that ends where an uninterrupted run does."""

from __future__ import annotations

import pickle
import random
import shutil
from dataclasses import asdict

import numpy
import pytest
import torch

from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.checkpoint import (
    CheckpointState,
    Progress,
    capture_rng,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
)
from spacy_elmo.pretrain.data.batches import ShardState
from spacy_elmo.pretrain.errors import CheckpointError

from .conftest import tiny_settings


def draws(generator):
    return (
        random.random(),
        float(numpy.random.rand()),
        float(torch.rand(1)),
        float(torch.rand(1, generator=generator)),
    )


def test_random_states_come_back_exactly(tmp_path):
    generator = torch.Generator().manual_seed(5)
    random.seed(1), numpy.random.seed(2), torch.manual_seed(3)
    draws(generator)
    save_checkpoint(tmp_path / "c.pt", {"rng": [capture_rng(generator)]})
    expected = draws(generator)
    random.seed(9), numpy.random.seed(9), torch.manual_seed(9)
    other = torch.Generator().manual_seed(9)
    restore_rng(load_checkpoint(tmp_path / "c.pt")["rng"][0], other)
    assert draws(other) == expected


def test_model_and_optimizer_state_round_trip_with_weights_only(tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=1.0)
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    save_checkpoint(tmp_path / "c.pt", {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 7})
    loaded = load_checkpoint(tmp_path / "c.pt")
    assert loaded["step"] == 7
    restored = torch.optim.Adagrad(torch.nn.Linear(3, 2).parameters(), lr=0.2)
    restored.load_state_dict(loaded["optimizer"])
    torch.testing.assert_close(restored.state_dict()["state"][0]["sum"], optimizer.state_dict()["state"][0]["sum"])
    assert not list(tmp_path.glob("*.tmp"))


def test_arbitrary_pickled_objects_are_refused(tmp_path):
    class Sneaky:
        def __reduce__(self):
            return (print, ("this would run on load",))

    path = tmp_path / "c.pt"
    torch.save(
        {"format": "spacy-elmo-pretrain-checkpoint", "version": 1, "payload": Sneaky()}, path, pickle_module=pickle
    )
    with pytest.raises(CheckpointError, match="UnpicklingError") as caught:
        load_checkpoint(path)
    assert isinstance(caught.value.__cause__, pickle.UnpicklingError)


def test_other_files_are_not_taken_for_checkpoints(tmp_path):
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a spacy-elmo"):
        load_checkpoint(tmp_path / "other.pt")


# What every release so far has written, in this order (after "format" and "version").
LEGACY_KEYS = [
    "step",
    "tokens",
    "best_score",
    "since_eval",
    "elapsed_seconds",
    "decay_start_tokens",
    "n_shards",
    "shards",
    "rng",
    "model_config",
    "model",
    "optimizer",
]
# Keys later releases add after them: the training text's fingerprint, the vocabulary's.
NEW_KEYS = ["train_files", "vocab_sha256"]
# Keys that the first releases did not write yet.
LATER_KEYS = ("since_eval", "elapsed_seconds", "decay_start_tokens", *NEW_KEYS)
OPTIONS = {
    "training__checkpoint_every": 3,
    "training__eval_every": 3,
    "softmax__n_negatives": 16,
    "training__lstm_dropout": 0.2,
}


def run(corpus_dir, out, steps, resume=False):
    settings, config = tiny_settings(corpus_dir, training__max_steps=steps, **OPTIONS)
    return pretrain(settings, out, resume=resume, config_text=config.to_str(), progress=False)


@pytest.fixture(scope="module")
def runs(corpus_dir, tmp_path_factory):
    """A 3-step run (to resume) and the uninterrupted 6-step run it must end like."""
    folder = tmp_path_factory.mktemp("checkpoint_state")
    run(corpus_dir, folder / "half", 3)
    run(corpus_dir, folder / "straight", 6)
    return folder


def test_the_file_holds_the_keys_earlier_releases_wrote(runs):
    payload = load_checkpoint(runs / "half" / "checkpoint.pt")
    assert list(payload) == ["format", "version", *LEGACY_KEYS, *NEW_KEYS]
    assert set(payload["shards"]) == {"0"} and isinstance(payload["since_eval"], list)


def test_state_reads_back_what_it_wrote(runs, tmp_path):
    state = CheckpointState.load(runs / "half" / "checkpoint.pt")
    assert state.progress.step == 3 and state.n_shards == 1 and set(state.shards) == {0}
    state.save(tmp_path / "again.pt")
    again = CheckpointState.load(tmp_path / "again.pt")
    assert (
        again.progress == state.progress and again.shards == state.shards and again.model_config == state.model_config
    )
    for name, tensor in state.model.items():
        assert torch.equal(again.model[name], tensor), name


@pytest.mark.parametrize("dropped", [(), LATER_KEYS], ids=["legacy-layout", "without-later-keys"])
def test_a_checkpoint_in_the_legacy_layout_resumes_like_an_uninterrupted_run(corpus_dir, runs, tmp_path, dropped):
    out = tmp_path / "out"
    shutil.copytree(runs / "half", out)
    written = load_checkpoint(out / "checkpoint.pt")
    # Rewritten key by key as the earlier trainer's literal dict did, not through CheckpointState.
    save_checkpoint(out / "checkpoint.pt", {key: written[key] for key in LEGACY_KEYS if key not in dropped})
    if dropped:
        state = CheckpointState.load(out / "checkpoint.pt")
        assert state.progress == Progress(step=3, tokens=written["tokens"], best_score=written["best_score"])
    result = run(corpus_dir, out, 6, resume=True)
    assert result.step == 6
    straight = BiLM.from_disk(runs / "straight" / "model-last").state_dict()
    resumed = BiLM.from_disk(out / "model-last").state_dict()
    for name, tensor in straight.items():
        assert torch.equal(resumed[name], tensor), name


def test_shard_positions_keep_their_numbers(tmp_path):
    states = {0: ShardState(epoch=1, offset=10), 2: ShardState(file_index=1, batches_done=3)}
    state = CheckpointState(Progress(step=1), 3, states, [], {}, {}, {})
    state.save(tmp_path / "c.pt")
    assert load_checkpoint(tmp_path / "c.pt")["shards"] == {"0": asdict(states[0]), "2": asdict(states[2])}
    assert CheckpointState.load(tmp_path / "c.pt").shards == states


# ------------------------------------------------------------------ links at predictable names
def test_links_at_the_old_temporary_names_of_a_run_change_nothing(corpus_dir, tmp_path):
    out = tmp_path / "out"
    (out / "model-last").mkdir(parents=True)
    victims = {}
    for name in ("checkpoint.pt.tmp", "run.json.tmp", "vocab.json.tmp", "config.cfg", "model-last/weights.hdf5.tmp"):
        victim = tmp_path / f"victim-{len(victims)}.txt"
        victim.write_text("someone else's file\n")
        (out / name).symlink_to(victim)
        victims[name] = victim
    run(corpus_dir, out, 3)
    assert all(victim.read_text() == "someone else's file\n" for victim in victims.values())
    for name in ("checkpoint.pt", "run.json", "vocab.json", "config.cfg", "model-last/weights.hdf5"):
        assert (out / name).is_file() and not (out / name).is_symlink(), name
    assert load_checkpoint(out / "checkpoint.pt")["step"] == 3


def test_a_resume_removes_the_temporary_files_of_a_killed_save(corpus_dir, runs, tmp_path):
    out = tmp_path / "half"
    shutil.copytree(runs / "half", out)
    leftovers = [out / "checkpoint.pt.0123456789abcdef.tmp", out / "model-last" / "weights.hdf5.0123456789abcdef.tmp"]
    for path in leftovers:
        path.write_bytes(b"half a file: the save was killed")
    mine = out / "notes.0123456789.tmp"
    mine.write_text("not a name spacy-elmo writes")
    run(corpus_dir, out, 6, resume=True)
    assert not any(path.exists() for path in leftovers) and mine.exists()
