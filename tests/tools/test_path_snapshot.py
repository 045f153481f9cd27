"""tools/path_snapshot.py's comparison: identical snapshots pass, and any changed bit, shape,
record or missing name is reported (the tool is what says a refactor changed no number)."""

import numpy

from tools.path_snapshot import Snapshot, compare


def write(folder, arrays, records):
    snap = Snapshot(folder)
    for name, value in arrays.items():
        snap.array(name, value)
    for name, value in records.items():
        snap.record(name, value)
    snap.write()
    return folder


ARRAYS = {"tiny/forward/fused": numpy.array([[0.5, -1.25], [numpy.nan, 3.0]], dtype=numpy.float32)}
RECORDS = {"train/0.0/tags": ["DET", "NOUN"]}


def test_identical_snapshots_are_bit_identical(tmp_path, capsys):
    before = write(tmp_path / "before", ARRAYS, RECORDS)
    after = write(tmp_path / "after", ARRAYS, RECORDS)
    assert compare(before, after) == 0
    assert capsys.readouterr().out.strip().endswith("bit-identical")


def test_one_changed_bit_a_record_and_a_missing_array_are_each_reported(tmp_path, capsys):
    changed = ARRAYS["tiny/forward/fused"].copy()
    changed.view(numpy.uint32)[0, 0] ^= 1  # the last bit of one float
    before = write(tmp_path / "before", {**ARRAYS, "only/before": numpy.zeros(2)}, RECORDS)
    after = write(tmp_path / "after", {"tiny/forward/fused": changed}, {"train/0.0/tags": ["DET", "VERB"]})
    assert compare(before, after) == 1
    out = capsys.readouterr().out
    assert "DIFF tiny__forward__fused: differs" in out
    assert "DIFF only in before: only__before" in out
    assert "DIFF train/0.0/tags:" in out
    assert out.strip().endswith("3 difference(s)")


def test_another_shape_is_reported(tmp_path, capsys):
    before = write(tmp_path / "before", ARRAYS, RECORDS)
    after = write(tmp_path / "after", {"tiny/forward/fused": numpy.zeros((2, 3), dtype=numpy.float32)}, RECORDS)
    assert compare(before, after) == 1
    assert "float32(2, 2) vs float32(2, 3)" in capsys.readouterr().out
