# Fresh-machine entry points. `make test` runs the test suite; `make all` runs the main job.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TORCH_CPU := torch==2.13.0

.PHONY: install test all clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# The CPU torch wheel goes in first, so the package's range (torch>=2.10) installs nothing more.
install: $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install $(TORCH_CPU)
	$(PY) -m pip install -e ".[dev]"

test: install
	$(PY) -m pytest tests -q

# The independent steps of the `all` workflow run side by side, one per core
# (`python -m spacy project run all` runs the same steps one after another).
all: install
	$(VENV)/bin/python -m scripts.run_workflow all

clean:
	rm -rf $(VENV) build *.egg-info
