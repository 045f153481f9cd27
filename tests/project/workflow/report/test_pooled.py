"""The report with the robustness workflow's settings (SETTING@bilmN): per-biLM rows with each
biLM's dev perplexity, the comparisons pooled over biLMs, and the headline's pooled claims; on
a constructed metrics folder whose pipelines name their biLMs in their configs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy
import pytest

from scripts.workflow.report import data as report_data
from scripts.workflow.report import headline
from scripts.workflow.report import pooled as report_pooled

from .test_build import N_DOCS, ner_counts, tagger_counts, write_run

RESAMPLES = 2000
# the robustness workflow's steps as the runner records them
ROBUSTNESS_TIMES = {
    "pretrain-bilm-seed1": {"seconds": 640.0, "cpu_seconds": 600.0, "started_unix": 10.0},
    "pretrain-bilm-seed2": {"seconds": 650.0, "cpu_seconds": 610.0, "started_unix": 10.0},
    "train-ner-elmo-bilm1": {"seconds": 460.0, "cpu_seconds": 440.0, "started_unix": 700.0},
}
# (folder, pretraining seed, dev perplexity of model-best, how it ended)
BILMS = (
    ("bilm", 0, 220.0, "max_tokens"),
    ("bilm-seed1", 1, 214.0, "max_tokens"),
    ("bilm-seed2", 2, 231.0, "max_minutes"),  # cut short: the report must warn
)


def write_bilm_run(folder: Path, seed: int, best: float, stopped_by: str) -> None:
    """A pretraining folder: its config's seed, a curve whose lowest dev perplexity is ``best``
    (not the last one), how it ended and its CPU time."""
    folder.mkdir(parents=True)
    (folder / "config.cfg").write_text(f'[system]\nseed = {seed}\ndevice = "cpu"\n')
    curve = [(100, best + 30), (200, best), (300, best + 2)]
    (folder / "metrics.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "step": step,
                    "tokens": step * 1000,
                    "dev_perplexity": value,
                    "dev_perplexity_forward": value - 1,
                    "dev_perplexity_backward": value + 1,
                }
            )
            + "\n"
            for step, value in curve
        )
    )
    (folder / "run.json").write_text(
        json.dumps({"stopped_by": stopped_by, "steps": 300, "tokens": 300000, "max_tokens": 300000, "minutes": 9.0})
    )
    (folder / "cpu_time.json").write_text(json.dumps({"cpu_seconds": 600.0 + seed}))


def write_model(folder: Path, elmo: str) -> str:
    """A pipeline folder whose config names the biLM it read (paths.elmo)."""
    folder.mkdir(parents=True)
    (folder / "config.cfg").write_text(f'[paths]\nelmo = "{elmo}"\n')
    return str(folder)


def one_more_tp(counts: numpy.ndarray, sign: int) -> numpy.ndarray:
    """One more (``sign`` 1) or one fewer (-1) entity found in every document that allows it."""
    changed = counts.copy()
    moved = numpy.minimum(changed[:, 2] if sign > 0 else changed[:, 0], 1)
    changed[:, 0] += sign * moved
    changed[:, 2] -= sign * moved
    return changed


@pytest.fixture(scope="module")
def robust(tmp_path_factory, run_command) -> dict:
    """NER: ELMo gains on the `all` biLM and on seed 1, loses on seed 2 (varies); the small
    tagger gains one token per document on every biLM (a gain)."""
    base = tmp_path_factory.mktemp("robust")
    metrics, training = base / "metrics", base / "training"
    metrics.mkdir()
    for folder, seed, best, stopped_by in BILMS:
        write_bilm_run(training / folder, seed, best, stopped_by)
    rng = numpy.random.default_rng(7)
    bilm_of = {"": "bilm", "@bilm1": "bilm-seed1", "@bilm2": "bilm-seed2"}

    def elmo_runs(setting: str, task: str, seed: int, counts_of) -> None:
        for suffix, folder in bilm_of.items():
            name = f"{setting}{suffix}"
            # the fake pipelines lie outside --training-dir, where the report loads real ones
            pipeline = base / "pipelines" / name / f"seed{seed}" / "model-best"
            model = write_model(pipeline, str(training / folder / "model-best"))
            write_run(metrics, f"{name}.seed{seed}", task, counts_of(suffix), model=model)

    for seed in range(3):
        baseline = ner_counts(rng, 0)
        write_run(metrics, f"ner-baseline.seed{seed}", "ner", baseline)
        elmo_runs(
            "ner-elmo", "ner", seed, lambda suffix, base=baseline: one_more_tp(base, -1 if suffix == "@bilm2" else 1)
        )
    for seed in range(2):
        small = tagger_counts(rng, 0)
        write_run(metrics, f"tagger-small-baseline.seed{seed}", "tagger", small)
        better = small.copy()
        better[:, 0] += 1
        elmo_runs("tagger-small-elmo", "tagger", seed, lambda suffix, better=better: better)
    times = base / "robustness_step_times.json"
    times.write_text(json.dumps(ROBUSTNESS_TIMES))
    page = base / "workflow.md"
    page.write_text("# Workflow\n\n<!-- results:start -->\nold\n<!-- results:end -->\n")
    landing = base / "README.md"
    landing.write_text("# Landing\n\n<!-- headline:start -->\nold\n<!-- headline:end -->\n")
    out = base / "reports"
    argv = ["report", "--metrics-dir", str(metrics), "--training-dir", str(training)]
    argv += ["--bilm-dir", str(base / "no-bilm"), "--output-dir", str(out), "--command", "make all"]
    argv += ["--robustness-step-times", str(times), f"--results-page={page}", f"--readme={landing}"]
    argv += ["--resamples", str(RESAMPLES), "--rounds", "500"]
    assert run_command(argv) == 0
    section = page.read_text().split("<!-- results:start -->")[1].split("<!-- results:end -->")[0]
    return {
        "base": base,
        "metrics": metrics,
        "training": training,
        "results": json.loads((out / "results.json").read_text()),
        "report": (out / "report.md").read_text(),
        "section": section,
        "headline": landing.read_text().split("<!-- headline:start -->")[1].split("<!-- headline:end -->")[0],
    }


def test_settings_on_other_biLMs_are_grouped_by_name():
    names = [
        "ner-baseline",
        "ner-elmo",
        "ner-elmo@bilm2",
        "ner-elmo@bilm10",
        "ner-elmo@bilm1",
        "ner-elmo-adapted@bilm1",
        "ner-elmo-adapted",
        "ner-baseline@bilm1",  # a baseline does not read a biLM: never pooled
        "tagger-small-baseline",
        "tagger-small-elmo@bilm1",  # alone: nothing to pool with
        "tagger-elmo",
        "tagger-elmo@bilm1",  # no tagger-baseline scored
        "probe-ner@bilm1",
    ]
    assert report_data.pooled_groups(names) == [
        (
            "ner",
            "full",
            "ner-baseline",
            "ner-elmo",
            ["ner-elmo", "ner-elmo@bilm1", "ner-elmo@bilm2", "ner-elmo@bilm10"],
        ),
        ("ner", "full", "ner-baseline", "ner-elmo-adapted", ["ner-elmo-adapted", "ner-elmo-adapted@bilm1"]),
    ]
    assert report_data.split_bilm("ner-elmo@bilm10") == ("ner-elmo", 10)
    assert report_data.split_bilm("ner-elmo") == ("ner-elmo", None)
    assert report_data.bilm_setting_name("tagger-small-elmo", 2) == "tagger-small-elmo@bilm2"
    # the tables of one run leave them out
    assert report_data.parse_setting("ner-elmo@bilm1") is None
    assert report_data.comparisons(names) == report_data.comparisons([n for n in names if "@" not in n])


def test_each_biLM_has_its_row_with_its_dev_perplexity(robust):
    ner, tagger = robust["results"]["pooled"]
    assert (ner["setting"], ner["baseline"], tagger["setting"]) == ("ner-elmo", "ner-baseline", "tagger-small-elmo")
    assert ner["members"] == ["ner-elmo", "ner-elmo@bilm1", "ner-elmo@bilm2"]
    for bilm, (folder, seed, best, stopped_by) in zip(ner["bilms"], BILMS):
        assert bilm["folder"] == str(robust["training"] / folder) and bilm["seed"] == seed
        assert bilm["dev_perplexity"] == best and bilm["best_step"] == 200  # model-best's, not the last
        assert (bilm["dev_perplexity_forward"], bilm["dev_perplexity_backward"]) == (best - 1, best + 1)
        assert bilm["stopped_by"] == stopped_by and bilm["cpu_seconds"] == 600.0 + seed
    own = ner["test"]["per_bilm"]
    assert [own[name]["verdict"] for name in ner["members"]] == ["gain", "gain", "loss"]
    row = [line for line in robust["report"].splitlines() if "| ner-elmo@bilm1 |" in line]
    assert len(row) == 1 and "bilm-seed1 (seed 1) | 214.0 (213.0 / 215.0) | 10.0 min |" in row[0]
    assert f"{100 * own['ner-elmo@bilm1']['difference']:+.2f} |" in row[0]


def test_the_pooled_claims_need_every_biLM(robust):
    ner, tagger = robust["results"]["pooled"]
    assert ner["verdict"] == "varies" and ner["range"][0] < 0 < ner["range"][1]
    assert ner["test"]["seeds"] == [0, 1, 2] and ner["test"]["n_docs"] == N_DOCS
    assert ner["delta"] == pytest.approx(100 * ner["test"]["difference"])
    assert ner["delta"] == pytest.approx(
        numpy.mean([100 * own["difference"] for own in ner["test"]["per_bilm"].values()])
    )
    assert tagger["verdict"] == "gain" and tagger["test"]["p_value"] == pytest.approx(2 / (1 + RESAMPLES))
    assert tagger["range"][0] > 0 and tagger["test"]["ci95"][0] > 0 and tagger["test"]["seeds"] == [0, 1]
    for text in (robust["report"], robust["section"]):
        assert "**varies with the biLM** (" in text and "ner-elmo vs ner-baseline" in text
        assert "**gain on every biLM**: tagger-small-elmo beats tagger-small-baseline" in text
        assert "| tagger-small-elmo vs tagger-small-baseline | 3 x 2 x 60 |" in text
    assert "## Over biLMs: does the gain replicate?" in robust["report"]
    assert "### Over biLMs: does the gain replicate?" in robust["section"]


def test_the_runs_of_one_workflow_are_reported_as_before(robust):
    """The settings on other biLMs are in the pooled section only."""
    assert not [s for s in robust["results"]["settings"] if "@" in s["name"]]
    assert not [c for c in robust["results"]["comparisons"] if "@" in c["other"] + c["baseline"]]
    compared = {(c["other"], c["baseline"]) for c in robust["results"]["comparisons"]}
    assert compared == {("ner-elmo", "ner-baseline"), ("tagger-small-elmo", "tagger-small-baseline")}


def test_the_robustness_cpu_time_and_cut_biLMs_are_stated(robust):
    cpu = sum(entry["cpu_seconds"] for entry in ROBUSTNESS_TIMES.values())
    assert robust["results"]["robustness_cpu_seconds"] == cpu
    assert f"took {cpu / 60:.1f} min of CPU time" in robust["report"]
    warning = f"Pretraining of the biLM {(robust['training'] / 'bilm-seed2').as_posix()} was cut by the time guard"
    assert any(w.startswith(warning) for w in robust["results"]["warnings"])
    assert f"> **Warning:** {warning}" in robust["report"]


def test_the_headline_claims_what_holds_pooled(robust):
    text = robust["headline"]
    assert "; then `python -m scripts run-workflow robustness`: 27.5 min of CPU time." in text.splitlines()[1]
    assert "One biLM, the `all` workflow's, paired over seeds and test documents:" in text
    assert "Over 3 biLMs (pretraining seeds 0, 1, 2)" in text
    tables = [block for block in text.split("\n\n") if block.startswith("| ")]
    assert len(tables) == 2
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in tables[1].splitlines()[2:]]
    ner, tagger = robust["results"]["pooled"]
    for row, pool, claim in zip(rows, (ner, tagger), ("varies", "**gain**")):
        low, high = (100 * bound for bound in pool["test"]["ci95"])
        assert row[2] == f"{pool['delta']:+.2f} ({low:+.2f} to {high:+.2f})"
        assert row[4] == f"{pool['range'][0]:+.2f} to {pool['range'][1]:+.2f}"
        assert row[5].startswith(f"3 x {len(pool['test']['seeds'])} x ") and row[6] == claim
    assert len(rows) == 2


def test_a_pooled_claim_is_varies_unless_pooled_p_and_every_biLM_agree():
    pool = {"verdict": "varies"}
    assert headline.claim(pool) == "varies" and headline.claim({"verdict": "gain"}) == "**gain**"
    results = {"comparisons": [], "pooled": [{"setting": "ner-elmo", "baseline": "ner-baseline", "test": None}]}
    assert headline.elmo_pools(results) == []  # not tested: the headline stays as without it


def test_pipelines_of_one_setting_on_two_biLMs_are_not_pooled(robust, tmp_path):
    """Two members that read the same biLM would count it twice: the row says so, untested."""
    metrics = tmp_path / "metrics"
    shutil.copytree(robust["metrics"], metrics)
    for path in metrics.glob("ner-elmo@bilm2.seed*[0-9].json"):
        run = json.loads(path.read_text())
        run["model"] = write_model(tmp_path / path.stem, str(robust["training"] / "bilm-seed1" / "model-best"))
        path.write_text(json.dumps(run))
    rows = report_pooled.pooled_rows(report_data.load_settings(metrics), resamples=50, rounds=50)
    ner = next(row for row in rows if row.setting == "ner-elmo")
    assert ner.result is None and "read the same biLM" in ner.not_tested
    assert "not tested" in report_pooled.pooled_sentence(ner) and ner.verdict == "not tested"
