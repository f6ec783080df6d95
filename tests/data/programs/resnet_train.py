"""A torchvision ResNet-50 training run on random images (224x224, fp32, SGD): its convolutions
run under cuDNN, which asks PyTorch's allocator for a workspace per algorithm and, refused, falls
back to an algorithm that needs less and goes on. Random weights: nothing is downloaded.

  python3 resnet_train.py --batch 64 --steps 3 [--benchmark]
"""
import argparse
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--benchmark", action="store_true", help="torch.backends.cudnn.benchmark")
    args = p.parse_args()
    torch.backends.cudnn.benchmark = args.benchmark
    torch.manual_seed(0)
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start = time.time()
    for step in range(args.steps):
        images = torch.randn(args.batch, 3, 224, 224, device="cuda")
        labels = torch.randint(0, 1000, (args.batch,), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print("step %d loss %.3f reserved %d MiB" %
              (step, loss.item(), torch.cuda.memory_reserved() >> 20), flush=True)
    print("done: batch %d, %d steps in %.1f s, peak reserved %d MiB" %
          (args.batch, args.steps, time.time() - start, torch.cuda.max_memory_reserved() >> 20))


if __name__ == "__main__":
    main()
