"""--resume: a damaged checkpoint or a full disk is one clear line naming the file; changed
settings are refused or reported; a run already at max_steps re-exports model-last."""

from __future__ import annotations

import json
import logging
import shutil
import sys

import pytest
import torch

from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint, save_checkpoint
from spacy_elmo.pretrain.errors import CheckpointError, CheckpointMismatchError, ResumeSettingsError

from ..conftest import full_disk_for
from .conftest import TINY_CONFIG, tiny_settings

STEPS = {"training__max_steps": 6, "training__checkpoint_every": 3, "training__eval_every": 3}


def short_run(corpus_dir, out, **extra):
    settings, config = tiny_settings(corpus_dir, **{**STEPS, **extra})
    pretrain(settings, out, config_text=config.to_str(), progress=False)
    return settings


@pytest.fixture(scope="module")
def finished_run(corpus_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "out"
    short_run(corpus_dir, out)
    return out


def copy_run(finished_run, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(finished_run, out)
    return out


def test_an_empty_checkpoint_is_one_clear_error(corpus_dir, finished_run, tmp_path):
    out = copy_run(finished_run, tmp_path)
    (out / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"checkpoint.pt is empty \(0 bytes\)"):
        load_checkpoint(out / "checkpoint.pt")
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    result = CliRunner().invoke(
        app,
        [
            "pretrain",
            str(TINY_CONFIG),
            str(out),
            "--resume",
            "--quiet",
            "--paths.train",
            str(corpus_dir / "train.txt"),
            "--paths.dev",
            str(corpus_dir / "dev.txt"),
            "--training.max_steps",
            "6",
            "--training.checkpoint_every",
            "3",
            "--training.eval_every",
            "3",
        ],
    )
    assert result.exit_code == 1
    assert "checkpoint.pt is empty" in result.output and "Aborted" not in result.output


def test_a_truncated_checkpoint_names_the_file(finished_run, tmp_path):
    out = copy_run(finished_run, tmp_path)
    path = out / "checkpoint.pt"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="checkpoint.pt cannot be read as a checkpoint"):
        load_checkpoint(path)


def test_a_full_disk_while_saving_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"step": 1, "weights": torch.ones(3)})

    def no_space(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 64 vs 0\nmore torch detail")

    monkeypatch.setattr(torch, "save", no_space)
    with pytest.raises(CheckpointError) as caught:
        save_checkpoint(path, {"step": 2, "weights": torch.zeros(3)})
    message = str(caught.value)
    assert f"Could not write the checkpoint {path}:" in message and "is unchanged" in message and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]
    assert load_checkpoint(path)["step"] == 1


def test_a_real_full_disk_while_saving(tmp_path):
    """ENOSPC from the OS (a 64 kB tmpfs; skipped where it cannot be mounted)."""
    import subprocess

    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespaces here")
    script = (
        "import sys, torch\n"
        "from spacy_elmo.pretrain.errors import CheckpointError\n"
        "from spacy_elmo.pretrain.checkpoint import save_checkpoint\n"
        "try:\n"
        "    save_checkpoint(sys.argv[1] + '/checkpoint.pt', {'w': torch.zeros(100000)})\n"
        "except CheckpointError as err:\n"
        "    print('ERROR', err)\n"
    )
    mount = tmp_path / "mnt"
    mount.mkdir()
    shell = f'mount -t tmpfs -o size=64k tmpfs {mount} && {sys.executable} -c "$0" {mount}'
    result = subprocess.run([unshare, "-rm", "sh", "-c", shell, script], capture_output=True, text=True, timeout=120)
    if "mount:" in result.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    assert result.stdout.startswith("ERROR Could not write the checkpoint"), result.stdout + result.stderr
    assert "No space left on device" in result.stdout and result.stdout.count("\n") == 1


def test_changed_model_sizes_are_refused(corpus_dir, finished_run, tmp_path):
    out = copy_run(finished_run, tmp_path)
    settings, _ = tiny_settings(corpus_dir, **STEPS, model__lstm_dim=48)
    with pytest.raises(ResumeSettingsError, match=r"model.lstm_dim: .* -> 48"):
        pretrain(settings, out, resume=True, progress=False)


def test_changed_seed_is_reported_as_ignored_and_batch_size_as_applied(corpus_dir, finished_run, tmp_path, caplog):
    out = copy_run(finished_run, tmp_path)
    settings, _ = tiny_settings(
        corpus_dir, **{**STEPS, "training__max_steps": 8}, system__seed=5, training__batch_tokens=1000
    )
    with caplog.at_level(logging.WARNING, logger="spacy_elmo.pretrain"):
        pretrain(settings, out, resume=True, progress=False)
    assert "--resume ignores the changed system.seed (0 -> 5)" in caplog.text
    assert "training.batch_tokens changed" in caplog.text and "applies from step 6 on" in caplog.text
    assert "max_steps" not in caplog.text


