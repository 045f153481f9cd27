"""Random LSTM stacks and inputs for the loop tests."""

from typing import Optional

import torch

from spacy_elmo.nn.lstm import LstmStack

#: Rows of uneven lengths, sorted longest first; one of them empty.
LENGTHS = [9, 9, 7, 4, 4, 2, 1, 0]


def random_stacks(
    dtype: torch.dtype = torch.float64,
    seed: int = 0,
    n_layers: int = 3,
    cell_clip: Optional[float] = 1.0,
    proj_clip: Optional[float] = 0.5,
    skip: bool = True,
    n_stacks: int = 2,
    scale: float = 0.6,
) -> list[LstmStack]:
    """Stacks of 6 -> 10 cells -> 5 with weights large enough for the clips to bite."""
    torch.manual_seed(seed)
    stacks = [
        LstmStack(6, 10, 5, n_layers, cell_clip=cell_clip, proj_clip=proj_clip, use_skip_connections=skip)
        for _ in range(n_stacks)
    ]
    with torch.no_grad():
        for stack in stacks:
            for parameter in stack.parameters():
                parameter.normal_(0.0, scale)
    return [stack.to(dtype) for stack in stacks]


def time_major_inputs(lengths, n_stacks: int = 2, dim: int = 6, dtype=torch.float64, seed: int = 1) -> torch.Tensor:
    """Random ``(n_stacks, time, batch, dim)`` inputs, zero past each row's length."""
    steps = max(max(lengths), 1)
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(n_stacks, steps, len(lengths), dim, generator=generator, dtype=dtype)
    inside = torch.arange(steps)[:, None] < torch.tensor(lengths)[None, :]
    return values * inside[None, :, :, None].to(dtype)
