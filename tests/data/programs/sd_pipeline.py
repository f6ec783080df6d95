"""A Stable-Diffusion-shaped text-to-image pipeline from diffusers' own parts: UNet2DConditionModel
and AutoencoderKL in Stable Diffusion 1.x's shapes, DDIMScheduler, fp16, 512x512, classifier-free
guidance (the UNet sees the batch twice). Random weights and random text embeddings: nothing is
downloaded.

  python3 sd_pipeline.py --batch 4 --steps 4 [--attention-slicing] [--vae-slicing]

--attention-slicing computes the UNet's attention a slice of heads at a time
(set_attention_slice("max")); --vae-slicing decodes the images one at a time (the VAE's slicing):
diffusers' own remedies for memory, as knobs to search.
"""
import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel


def make_models():
    torch.set_default_dtype(torch.float16)
    with torch.device("cuda"):
        unet = UNet2DConditionModel(
            sample_size=64, in_channels=4, out_channels=4, layers_per_block=2,
            block_out_channels=(320, 640, 1280, 1280),
            down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
            up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
            cross_attention_dim=768, attention_head_dim=8)
        vae = AutoencoderKL(
            in_channels=3, out_channels=3, latent_channels=4, sample_size=512,
            down_block_types=("DownEncoderBlock2D",) * 4,
            up_block_types=("UpDecoderBlock2D",) * 4,
            block_out_channels=(128, 256, 512, 512), layers_per_block=2)
    torch.set_default_dtype(torch.float32)
    return unet.eval(), vae.eval()


@torch.no_grad()
def generate(unet, vae, batch, steps, guidance=7.5):
    scheduler = DDIMScheduler(num_train_timesteps=1000, beta_schedule="scaled_linear",
                              beta_start=0.00085, beta_end=0.012, clip_sample=False,
                              set_alpha_to_one=False)
    scheduler.set_timesteps(steps)
    text = torch.randn(2 * batch, 77, 768, device="cuda", dtype=torch.float16)
    latents = torch.randn(batch, 4, 64, 64, device="cuda", dtype=torch.float16)
    for t in scheduler.timesteps:
        noise = unet(torch.cat([latents] * 2), t, encoder_hidden_states=text).sample
        uncond, cond = noise.chunk(2)
        noise = uncond + guidance * (cond - uncond)
        latents = scheduler.step(noise, t, latents).prev_sample
    images = vae.decode(latents / 0.18215).sample
    return images


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--attention-slicing", action="store_true")
    p.add_argument("--vae-slicing", action="store_true")
    args = p.parse_args()
    torch.manual_seed(0)
    unet, vae = make_models()
    if args.attention_slicing:
        unet.set_attention_slice("max")
    if args.vae_slicing:
        vae.use_slicing = True
    start = time.time()
    images = generate(unet, vae, args.batch, args.steps)
    torch.cuda.synchronize()
    print("done: batch %d, %d images %s in %.1f s, peak reserved %d MiB" %
          (args.batch, images.shape[0], tuple(images.shape[1:]), time.time() - start,
           torch.cuda.max_memory_reserved() >> 20))


if __name__ == "__main__":
    main()
