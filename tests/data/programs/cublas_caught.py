# PyTorch's cache filled to the last megabytes and kept (each refusal caught), then the first
# matmul creates cuBLAS's handle, whose own cudaMalloc finds nothing left: an OOM in cuBLAS
# beside the allocator, after refusals of the allocator the program survived.
import torch

a = torch.randn(64, 64, device="cuda")
blocks = []
for size in (256 << 20, 2 << 20, 512 << 10):
    try:
        while True:
            blocks.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        pass
del blocks  # into PyTorch's cache, not back to the driver
c = a @ a
torch.cuda.synchronize()
print("done", float(c.sum()))
