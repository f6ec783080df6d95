"""A JAX training job whose memory grows with its batch, for `oomlab exec`, `fit exec` and
`frontier exec` on JAX: a small decoder-only language model in pure JAX (no Flax, no Optax), its
train step (forward, backward, Adam) one jit-compiled function, run for a few steps on random
tokens. Exit 0 when the steps complete; XLA's RESOURCE_EXHAUSTED ends it with JAX's own error and
exit 1. Nothing is downloaded.

  python3 jax_lm.py --batch N [--steps 3] [--seq 1024] [--layers 8] [--width 1024] [--remat]

--remat wraps each block in jax.checkpoint (its activations recomputed in the backward pass).
"""
import argparse
import functools

import jax
import jax.numpy as jnp


def init(key, vocab, width, layers):
    keys = jax.random.split(key, 2 + layers)
    scale = width ** -0.5

    def block(k):
        ks = jax.random.split(k, 4)
        return {"qkv": jax.random.normal(ks[0], (width, 3 * width)) * scale,
                "out": jax.random.normal(ks[1], (width, width)) * scale,
                "up": jax.random.normal(ks[2], (width, 4 * width)) * scale,
                "down": jax.random.normal(ks[3], (4 * width, width)) * scale * 0.5,
                "ln1": jnp.ones(width), "ln2": jnp.ones(width)}

    return {"embed": jax.random.normal(keys[0], (vocab, width)) * 0.02,
            "blocks": [block(k) for k in keys[2:]],
            "ln": jnp.ones(width)}


def norm(x, g):
    return g * x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def block_apply(p, x, heads):
    b, s, w = x.shape
    q, k, v = jnp.split(norm(x, p["ln1"]) @ p["qkv"], 3, axis=-1)
    q, k, v = (t.reshape(b, s, heads, w // heads).transpose(0, 2, 1, 3) for t in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(w // heads)
    mask = jnp.tril(jnp.ones((s, s), bool))
    att = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1) @ v
    x = x + att.transpose(0, 2, 1, 3).reshape(b, s, w) @ p["out"]
    return x + jax.nn.gelu(norm(x, p["ln2"]) @ p["up"]) @ p["down"]


def loss_fn(params, tokens, heads, remat):
    apply = functools.partial(block_apply, heads=heads)
    if remat:
        apply = jax.checkpoint(apply)
    x = params["embed"][tokens[:, :-1]]
    for p in params["blocks"]:
        x = apply(p, x)
    logits = norm(x, params["ln"]) @ params["embed"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))


def adam(params, grads, m, v, step, lr=1e-4):
    m = jax.tree.map(lambda a, g: 0.9 * a + 0.1 * g, m, grads)
    v = jax.tree.map(lambda a, g: 0.999 * a + 0.001 * g * g, v, grads)
    fix1, fix2 = 1 - 0.9 ** step, 1 - 0.999 ** step
    params = jax.tree.map(lambda p, a, b: p - lr * (a / fix1) / (jnp.sqrt(b / fix2) + 1e-8),
                          params, m, v)
    return params, m, v


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--remat", action="store_true")
    args = parser.parse_args()
    heads = args.width // 64
    params = init(jax.random.PRNGKey(0), args.vocab, args.width, args.layers)
    m = jax.tree.map(jnp.zeros_like, params)
    v = jax.tree.map(jnp.zeros_like, params)

    @functools.partial(jax.jit, donate_argnums=(0, 1, 2))
    def train_step(params, m, v, tokens, step):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, heads, args.remat)
        params, m, v = adam(params, grads, m, v, step)
        return params, m, v, loss

    key = jax.random.PRNGKey(1)
    for step in range(1, args.steps + 1):
        key, sub = jax.random.split(key)
        tokens = jax.random.randint(sub, (args.batch, args.seq + 1), 0, args.vocab)
        params, m, v, loss = train_step(params, m, v, tokens, step)
    print("done: batch %d, loss %.3f" % (args.batch, float(loss)), flush=True)


if __name__ == "__main__":
    main()
