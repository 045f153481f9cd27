"""What running each setting costs, beside its score: the ``price`` step's files in the report.

Why apart from ``data``: the price is measured on one seed per setting (``PRICE_DIR/SETTING.json``,
``evaluation.settings_price``) while the scores are over all seeds, and a run from before the
price step has no price at all: every row then carries ``None`` and every cell shows ``-``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict, List, Optional

#: the measured numbers each setting row of the report and of results.json carries
PRICE_KEYS = ("words_per_cpu_second", "peak_memory_mib", "size_mib")
HEADERS = ("words / CPU s", "peak memory (MiB)", "size (MiB)")
MISSING = "-"
NOTE = (
    "Price: what running each setting costs, measured by the `price` step on one pipeline per setting "
    "({which}), in a fresh process with one thread: words per CPU-second of the second of "
    "two passes over at most {max_docs} test documents at the pipeline's own batch size, the process's "
    "peak memory (pipeline loaded and run) and the pipeline folder's size on disk (the ELMo settings store "
    "their biLM there). A setting without a measurement shows {missing}."
)


def read_prices(price_dir: Optional[Path]) -> Dict[str, dict]:
    """``{setting: price}`` from ``PRICE_DIR/SETTING.json``; empty without the folder. A file
    that is not a JSON object with the three numbers is a ValueError naming it."""
    if price_dir is None or not price_dir.is_dir():
        return {}
    prices = {}
    for path in sorted(price_dir.glob("*.json")):
        try:
            price = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from e
        if not isinstance(price, dict) or not all(
            isinstance(price.get(key), (int, float)) and math.isfinite(price[key]) for key in PRICE_KEYS
        ):
            raise ValueError(f"{path}: expected a JSON object with the numbers {', '.join(PRICE_KEYS)}")
        prices[path.stem] = price
    return prices


def add_prices(rows: List[dict], prices: Dict[str, dict]) -> None:
    """Each setting row gets the three numbers and the measured seed (``None`` without a price)."""
    for row in rows:
        price = prices.get(row["name"])
        for key in PRICE_KEYS:
            row[key] = price[key] if price else None
        row["price_seed"] = price.get("seed") if price else None


def cells(row: dict) -> List[str]:
    """The three table cells of a row: ``12,345``, ``812``, ``3.4``; ``-`` where missing."""
    words, memory, size = (row.get(key) for key in PRICE_KEYS)
    return [
        f"{words:,.0f}" if words is not None else MISSING,
        f"{memory:,.0f}" if memory is not None else MISSING,
        f"{size:,.1f}" if size is not None else MISSING,
    ]


def note(prices: Dict[str, dict]) -> str:
    """The sentence under the tables that says how the price was measured; empty without one."""
    if not prices:
        return ""
    seeds = sorted({p["seed"] for p in prices.values() if isinstance(p.get("seed"), int)})
    which = f"seed {', '.join(map(str, seeds))}'s model-best" if seeds else "its model-best"
    if seeds and any(p.get("seed") is None for p in prices.values()):
        which += ", or the one model-best of a setting trained once"
    max_docs = max(int(p.get("max_docs") or p.get("docs") or 0) for p in prices.values())
    return NOTE.format(which=which, max_docs=f"{max_docs:,}", missing=MISSING)
