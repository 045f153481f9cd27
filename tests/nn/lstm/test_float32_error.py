"""The fast inference loop is as exact as the plain reference loop in float32.

Both are compared with a float64 run of the reference loop on the same float32 inputs and
weights, on long sentences (60 steps), where rounding errors have time to grow.
"""
import copy

import pytest
import torch

from spacy_elmo.nn.lstm import LstmStack, run_time_major

STEPS, ROWS = 60, 4
# The bound: the fused loop's max error at most 1.5x the reference loop's. Before the
# weights were read as transposed views and tanh replaced its sigmoid identity the ratio was
# 3.0-3.7 on these seeds; now 1.27-1.34.
MAX_RATIO = 1.5


def _max_error(outputs, exact):
    return max(float((out.double() - ref).abs().max()) for out, ref in zip(outputs, exact))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_inference_loop_error_within_reference_loop_error(seed):
    torch.manual_seed(seed)
    stacks = [LstmStack(128, 512, 128, 2, cell_clip=3.0, proj_clip=3.0) for _ in range(2)]
    inputs = torch.randn(2, STEPS, ROWS, 128)
    active = [ROWS] * STEPS
    stacks64 = [copy.deepcopy(stack).double() for stack in stacks]
    with torch.no_grad():
        exact = run_time_major(stacks64, inputs.double(), active, per_direction=True)
        reference = _max_error(run_time_major(stacks, inputs, active, per_direction=True), exact)
        fused = _max_error(run_time_major(stacks, inputs, active), exact)
    assert 0 < reference
    assert fused <= MAX_RATIO * reference, (fused, reference, fused / reference)
