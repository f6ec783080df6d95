"""A JAX job for `oomlab exec`: a matrix product of two N x N float32 arrays, repeated.
  python jax_job.py N      (N=16384: 3 arrays of 1 GiB)
Without XLA_PYTHON_CLIENT_PREALLOCATE=false, JAX first reserves 75% of the device's total memory,
which a smaller budget cannot give."""
import sys

import jax.numpy as jnp
from jax import random

n = int(sys.argv[1])
key = random.PRNGKey(0)
a = random.normal(key, (n, n), dtype=jnp.float32)
b = random.normal(key, (n, n), dtype=jnp.float32)
for _ in range(3):
    c = a @ b
print("done", float(c[0, 0]), flush=True)
