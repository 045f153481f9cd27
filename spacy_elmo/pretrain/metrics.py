"""``OUTPUT_DIR/metrics.jsonl``: one JSON object per evaluation, appended as training goes."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Union


def append_metrics(path: Union[str, Path], record: dict[str, Any]) -> None:
    """Append one line and flush it, so that a killed run keeps every finished evaluation. A
    failed write (a full disk) names the file; a resume drops the line it may have cut short."""
    try:
        with open(path, "a", encoding="utf8") as handle:
            handle.write(json.dumps(_finite(record)) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as err:
        if err.filename is not None or err.errno is None:
            raise
        raise OSError(err.errno, err.strerror, str(path)) from err


def read_metrics(path: Union[str, Path]) -> list[dict[str, Any]]:
    """The records, skipping a last line cut short by a crash."""
    path = Path(path)
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def truncate_metrics(path: Union[str, Path], last_step: int) -> None:
    """Drop records after ``last_step``: a resumed run redoes those steps and logs them again."""
    path = Path(path)
    if not path.is_file():
        return
    kept = [r for r in read_metrics(path) if int(r.get("step", 0)) <= last_step]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf8")
    os.replace(tmp, path)


def _finite(record: dict[str, Any]) -> dict[str, Any]:
    """JSON has no NaN or infinity: write those as null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
