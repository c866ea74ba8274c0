"""The small training step that module 01 times on the CPU and on the accelerator."""
from __future__ import annotations

from typing import Callable

from .i18n import msg


def make_step(device="cpu", width: int = 256, depth: int = 3, batch: int = 128,
              transfer: bool = False, seed: int = 0) -> Callable[[], object]:
    """One SGD step of an MLP (``depth`` hidden layers of ``width``) on ``device``, as a function.

    The function returns the loss tensor without reading it (``.item()`` would
    synchronize). ``transfer=True`` copies the batch from host memory every step,
    as a training loop without a device-side data loader does.
    """
    import torch
    from torch import nn

    if not (isinstance(width, int) and width > 0 and isinstance(depth, int) and depth > 0
            and isinstance(batch, int) and batch > 0):
        raise ValueError(msg("m01.bad_step_args", width=width, depth=depth, batch=batch).text())
    generator = torch.Generator().manual_seed(seed)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, 10))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * width ** -0.5)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x_host = torch.randn(batch, width, generator=generator)
    y_host = torch.randint(0, 10, (batch,), generator=generator)
    x, y = x_host.to(device), y_host.to(device)

    def step():
        inputs, targets = (x_host.to(device), y_host.to(device)) if transfer else (x, y)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    return step


def step_flops(width: int, depth: int = 3, batch: int = 128) -> float:
    """Approximate FLOPs of one step: 6 x weights x batch (forward 2, backward 4 per weight and sample)."""
    weights = depth * width * width + width * 10
    return 6.0 * weights * batch
