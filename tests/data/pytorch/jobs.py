"""The PyTorch jobs whose snapshots and real frontiers oomlab's `torch` allocator is checked
against. Each job is a function of (step) that does one step of work; `prepare` builds the model
and the warm-up step's inputs. Shapes are drawn from a seeded generator, so every process runs
the same sequence of requests.

  train_fixed   a 4-layer transformer language model trained with AdamW, fixed batch and length
  infer_varlen  the same model in inference (no_grad), batch and sequence length change each step
  train_varlen  training with a sequence length that changes each step
  grow          training while the batch doubles (4, 8, ... 64, two steps each): the job that is
                also run under set_per_process_memory_fraction until it runs out of memory
"""
import random

import torch
import torch.nn as nn

VOCAB = 8192


class LanguageModel(nn.Module):
    def __init__(self, d_model=512, heads=8, ff=2048, layers=4):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


class Job:
    """A job: `warmup()` once, then `steps` calls of `step(i)`."""

    def __init__(self, name, steps, train, shapes):
        self.name = name
        self.steps = steps
        self.train = train
        self.shapes = shapes  # i -> (batch, seq); i = -1 is the warm-up step

    def prepare(self, device="cuda"):
        torch.manual_seed(0)
        self.model = LanguageModel().to(device)
        if self.train:
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        else:
            self.model.eval()
        self.device = device

    def run_step(self, i):
        batch, seq = self.shapes(i)
        gen = torch.Generator(device="cpu").manual_seed(1000 + i)
        tokens = torch.randint(0, VOCAB, (batch, seq), generator=gen).to(self.device)
        if self.train:
            logits = self.model(tokens)
            loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), tokens.view(-1))
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            return loss.item()
        with torch.no_grad():
            logits = self.model(tokens)
            return logits.float().mean().item()

    def warmup(self):
        self.run_step(-1)

    def run(self):
        for i in range(self.steps):
            self.run_step(i)


def _varying(seed, batches, seqs, first):
    rng = random.Random(seed)
    table = [(rng.choice(batches), rng.choice(seqs)) for _ in range(64)]
    return lambda i: first if i < 0 else table[i]


def _grow(i):
    if i < 0:
        return (4, 256)
    return (4 << (i // 2), 256)


JOBS = {
    "train_fixed": Job("train_fixed", 3, True, lambda i: (24, 256)),
    "infer_varlen": Job("infer_varlen", 24, False,
                        _varying(7, [8, 16, 24, 32, 48, 64], list(range(64, 513, 32)), (32, 256))),
    "train_varlen": Job("train_varlen", 8, True,
                        _varying(11, [16], list(range(64, 513, 16)), (16, 256))),
    "grow": Job("grow", 10, True, _grow),
}
