"""The app's commands (``python -m scripts COMMAND``), thin: they read their options with typer
and call ``scripts.workflow``. ``scripts/__main__.py`` names them.

| module | commands |
| --- | --- |
| `prepare` | `fetch`, `preprocess brown`, `preprocess wnut`, `preprocess text`, `preprocess genres` |
| `train` | `train-seeds`, `train-probes`, `spacy-pretrain`, `tune-recipe` |
| `score` | `evaluate`, `price`, `measure-price`, `report`, `report-textcat`, `probe-report` |
| `orchestrate` | `run-workflow` (`make all`), `timed` |
"""
