"""The price of a pipeline (scripts/workflow/evaluation/pipeline_price.py, settings_price.py and
the ``price`` / ``measure-price`` commands): measured in a fresh process on a tiny ELMo NER
pipeline and a tiny baseline, it counts the test documents' words, and its numbers are positive
and finite."""

from __future__ import annotations

import inspect
import json
import math

import pytest

from scripts.workflow.evaluation import pipeline_price, settings_price


def test_measurement_counts_the_test_words_and_is_positive(pipelines):
    model = pipelines["training"] / "ner-elmo" / "seed0" / "model-best"
    price = pipeline_price.measure_in_subprocess(model, pipelines["test"], max_docs=5)
    assert price["docs"] == 5
    assert price["words"] == sum(len(doc) for doc in pipelines["docs"][:5])
    assert price["components"] == ["elmo", "ner"] and price["torch_threads"] == 1
    for key in ("cpu_seconds", "words_per_cpu_second", "peak_memory_mib", "size_mib"):
        assert 0 < price[key] < math.inf, key
    assert price["words_per_cpu_second"] == pytest.approx(price["words"] / price["cpu_seconds"])
    files = [p for p in model.rglob("*") if p.is_file()]
    assert price["size_mib"] == pytest.approx(sum(p.stat().st_size for p in files) / 2**20)
    # the stored biLM is part of the size: the pipeline is bigger than its ner component alone
    assert price["size_mib"] > sum(p.stat().st_size for p in (model / "ner").rglob("*") if p.is_file()) / 2**20
    # a whole process with torch and spaCy loaded: tens of MiB at least, less than the machine
    assert 50 < price["peak_memory_mib"] < 64 * 1024


def test_more_docs_than_the_file_holds_runs_them_all(pipelines):
    model = pipelines["training"] / "ner-baseline" / "model-best"
    price = pipeline_price.measure_in_subprocess(model, pipelines["test"])
    assert price["docs"] == len(pipelines["docs"])
    assert price["words"] == sum(len(doc) for doc in pipelines["docs"])
    assert price["components"] == ["ner"]


def test_bad_inputs_name_the_file(pipelines, tmp_path):
    model = pipelines["training"] / "ner-baseline" / "model-best"
    (tmp_path / "broken.spacy").write_bytes(b"not a docbin")
    with pytest.raises(ValueError, match="broken.spacy: not a readable .spacy file"):
        pipeline_price.measure_in_subprocess(model, tmp_path / "broken.spacy")
    with pytest.raises(ValueError, match="not a spaCy pipeline folder"):
        pipeline_price.measure_in_subprocess(tmp_path, pipelines["test"])
    with pytest.raises(ValueError, match="--precision needs an 'elmo' component"):
        pipeline_price.measure_in_subprocess(model, pipelines["test"], precision="bfloat16")


def test_price_step_measures_seed0_per_setting_and_skips_current(pipelines, run_command, capsys):
    prices = pipelines["base"] / "prices"
    args = ["price", str(pipelines["training"]), str(prices), "--ner-test", str(pipelines["test"])]
    args += ["--setting", "ner-elmo", "--setting", "ner-baseline", "--max-docs", "4"]
    assert run_command(args) == 0
    elmo = json.loads((prices / "ner-elmo.json").read_text())
    baseline = json.loads((prices / "ner-baseline.json").read_text())
    assert elmo["seed"] == 0 and elmo["model"].endswith("seed0/model-best") and elmo["setting"] == "ner-elmo"
    assert baseline["seed"] is None and baseline["docs"] == 4
    assert elmo["words"] == baseline["words"] == sum(len(doc) for doc in pipelines["docs"][:4])
    assert "words per CPU second" in capsys.readouterr().out
    assert run_command(args) == 0  # nothing changed: not measured again
    assert capsys.readouterr().out.count("measured earlier") == 2
    assert json.loads((prices / "ner-elmo.json").read_text()) == elmo
    with pytest.raises(SystemExit):  # no seed 3: an error naming it
        run_command(args + ["--seed", "3"])
    assert "no seed3/model-best" in capsys.readouterr().out


def test_pipeline_of_seed(pipelines):
    training = pipelines["training"]
    assert settings_price.pipeline_of_seed(training, "ner-elmo", 1) == (
        training / "ner-elmo" / "seed1" / "model-best",
        1,
    )
    assert settings_price.pipeline_of_seed(training, "ner-baseline", 0) == (
        training / "ner-baseline" / "model-best",
        None,
    )


def test_measure_price_command_prints_and_writes_json(pipelines, run_command, capsys, tmp_path):
    model = pipelines["training"] / "ner-baseline" / "model-best"
    args = ["measure-price", str(model), str(pipelines["test"]), "--max-docs", "3"]
    assert run_command(args + ["--output", str(tmp_path / "out.json")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "out.json").read_text()) and printed["docs"] == 3


def test_precision_override_reaches_the_elmo_component(pipelines):
    """--precision sets the elmo component's precision for the measurement (once the component
    has that setting; skipped before)."""
    from spacy_elmo.pipeline.elmo import make_elmo

    if "precision" not in inspect.signature(make_elmo).parameters:
        pytest.skip("the elmo component has no precision setting yet")
    model = pipelines["training"] / "ner-elmo" / "seed0" / "model-best"
    default = pipeline_price.measure_in_subprocess(model, pipelines["test"], max_docs=3)
    price = pipeline_price.measure_in_subprocess(model, pipelines["test"], max_docs=3, precision="bfloat16")
    assert default["precision"] is None and default["elmo_precision"] == "float32"
    assert price["precision"] == price["elmo_precision"] == "bfloat16"
    assert price["words"] == default["words"]


def test_price_step_measures_each_precision_as_setting_at_precision(pipelines, run_command, capsys):
    """price --precision bfloat16 --precision int8: one file per setting and precision, named as
    its scores (SETTING@PRECISION.json), the override reaching the elmo component; unchanged
    pipelines are not measured again."""
    prices = pipelines["base"] / "prices_precision"
    args = ["price", str(pipelines["training"]), str(prices), "--ner-test", str(pipelines["test"])]
    args += ["--setting", "ner-elmo", "--max-docs", "3", "--precision", "bfloat16", "--precision", "int8"]
    assert run_command(args) == 0
    assert sorted(p.name for p in prices.iterdir()) == ["ner-elmo@bfloat16.json", "ner-elmo@int8.json"]
    for precision in ("bfloat16", "int8"):
        price = json.loads((prices / f"ner-elmo@{precision}.json").read_text())
        assert price["precision"] == price["elmo_precision"] == precision
        assert price["setting"] == "ner-elmo" and price["seed"] == 0 and price["words_per_cpu_second"] > 0
    capsys.readouterr()
    assert run_command(args) == 0
    assert capsys.readouterr().out.count("measured earlier") == 2
