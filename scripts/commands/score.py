"""The scoring and reporting steps' commands: ``evaluate``, ``report``, ``report-textcat`` and
``probe-report`` (the code: ``scripts.workflow.evaluation`` and ``scripts.workflow.report``)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg


def evaluate(
    training_dir: Path = typer.Argument(..., help="SETTING/model-best or SETTING/seed{N}/model-best per setting"),
    metrics_dir: Path = typer.Argument(..., help="Where SETTING[.seedN].json and .docs.json go"),
    ner_test: Optional[Path] = typer.Option(None, "--ner-test", help="Test split of the settings named ner*"),
    tagger_test: Optional[Path] = typer.Option(None, "--tagger-test", help="Test split of the other settings"),
    textcat_test: Optional[Path] = typer.Option(
        None, "--textcat-test", help="Test split of the settings named textcat*"
    ),
    conll_test: Optional[Path] = typer.Option(
        None, "--conll-test", help="Test split of the settings named conll* (CoNLL-2003)"
    ),
    tweets_test: Optional[Path] = typer.Option(
        None,
        "--tweets-test",
        help="Test split of the cross-validated settings named tweets*, {fold} standing for the fold's number",
    ),
    setting: Optional[List[str]] = typer.Option(
        None, "--setting", help="A folder of TRAINING_DIR to score (repeatable)"
    ),
    optional_setting: Optional[List[str]] = typer.Option(
        None,
        "--optional-setting",
        help="A setting scored only if it was trained (repeatable); without a pipeline, its old scores are removed",
    ),
    jobs: int = typer.Option(
        0, "--jobs", min=0, help="Pipelines scored at a time, each in its own process (0: one per core)"
    ),
    precision: Optional[List[str]] = typer.Option(
        None,
        "--precision",
        help="Score each pipeline with its elmo component's precision set to this (bfloat16, int8; repeatable), "
        "as the setting SETTING@PRECISION",
    ),
) -> None:
    """The evaluate steps: test scores and per-document counts of trained settings.

    Each trained setting's pipeline(s) scored on the test split of its task: spaCy's scores and the
    per-document counts the report's paired tests need. Pipelines scored earlier with the same
    checksum and test file are skipped; the others are scored side by side (--jobs), with the
    files a serial run writes. With --precision P, each pipeline runs with its elmo component's
    precision set to P and its files are those of the setting SETTING@P."""
    from scripts.workflow.evaluation.scoring import jobs as pipeline_jobs
    from scripts.workflow.evaluation.scoring import precision_name, remove_stale_scores, score_jobs, trained_settings
    from scripts.workflow.parallel.pool import jobs_for
    from spacy_elmo.nn.precision import check_precision

    required, optional = setting or [], optional_setting or []
    if not required and not optional:
        raise typer.BadParameter("give at least one --setting or --optional-setting", param_hint="--setting")
    for test_data in (ner_test, tagger_test, textcat_test, conll_test):
        if test_data is not None and not test_data.is_file():
            msg.fail(f"Test data not found: {test_data}", exits=1)
    precisions = list(dict.fromkeys(precision or []))
    for value in precisions:
        try:
            check_precision(value, "--precision")
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint="--precision") from e
    settings = trained_settings(training_dir, required, optional)
    try:
        todo = list(
            pipeline_jobs(
                settings, training_dir, ner_test, tagger_test, textcat_test, precisions, conll_test, tweets_test
            )
        )
    except (FileNotFoundError, ValueError) as e:
        msg.fail(str(e), exits=1)
    metrics_dir.mkdir(parents=True, exist_ok=True)
    runs_at: List[Optional[str]] = list(precisions) or [None]
    names = [precision_name(name, value) for name in required + optional for value in runs_at]
    remove_stale_scores(metrics_dir, names, {stem for stem, _, _, _ in todo})
    score_jobs(todo, metrics_dir, jobs_for(jobs))


def price(
    training_dir: Path = typer.Argument(..., help="SETTING/model-best or SETTING/seed{N}/model-best per setting"),
    price_dir: Path = typer.Argument(..., help="Where SETTING.json goes, one per setting"),
    ner_test: Optional[Path] = typer.Option(None, "--ner-test", help="Test split of the settings named ner*"),
    tagger_test: Optional[Path] = typer.Option(None, "--tagger-test", help="Test split of the other settings"),
    textcat_test: Optional[Path] = typer.Option(
        None, "--textcat-test", help="Test split of the settings named textcat*"
    ),
    conll_test: Optional[Path] = typer.Option(
        None, "--conll-test", help="Test split of the settings named conll* (CoNLL-2003)"
    ),
    setting: List[str] = typer.Option(..., "--setting", help="A folder of TRAINING_DIR to measure (repeatable)"),
    seed: int = typer.Option(0, "--seed", min=0, help="Whose seed{N}/model-best is measured per setting"),
    max_docs: int = typer.Option(500, "--max-docs", min=1, help="The first test documents run"),
    precision: Optional[List[str]] = typer.Option(
        None,
        "--precision",
        help="Measure each pipeline with its elmo component's precision set to this (repeatable), "
        "into PRICE_DIR/SETTING@PRECISION.json",
    ),
) -> None:
    """The price step: what running each setting costs, one pipeline (seed) per setting.

    Each pipeline in a fresh process with one thread: words per CPU-second of the second of two
    passes over the first --max-docs test documents, peak memory, size on disk; written to
    PRICE_DIR/SETTING.json (SETTING@P.json with --precision P). Pipelines measured earlier with
    the same checksum are skipped."""
    from scripts.workflow.evaluation.settings_price import price_settings

    for test_data in (ner_test, tagger_test, textcat_test, conll_test):
        if test_data is not None and not test_data.is_file():
            msg.fail(f"Test data not found: {test_data}", exits=1)
    try:
        runs_at: List[Optional[str]] = list(dict.fromkeys(precision or [])) or [None]
        for value in runs_at:
            price_settings(
                training_dir, price_dir, setting, ner_test, tagger_test, textcat_test, seed, max_docs, value, conll_test
            )
    except (FileNotFoundError, ValueError) as e:
        msg.fail(str(e), exits=1)


def measure_price(
    model: Path = typer.Argument(..., help="A trained pipeline folder (e.g. training/ner-elmo/seed0/model-best)"),
    test_data: Path = typer.Argument(..., help="A .spacy file whose documents' words are run"),
    max_docs: int = typer.Option(500, "--max-docs", min=1, help="The first documents run"),
    precision: Optional[str] = typer.Option(
        None, "--precision", help="Override the elmo component's precision setting (pipelines with an elmo component)"
    ),
    output: Optional[Path] = typer.Option(None, "--output", help="Also write the result to this JSON file"),
) -> None:
    """The price of one pipeline: words per CPU-second, peak memory, size on disk.

    Measured in a fresh process with one thread (torch, OpenMP, MKL): the pipeline runs twice over
    the words of the first --max-docs documents at its own batch size, and the second pass is
    timed by the process's CPU time. Prints the result as JSON."""
    import json

    from scripts.workflow.evaluation.pipeline_price import measure_in_subprocess

    if not test_data.is_file():
        msg.fail(f"Test data not found: {test_data}", exits=1)
    try:
        result = measure_in_subprocess(model, test_data, max_docs, precision)
    except ValueError as e:
        msg.fail(str(e), exits=1)
    text = json.dumps(result, indent=2)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n", encoding="utf-8")
    print(text)


