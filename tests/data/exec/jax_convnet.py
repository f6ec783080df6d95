"""A JAX convnet trained for a few steps, for `oomlab exec` and `fit exec` on JAX: five
convolution stages (NHWC, fp32, stride-2 downsampling), a linear head, SGD with momentum, one
jit-compiled step on random 224x224 images. Exit 0 when the steps complete; XLA's
RESOURCE_EXHAUSTED ends it with JAX's own error and exit 1. Nothing is downloaded.

  python3 jax_convnet.py --batch N [--steps 3] [--channels 64] [--size 224]
"""
import argparse
import functools

import jax
import jax.numpy as jnp


def init(key, channels, classes):
    params, c_in = [], 3
    for stage in range(5):
        c_out = channels * 2 ** stage
        key, k1, k2 = jax.random.split(key, 3)
        params.append({"w1": jax.random.normal(k1, (3, 3, c_in, c_out)) * (9 * c_in) ** -0.5,
                       "w2": jax.random.normal(k2, (3, 3, c_out, c_out)) * (9 * c_out) ** -0.5})
        c_in = c_out
    key, k = jax.random.split(key)
    return {"stages": params, "head": jax.random.normal(k, (c_in, classes)) * c_in ** -0.5}


def conv(x, w, stride):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def loss_fn(params, images, labels):
    x = images
    for i, p in enumerate(params["stages"]):
        x = jax.nn.relu(conv(x, p["w1"], 1 if i == 0 else 2))
        x = jax.nn.relu(conv(x, p["w2"], 1))
    logits = jnp.mean(x, axis=(1, 2)) @ params["head"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args()
    params = init(jax.random.PRNGKey(0), args.channels, 1000)
    velocity = jax.tree.map(jnp.zeros_like, params)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, velocity, images, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
        velocity = jax.tree.map(lambda v, g: 0.9 * v + g, velocity, grads)
        params = jax.tree.map(lambda p, v: p - 0.01 * v, params, velocity)
        return params, velocity, loss

    key = jax.random.PRNGKey(1)
    for _ in range(args.steps):
        key, k1, k2 = jax.random.split(key, 3)
        images = jax.random.normal(k1, (args.batch, args.size, args.size, 3))
        labels = jax.random.randint(k2, (args.batch,), 0, 1000)
        params, velocity, loss = train_step(params, velocity, images, labels)
    print("done: batch %d, loss %.3f" % (args.batch, float(loss)), flush=True)


if __name__ == "__main__":
    main()
