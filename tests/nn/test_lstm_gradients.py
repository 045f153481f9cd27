"""The autograd fused loop (pretraining, fine-tuning) against the plain reference loop.

Forward outputs are compared elsewhere; this checks the backward pass, which the fused loop's
per-step views and shrinking state could get wrong without changing any output.
"""
import torch

from spacy_elmo.nn.lstm import LstmStack, run_stacks


def _stacks(seed: int) -> list[LstmStack]:
    torch.manual_seed(seed)
    stacks = [
        LstmStack(6, 10, 5, n_layers=2, cell_clip=3.0, proj_clip=3.0, use_skip_connections=True)
        for _ in range(2)
    ]
    for stack in stacks:
        for parameter in stack.parameters():
            torch.nn.init.normal_(parameter, std=0.6)  # large enough for the clips to bite
    return [stack.double() for stack in stacks]


def _gradients(per_direction: bool) -> tuple[list[torch.Tensor], torch.Tensor]:
    stacks = _stacks(0)
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(2, 4, 7, 6, generator=generator, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([7, 5, 5, 2])
    weights = torch.randn(2, 4, 7, 5, generator=generator, dtype=torch.float64)
    outputs = run_stacks(stacks, inputs, lengths, per_direction=per_direction)
    loss = sum(((out * weights) ** 2).sum() for out in outputs)
    loss.backward()
    return [p.grad.clone() for s in stacks for p in s.parameters()], inputs.grad.clone()


def test_fused_loop_gradients_equal_reference_loop():
    fused_params, fused_inputs = _gradients(per_direction=False)
    reference_params, reference_inputs = _gradients(per_direction=True)
    assert any(g.abs().sum() > 0 for g in fused_params)
    for fused, reference in zip(fused_params, reference_params):
        torch.testing.assert_close(fused, reference, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fused_inputs, reference_inputs, rtol=1e-10, atol=1e-12)


def test_padded_positions_get_no_input_gradient():
    _, input_grads = _gradients(per_direction=False)
    assert torch.all(input_grads[:, 3, 2:] == 0)  # row 3 has length 2
    assert torch.any(input_grads[:, 3, :2] != 0)