def test_resume_at_max_steps_rewrites_model_last_from_the_checkpoint(corpus_dir, finished_run, tmp_path):
    """A kill between the final checkpoint and the export leaves an old model-last behind."""
    out = copy_run(finished_run, tmp_path)
    final = load_checkpoint(out / "checkpoint.pt")
    assert final["step"] == 6
    stale = BiLM.from_disk(out / "model-last")
    with torch.no_grad():
        for param in stale.parameters():
            param.zero_()
    stale.to_disk(out / "model-last")
    settings, _ = tiny_settings(corpus_dir, **STEPS)
    result = pretrain(settings, out, resume=True, progress=False)
    assert result.step == 6
    exported = BiLM.from_disk(out / "model-last").state_dict()
    for name, tensor in final["model"].items():
        if name in exported:
            assert torch.equal(exported[name], tensor), name


def test_the_torch_minimum_has_no_known_weights_only_hole():
    """torch.load(weights_only=True) could run code before 2.6 and corrupt memory before 2.10."""
    import re
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parents[2]
    requirements = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    (torch_requirement,) = [r for r in requirements if r.startswith("torch")]
    minimum = tuple(int(part) for part in re.search(r">=\s*([\d.]+)", torch_requirement).group(1).split("."))
    assert minimum >= (2, 10)
    assert "CVE-2026-24747" in (root / "docs" / "reliability.md").read_text()


