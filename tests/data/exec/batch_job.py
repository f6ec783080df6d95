"""A PyTorch training job whose memory grows with its batch, for `oomlab frontier exec --from
batch=1,2 --at batch=N` and `oomlab fit exec`: a three-layer MLP (fp32, AdamW) trained for a few
steps on random rows, 256 rows per item of the batch. Exit 0 when the steps complete; PyTorch's
OutOfMemoryError ends it with its own message and exit 1. Nothing is downloaded.

  python3 batch_job.py --batch N [--steps 3]
"""
import argparse

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 1000)).cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    rows = 256 * args.batch
    x = torch.randn(rows, 4096, device="cuda")
    y = torch.randint(0, 1000, (rows,), device="cuda")
    for _ in range(args.steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print("done: batch %d, peak reserved %d MiB" %
          (args.batch, torch.cuda.max_memory_reserved() >> 20))


if __name__ == "__main__":
    main()