def report(
    metrics_dir: Path = typer.Option(Path("metrics"), "--metrics-dir", help="The evaluate steps' score files"),
    training_dir: Path = typer.Option(
        Path("training"), "--training-dir", help="The trained pipelines (for their learned layer weights)"
    ),
    bilm_dir: Path = typer.Option(
        Path("training/bilm"),
        "--bilm-dir",
        help="The pretrained biLM: metrics.jsonl, run.json, cpu_time.json, model-best",
    ),
    adapted_bilm_dir: Optional[List[Path]] = typer.Option(
        None,
        "--adapted-bilm-dir",
        help="A domain-adapted biLM (run.json, metrics.jsonl); repeatable, missing folders are skipped",
    ),
    spacy_pretrain_dir: Optional[List[Path]] = typer.Option(
        None,
        "--spacy-pretrain-dir",
        help="A run of the spacy-pretrain command (run.json); repeatable, missing folders are skipped",
    ),
    silver_dir: Optional[List[Path]] = typer.Option(
        None,
        "--silver-dir",
        help="A run of the label-silver command (silver.json: teacher, text, CPU time); repeatable, missing folders are skipped",
    ),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples per comparison"),
    rounds: int = typer.Option(10_000, "--rounds", help="Approximate randomization rounds per comparison"),
    output_dir: Path = typer.Option(
        Path("reports"), "--output-dir", help="Where report.md, results.json and the plots go"
    ),
    step_times: Optional[Path] = typer.Option(
        None, "--step-times", help="The step times the run-workflow command records"
    ),
    bilm_cpu_time: Optional[Path] = typer.Option(
        None,
        "--bilm-cpu-time",
        show_default="BILM_DIR/cpu_time.json",
        help="The CPU time of the biLM's pretraining (the `timed` command's)",
    ),
    robustness_step_times: Optional[Path] = typer.Option(
        None,
        "--robustness-step-times",
        help="The step times of the robustness workflow, which the report states beside its pooled comparisons",
    ),
    tweets_step_times: Optional[Path] = typer.Option(
        None, "--tweets-step-times", help="The step times of the tweets workflow (cross-validation)"
    ),
    conll_full_step_times: Optional[Path] = typer.Option(
        None, "--conll-full-step-times", help="The step times of the conll-full workflow"
    ),
    price_dir: Optional[Path] = typer.Option(
        None,
        "--price-dir",
        help="The price step's SETTING.json files (words per CPU-second, memory, size); missing: the columns show -",
    ),
    precision_metrics_dir: Optional[Path] = typer.Option(
        None,
        "--precision-metrics-dir",
        help="The evaluate-precision step's SETTING@PRECISION score files; missing: no low-precision section",
    ),
    tweets_metrics_dir: Optional[Path] = typer.Option(
        None,
        "--tweets-metrics-dir",
        help="The evaluate-tweets step's SETTING.foldK.seedN score files; missing: no cross-validation section",
    ),
    command: str = typer.Option(
        "python -m spacy project run all",
        "--command",
        help="The command that ran the workflow, as the report should quote it",
    ),
    readme: str = typer.Option("", "--readme", help="Landing page whose headline section is rewritten (empty: none)"),
    results_page: str = typer.Option(
        "", "--results-page", help="Docs page whose results section is rewritten (empty: none)"
    ),
) -> None:
    """The report step: report.md, plots, results.json, the README's results.

    Also prints the summary table. Settings named TASK[-small]-VARIANT are compared with their
    baseline (and *-adapted with the unadapted one, ELMo with spaCy's pretraining) by paired tests;
    a gain or loss is claimed only where p < 0.05. A setting also trained on other biLMs
    (SETTING@bilmN, the robustness workflow) is compared pooled over them: a gain is claimed only
    where the pooled p < 0.05 and every biLM gains; the cross-validated settings (the tweets
    workflow) pooled over folds, seeds and biLMs. The targets say met or missed, and by how much."""
    from scripts.workflow.report.build import ReportInputs, write_report

    inputs = ReportInputs(
        metrics_dir=metrics_dir,
        training_dir=training_dir,
        bilm_dir=bilm_dir,
        adapted_bilm_dirs=adapted_bilm_dir or [],
        spacy_pretrain_dirs=spacy_pretrain_dir or [],
        silver_dirs=silver_dir or [],
        output_dir=output_dir,
        step_times=step_times,
        bilm_cpu_time=bilm_cpu_time,
        robustness_step_times=robustness_step_times,
        tweets_step_times=tweets_step_times,
        conll_full_step_times=conll_full_step_times,
        price_dir=price_dir,
        precision_metrics_dir=precision_metrics_dir,
        tweets_metrics_dir=tweets_metrics_dir,
        command=command,
        readme=Path(readme) if readme else None,
        results_page=Path(results_page) if results_page else None,
        resamples=resamples,
        rounds=rounds,
    )
    try:
        readme_section, table, results = write_report(inputs)
    except ValueError as e:  # a malformed input file, named in the message
        msg.fail(str(e), exits=1)
    print(readme_section.split("\n\n")[0])
    print()
    for warning in results["warnings"]:
        msg.warn(warning)
    print(table)
    print()
    msg.good(
        f"Report: {output_dir / 'report.md'}"
        + (f"; results section updated: {results_page}" if results_page else "")
        + (f"; headline updated: {readme}" if readme else "")
    )


