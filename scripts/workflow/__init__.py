"""The code the project's steps share; the steps themselves are the thin commands in ``scripts/``.

| package | job |
| --- | --- |
| `corpora` | fetching the archives; Brown, WNUT-16 and the pretraining text as corpora |
| `checksums` | SHA-256 of files and folders: what a rerun compares |
"""
