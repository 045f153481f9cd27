"""torch.distributed, as much as pretraining needs; without torchrun everything here is a no-op."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

import torch
import torch.distributed as dist

from .errors import ConfigError, PretrainError

T = TypeVar("T")


@dataclass(frozen=True)
class Distributed:
    rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum over processes, in place."""
        if self.enabled:
            on_device = tensor.to(self.device)
            dist.all_reduce(on_device, op=dist.ReduceOp.SUM)
            tensor.copy_(on_device.to(tensor.device))
        return tensor

    def gather(self, value: Any) -> list[Any]:
        if not self.enabled:
            return [value]
        values: list[Any] = [None] * self.world_size
        dist.all_gather_object(values, value)
        return values


def run_on_main(context: Distributed, work: Callable[[], T]) -> T:
    """Run ``work`` on rank 0, the others wait for its result; an error there stops every process, none hangs."""
    error: Optional[BaseException] = None
    result: Any = None
    if context.is_main:
        try:
            result = work()
        except (PretrainError, OSError, ValueError) as err:
            error = err
    message = None if error is None else f"{type(error).__name__}: {error}"
    message, shared = context.gather((message, result))[0]
    if error is not None:
        raise error
    if message is not None:
        raise PretrainError(f"rank 0 failed: {message}")
    return result if context.is_main else shared


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    """``cpu``, ``cuda`` (this process's GPU under torchrun), ``cuda:N``, or ``auto`` (a GPU if any)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError as err:  # not a device string at all ("gpu")
        raise ConfigError(f"Unsupported device {name!r}: use 'cpu', 'cuda', 'cuda:N' or 'auto'") from err
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise PretrainError(f"Device {name!r} was requested but CUDA is not available")
        if device.index is None:
            device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    elif device.type != "cpu":
        raise ConfigError(f"Unsupported device {name!r}: use 'cpu', 'cuda', 'cuda:N' or 'auto'")
    return device


def setup_distributed(device_name: str) -> Distributed:
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(device_name, local_rank)
    if world_size > 1 and not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, timeout=datetime.timedelta(minutes=30))
    return Distributed(rank, world_size, device)


def teardown_distributed(context: Distributed) -> None:
    if context.enabled and dist.is_initialized():
        dist.destroy_process_group()
