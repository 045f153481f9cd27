# Fresh-machine entry points. `make test` runs the lint and type checks (`make lint`), then the test
# suite; `make all` runs the main job; `make wheel` builds the package for pipelines packaged with it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TORCH_CPU := torch==2.13.0
# PyTorch's own index of CPU-only wheels: a stock index serves the CUDA build on Linux
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu

DIST ?= dist

.PHONY: install torch lint test wheel all clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# The CPU torch wheel goes in first, so the package's range (torch>=2.10) installs nothing more.
# From PyTorch's CPU index when it answers, else from pip's configured index; says which.
torch: $(PY)
	@if $(PY) -c "import torch" 2>/dev/null; then \
		echo "torch: already installed"; \
	elif $(PY) -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)" "$(TORCH_CPU_INDEX)/torch/" 2>/dev/null; then \
		echo "torch: installing $(TORCH_CPU) from PyTorch's CPU wheel index ($(TORCH_CPU_INDEX))"; \
		$(PY) -m pip install --index-url "$(TORCH_CPU_INDEX)" "$(TORCH_CPU)" || { \
			echo "torch: that failed: installing $(TORCH_CPU) from pip's configured index"; \
			$(PY) -m pip install "$(TORCH_CPU)"; }; \
	else \
		echo "torch: PyTorch's CPU wheel index ($(TORCH_CPU_INDEX)) did not answer: installing $(TORCH_CPU) from pip's configured index"; \
		$(PY) -m pip install "$(TORCH_CPU)"; \
	fi
	@$(PY) -c "import torch; print('torch:', torch.__version__, '(CUDA build ' + torch.version.cuda + ')' if torch.version.cuda else '(CPU build)')"

install: torch
	$(PY) -m pip install -e ".[dev]"

# ruff (lint, then the formatter's check) over the repository, mypy over the package; settings in
# pyproject.toml ([tool.ruff], [tool.mypy]: spaCy's own mypy settings)
lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy spacy_elmo

# Two pytest workers (pytest-xdist), one per core of the CI machine: the tests run torch on one
# thread each (tests/conftest.py), so one process leaves a core idle. A fixed count, not -n auto:
# on a larger machine more workers would each rebuild the session fixtures and share its memory.
# Each test file runs on one worker, in order (--dist loadfile, in pyproject.toml's addopts).
test: install lint
	$(PY) -m pytest tests -q -n 2

# spacy-elmo as a wheel in $(DIST), to install beside a pipeline that `spacy package` built (it
# requires spacy-elmo, which no index has: docs/component.md). Built from the venv's setuptools
# where it has them, else in pip's isolated build environment.
wheel: $(PY)
	@if $(PY) -c "import setuptools, wheel" 2>/dev/null; then isolation=--no-build-isolation; fi; \
	$(PY) -m pip wheel --no-deps $$isolation -q -w $(DIST) . && echo "wheel: $$(ls $(DIST)/spacy_elmo-*.whl)"

# The independent steps of the `all` workflow run side by side, one per core
# (`python -m spacy project run all` runs the same steps one after another).
all: install
	$(PY) -m scripts run-workflow all

clean:
	rm -rf $(VENV) build $(DIST) *.egg-info
