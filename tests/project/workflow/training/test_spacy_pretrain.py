"""spaCy's pretraining at a CPU-second budget (scripts/workflow/training/spacy_pretrain.py): the
budget comes from the biLM's CPU-time file; it stops between two updates once the process has
used the budget, says what it matched, and the recorded number of updates repeats the same
weights."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.workflow.process_times import ProcessTimes, write_cpu_record
from scripts.workflow.training import spacy_pretrain as sp

ROOT = Path(__file__).resolve().parents[4]
WORDS = "the a jury bank river said raised saw old new city court letter boat house rates Mary Atlanta".split()


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> Path:
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("text") / "train.txt"
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14))) + " ." for _ in range(300)]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def test_updates_are_counted_over_epochs():
    stop = sp.stop_at_budget(lambda items: ([item] for item in items), max_steps=5)
    assert len(list(stop(range(3)))) == 3
    with pytest.raises(sp.BudgetSpent) as spent:
        list(stop(range(3)))
    assert (spent.value.reason, spent.value.steps, spent.value.epochs) == ("max_steps", 5, 2)


def test_a_spent_cpu_budget_stops_before_the_next_batch_after_the_first():
    stop = sp.stop_at_budget(lambda items: ([item] for item in items), cpu_seconds=sp.process_cpu_seconds())
    batches = iter(stop(range(3)))
    assert next(batches) == [0]  # spent before it started, yet the run gets one update
    with pytest.raises(sp.BudgetSpent) as spent:
        next(batches)
    assert spent.value.reason == "cpu_seconds" and spent.value.steps == 1


def test_budget_comes_from_the_cpu_time_file(text, tmp_path, run_command, monkeypatch, capsys):
    """--cpu-seconds-from reads the file `timed` writes; without a CPU time there, the command
    stops before any work and names the file."""
    record = tmp_path / "bilm" / "cpu_time.json"
    calls = []
    monkeypatch.setattr(sp, "pretrain_within_budget", lambda *args, **kwargs: calls.append(kwargs))
    argv = ["spacy-pretrain", "configs/tagger_baseline.cfg", str(tmp_path / "out"), "--text", str(text),
            "--cpu-seconds-from", str(record)]
    with pytest.raises(SystemExit):
        run_command(argv)
    assert f"{record} not found" in " ".join(capsys.readouterr().out.split())
    write_cpu_record(record, ProcessTimes(0, 700.0, None), ["python", "-m", "x"])  # an OS without wait4
    with pytest.raises(SystemExit):
        run_command(argv)
    assert f"{record} holds no CPU time" in " ".join(capsys.readouterr().out.split())
    assert calls == []
    write_cpu_record(record, ProcessTimes(0, 700.0, 449.84), ["python", "-m", "x"])
    assert run_command(argv) == 0
    assert calls == [{"cpu_seconds": 449.8, "max_steps": None}]


def test_text_lines_become_jsonl(text, tmp_path):
    n = sp.write_text_jsonl(text, tmp_path / "t.jsonl")
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert n == len(records) == 300 and records[0]["text"] == text.read_text().splitlines()[0]


def test_cpu_budget_is_kept_and_its_updates_repeat_the_weights(text, tmp_path):
    budget = 8.0  # of the whole process: interpreter, imports, pipeline, then training
    out = tmp_path / "by-cpu"
    cmd = [sys.executable, "-m", "scripts", "--threads", "1", "spacy-pretrain", "configs/tagger_baseline.cfg", str(out), "--text", str(text), "--cpu-seconds", str(budget)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = json.loads((out / "run.json").read_text())
    assert run["stopped_by"] == "cpu_seconds" and run["cpu_seconds_budget"] == budget
    assert budget <= run["cpu_seconds"] < budget + 2.0  # stops within about one update of the budget
    assert run["steps"] >= 1 and run["words"] > 0 and run["epochs"] >= 1

    again = tmp_path / "by-steps"
    repeat = sp.pretrain_within_budget(ROOT / "configs/tagger_baseline.cfg", again, text, {}, max_steps=run["steps"])
    assert repeat.stopped_by == "max_steps" and repeat.steps == run["steps"] and repeat.words == run["words"]
    assert (again / sp.WEIGHTS).read_bytes() == (out / sp.WEIGHTS).read_bytes()

    before = (again / sp.WEIGHTS).stat().st_mtime_ns
    kept = sp.pretrain_within_budget(ROOT / "configs/tagger_baseline.cfg", again, text, {}, max_steps=run["steps"])
    assert kept == repeat and (again / sp.WEIGHTS).stat().st_mtime_ns == before  # finished: not run again