def report_textcat(
    metrics_dir: Path = typer.Option(
        Path("metrics/textcat"), "--metrics-dir", help="The evaluate-textcat step's score files"
    ),
    output_dir: Path = typer.Option(
        Path("reports"), "--output-dir", help="Where textcat.md, textcat_results.json and the figure go"
    ),
    corpus_stats: Path = typer.Option(
        Path("corpus/genres/stats.json"), "--corpus-stats", help="preprocess-genres' stats.json"
    ),
    step_times: Optional[Path] = typer.Option(
        None, "--step-times", help="The step times the run-workflow command records"
    ),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples per comparison"),
    rounds: int = typer.Option(10_000, "--rounds", help="Approximate randomization rounds per comparison"),
    command: str = typer.Option(
        "python -m spacy project run textcat", "--command", help="The command the report quotes"
    ),
    readme: str = typer.Option(
        "", "--readme", help="Docs page whose textcat-results section is rewritten (empty: none)"
    ),
) -> None:
    """The report-textcat step: the genre classification report.

    reports/textcat.md, textcat_results.json, a figure and the README's genre classification
    section. textcat-elmo is compared with textcat-baseline by the paired tests over test files; a
    gain or loss is claimed only where p < 0.05."""
    from scripts.workflow.report.textcat import TextcatReportInputs, write_textcat_report

    inputs = TextcatReportInputs(
        metrics_dir=metrics_dir,
        output_dir=output_dir,
        corpus_stats=corpus_stats,
        step_times=step_times,
        command=command,
        readme=Path(readme) if readme else None,
        resamples=resamples,
        rounds=rounds,
    )
    try:
        section, _ = write_textcat_report(inputs)
    except ValueError as e:  # a malformed input file, named in the message
        msg.fail(str(e), exits=1)
    print(section)
    msg.good(f"Report: {output_dir / 'textcat.md'}" + (f"; README section updated: {readme}" if readme else ""))


def probe_report(
    probe_dirs: List[Path] = typer.Argument(..., help="train-probes outputs (layer{j}/model-best each)"),
    output_dir: Path = typer.Option(Path("reports"), "--output-dir", help="Where probe.md and probe_layers.png go"),
) -> None:
    """The probe-report step: which biLM layer serves which task.

    From the probes' dev scores: probe.md (a table, layers by task) and probe_layers.png; prints the
    table."""
    from scripts.workflow.report.probes import write_probe_report

    try:
        table = write_probe_report(probe_dirs, output_dir)
    except ValueError as e:
        raise SystemExit(str(e)) from e
    print(table)
