"""A Lightning training job for `oomlab fit exec`: an image classifier (timm's ViT-S/16 by default,
or a torchvision model) trained for a few steps on random images, at the batch size given. Exit 0
when the steps complete; PyTorch's OutOfMemoryError ends it with its own message and exit 1, as in
any training script. Nothing is downloaded: the weights are random, and so are the images.

  python3 lightning_fit.py --batch N [--model timm:vit_small_patch16_224] [--size 224]
                           [--steps 3] [--classes 100]

--model: timm:NAME (timm.create_model) or a torchvision.models name (resnet50, vit_b_16, ...).
The batch size is also read from OOMLAB_FIT_BATCH when --batch is not given, as `oomlab fit exec`
sets it. The pieces (the model, the data, the trainer) are imported by fit_peers.py, so that the
in-process finders it runs train exactly this job.
"""
import argparse
import os
import sys

import torch

try:
    import lightning as L
except ImportError:  # the older package name
    import pytorch_lightning as L


class RandomImages(torch.utils.data.Dataset):
    """`length` images of size×size with labels, the same on every run (seeded by index)."""

    def __init__(self, length, size, classes):
        self.length, self.size, self.classes = length, size, classes

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        image = torch.randn(3, self.size, self.size, generator=generator)
        label = int(torch.randint(self.classes, (1,), generator=generator))
        return image, label


def build_model(name, classes):
    if name.startswith("timm:"):
        import timm
        return timm.create_model(name[len("timm:"):], pretrained=False, num_classes=classes)
    import torchvision
    return getattr(torchvision.models, name)(weights=None, num_classes=classes)


class Classifier(L.LightningModule):
    """The job: cross-entropy and AdamW. `batch_size` is what Lightning's BatchSizeFinder scales."""

    def __init__(self, model="timm:vit_small_patch16_224", size=224, classes=100, batch_size=32,
                 steps=3):
        super().__init__()
        self.save_hyperparameters()
        self.batch_size = batch_size
        self.net = build_model(model, classes)
        self.loss = torch.nn.CrossEntropyLoss()

    def training_step(self, batch, _index):
        images, labels = batch
        return self.loss(self.net(images), labels)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)

    def train_dataloader(self):
        h = self.hparams
        # Enough images for any trial: a finder runs a few steps at each batch size it tries.
        images = RandomImages(max(self.batch_size, 1) * (h.steps + 2), h.size, h.classes)
        return torch.utils.data.DataLoader(images, batch_size=self.batch_size, shuffle=False,
                                           num_workers=0, drop_last=True)


def make_trainer(steps, **extra):
    return L.Trainer(accelerator="gpu", devices=1, max_steps=steps, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
                     **extra)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=int(os.environ.get("OOMLAB_FIT_BATCH", "0")))
    parser.add_argument("--model", default="timm:vit_small_patch16_224")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--classes", type=int, default=100)
    return parser.parse_args(argv)


def main():
    args = parse()
    if args.batch < 1:
        sys.exit("lightning_fit.py: give --batch N (N >= 1)")
    torch.manual_seed(0)
    model = Classifier(args.model, args.size, args.classes, args.batch, args.steps)
    make_trainer(args.steps).fit(model)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
