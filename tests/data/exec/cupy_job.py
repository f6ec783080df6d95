"""A CuPy job for `oomlab exec`: N MiB arrays made and summed, K at a time.
  python cupy_job.py MIB COUNT"""
import sys

import cupy as cp

mib, count = int(sys.argv[1]), int(sys.argv[2])
arrays = [cp.ones(mib << 18, dtype=cp.float32) for _ in range(count)]
print("sum", float(sum(a.sum() for a in arrays)), flush=True)