def test_a_rewritten_training_text_is_refused_on_resume(corpus_dir, tmp_path, caplog):
    """Same path, other content: the saved data positions would point into another text."""
    train = tmp_path / "train.txt"
    shutil.copy(corpus_dir / "train.txt", train)
    out = tmp_path / "out"
    short_run(corpus_dir, out, paths__train=str(train))
    original = train.read_bytes()
    lines = original.decode("utf8").splitlines(keepends=True)
    train.write_bytes("".join(reversed(lines)).encode("utf8"))  # same size, other content
    settings, _ = tiny_settings(corpus_dir, **{**STEPS, "training__max_steps": 8}, paths__train=str(train))
    with pytest.raises(
        ResumeSettingsError,
        match=r"the training text changed since the run began \(train.txt has other "
        r"content \(same size, another SHA-256\)\)",
    ):
        pretrain(settings, out, resume=True, progress=False)
    train.write_bytes(original[: len(original) // 2])
    with pytest.raises(ResumeSettingsError, match=r"train.txt changed size"):
        pretrain(settings, out, resume=True, progress=False)
    train.write_bytes(original)  # the text the run began with: the resume goes on
    with caplog.at_level(logging.WARNING, logger="spacy_elmo.pretrain"):
        assert pretrain(settings, out, resume=True, progress=False).step == 8
    assert "fingerprint" not in caplog.text


def test_a_checkpoint_without_a_fingerprint_resumes_with_a_warning(corpus_dir, finished_run, tmp_path, caplog):
    out = copy_run(finished_run, tmp_path)
    payload = load_checkpoint(out / "checkpoint.pt")
    assert isinstance(payload.pop("train_files"), list)
    save_checkpoint(out / "checkpoint.pt", {k: v for k, v in payload.items() if k not in ("format", "version")})
    settings, _ = tiny_settings(corpus_dir, **STEPS)
    with caplog.at_level(logging.WARNING, logger="spacy_elmo.pretrain"):
        pretrain(settings, out, resume=True, progress=False)
    assert "records no fingerprint of the training text" in caplog.text


def test_a_full_disk_while_writing_model_best_is_one_line(corpus_dir, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    out = tmp_path / "out"
    with full_disk_for(monkeypatch, "model-best/weights.hdf5.tmp"):
        result = CliRunner().invoke(
            app,
            [
                "pretrain",
                str(TINY_CONFIG),
                str(out),
                "--quiet",
                "--paths.train",
                str(corpus_dir / "train.txt"),
                "--paths.dev",
                str(corpus_dir / "dev.txt"),
                "--training.max_steps",
                "3",
                "--training.eval_every",
                "3",
            ],
        )
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: Could not write the model {out / 'model-best' / 'weights.hdf5'} (No space left on device); "
        f"{out / 'model-best'} keeps its previous files: free some space and run the same command again"
    )  # the first model-best comes before the first checkpoint: there is nothing to --resume yet
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


# ------------------------------------------------------------------ another run's checkpoint
@pytest.fixture(scope="module")
def bigger_run(corpus_dir, tmp_path_factory):
    """A run of the same text with twice the LSTM and a smaller vocabulary: its checkpoint is another run's."""
    out = tmp_path_factory.mktemp("bigger") / "out"
    short_run(corpus_dir, out, model__lstm_dim=128)
    return out


def test_a_bigger_models_checkpoint_is_refused_naming_the_files(corpus_dir, finished_run, bigger_run, tmp_path):
    out = copy_run(finished_run, tmp_path)
    shutil.copy(bigger_run / "checkpoint.pt", out / "checkpoint.pt")
    settings, _ = tiny_settings(corpus_dir, **{**STEPS, "training__max_steps": 9})
    with pytest.raises(CheckpointMismatchError) as caught:
        pretrain(settings, out, resume=True, progress=False)
    message = str(caught.value)
    assert message.startswith(f"{out / 'checkpoint.pt'} is another run's checkpoint: its model has lstm_dim 128 where ")
    assert f"{out / 'config.cfg'} [model] has 64" in message and "\n" not in message
    assert BiLM.from_disk(out / "model-last").config.lstm_dim == 64  # nothing was trained or written


def test_a_run_begun_from_other_weights_compares_with_them(corpus_dir, finished_run, bigger_run, tmp_path):
    """--init-from decides the sizes: another run's checkpoint is named against that model."""
    start = finished_run / "model-last"
    out = tmp_path / "adapted"
    short_run(corpus_dir, out, paths__init_from=str(start))
    shutil.copy(bigger_run / "checkpoint.pt", out / "checkpoint.pt")
    settings, _ = tiny_settings(corpus_dir, **{**STEPS, "training__max_steps": 9, "paths__init_from": str(start)})
    with pytest.raises(CheckpointMismatchError) as caught:
        pretrain(settings, out, resume=True, progress=False)
    assert f"its model has lstm_dim 128 where the --init-from model {start} has 64" in str(caught.value)


def test_another_vocabulary_size_is_refused_not_a_size_mismatch_traceback(corpus_dir, finished_run, tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    other = tmp_path / "other"
    short_run(corpus_dir, other, vocab__size=20)
    out = copy_run(finished_run, tmp_path)
    shutil.copy(other / "checkpoint.pt", out / "checkpoint.pt")
    vocab_size = len(json.loads((out / "vocab.json").read_text(encoding="utf8")))
    args = [
        "pretrain",
        str(TINY_CONFIG),
        str(out),
        "--resume",
        "--quiet",
        "--paths.train",
        str(corpus_dir / "train.txt"),
    ]
    args += [
        "--paths.dev",
        str(corpus_dir / "dev.txt"),
        "--training.max_steps",
        "9",
        "--training.checkpoint_every",
        "3",
    ]
    result = CliRunner().invoke(app, [*args, "--training.eval_every", "3"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)  # handled: no torch error
    assert "size mismatch" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {out / 'checkpoint.pt'} is another run's checkpoint: its model has a softmax over 20 words "
        f"where {out / 'vocab.json'} has {vocab_size:,}. Put this run's own checkpoint back, or resume that one "
        "in its own folder"
    )


def test_other_words_of_the_same_number_are_refused(corpus_dir, finished_run, tmp_path):
    out = copy_run(finished_run, tmp_path)
    words = json.loads((out / "vocab.json").read_text(encoding="utf8"))
    words[-1], words[-2] = words[-2], words[-1]  # another run's vocabulary: the same words in another order
    (out / "vocab.json").write_text(json.dumps(words), encoding="utf8")
    settings, _ = tiny_settings(corpus_dir, **{**STEPS, "training__max_steps": 9})
    with pytest.raises(CheckpointMismatchError, match=r"its model has other words than .*vocab\.json"):
        pretrain(settings, out, resume=True, progress=False)


def test_a_checkpoint_whose_weights_do_not_fit_its_own_config_is_one_error(corpus_dir, finished_run, tmp_path):
    out = copy_run(finished_run, tmp_path)
    payload = load_checkpoint(out / "checkpoint.pt")
    name = next(key for key in payload["model"] if key.endswith("weight"))
    payload["model"][name] = torch.zeros(3, 3)
    save_checkpoint(out / "checkpoint.pt", {k: v for k, v in payload.items() if k not in ("format", "version")})
    settings, _ = tiny_settings(corpus_dir, **{**STEPS, "training__max_steps": 9})
    with pytest.raises(
        CheckpointMismatchError, match=r"checkpoint\.pt: its weights cannot be restored \(size mismatch for "
    ):
        pretrain(settings, out, resume=True, progress=False)
