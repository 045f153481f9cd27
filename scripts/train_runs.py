"""Transitional, not a step: ``pretrain_resumable.py`` runs as a file (``python
scripts/pretrain_resumable.py``, so this folder is the top of its import path) and imports
``sha256_of_path`` from here. Delete this module together with ``pretrain_resumable.py``, when
``spacy-elmo pretrain`` resumes by itself."""
from workflow.checksums import sha256_of_path

__all__ = ["sha256_of_path"]
