"""The in-process batch-size finders `oomlab fit exec` is set against, on lightning_fit.py's job:
Lightning's BatchSizeFinder (Tuner.scale_batch_size, mode binsearch: doubling from --lo, then
bisection) and accelerate's find_executable_batch_size (from --hi down, on each OOM). Each runs
every trial in this one process, as they do for their users. Run it under the same card cut as
`oomlab fit exec` (the ballast then applies to them too), one finder per process:

  oomlab exec --budget 3GiB --no-snapshot -- python3 fit_peers.py lightning --lo 1 --hi 256
  oomlab exec --budget 3GiB --no-snapshot -- python3 fit_peers.py accelerate --lo 1 --hi 256

Prints one JSON line: the finder, its answer, the seconds it took (imports excluded, the model's
construction included), the batch sizes it tried with how each ended as far as it says, and the
versions. With --check, the answer is then trained at in the same process, as a user would next:
whether that completes is added ("answer_completed").
"""
import argparse
import json
import logging
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lightning_fit import Classifier, L, make_trainer  # noqa: E402


class Said(logging.Handler):
    """What Lightning's tuner says of each trial ("Batch size 32 succeeded, trying ...")."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        text = record.getMessage()
        if "atch size" in text:
            self.lines.append(text)


def lightning_binsearch(args):
    said = Said()
    for name in ("lightning.pytorch", "pytorch_lightning", "lightning"):
        logging.getLogger(name).addHandler(said)
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        from lightning.pytorch.tuner import Tuner
    except ImportError:
        from pytorch_lightning.tuner import Tuner
    model = Classifier(args.model, args.size, args.classes, args.lo, args.steps)
    trainer = make_trainer(args.steps)
    answer = Tuner(trainer).scale_batch_size(model, mode="binsearch", init_val=args.lo,
                                             max_trials=args.max_trials,
                                             steps_per_trial=args.steps)
    return answer, said.lines, model


def accelerate_descending(args):
    from accelerate.utils import find_executable_batch_size
    tried = []

    @find_executable_batch_size(starting_batch_size=args.hi)
    def train(batch_size):
        tried.append(batch_size)
        model = Classifier(args.model, args.size, args.classes, batch_size, args.steps)
        make_trainer(args.steps).fit(model)
        return batch_size

    answer = train()
    # Every value tried but the last ran out of memory: that is how the decorator goes on.
    return answer, [f"{b}: {'completed' if b == answer else 'oom'}" for b in tried], None


def versions():
    out = {"torch": torch.__version__, "lightning": L.__version__}
    try:
        import accelerate
        out["accelerate"] = accelerate.__version__
    except ImportError:
        out["accelerate"] = None
    return out


def check(args, answer):
    """Trains at the answer in this same process, as a user would next."""
    try:
        model = Classifier(args.model, args.size, args.classes, answer, args.steps)
        make_trainer(args.steps).fit(model)
        torch.cuda.synchronize()
        return True
    except torch.cuda.OutOfMemoryError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("finder", choices=["lightning", "accelerate"])
    parser.add_argument("--lo", type=int, default=1)
    parser.add_argument("--hi", type=int, default=256)
    parser.add_argument("--max-trials", type=int, default=25)
    parser.add_argument("--model", default="timm:vit_small_patch16_224")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    start = time.perf_counter()
    finder = lightning_binsearch if args.finder == "lightning" else accelerate_descending
    answer, trials, _model = finder(args)
    seconds = time.perf_counter() - start
    line = {"finder": {"lightning": "lightning BatchSizeFinder (binsearch)",
                       "accelerate": "accelerate find_executable_batch_size"}[args.finder],
            "answer": answer, "seconds": round(seconds, 2), "trials": trials,
            "model": args.model, "size": args.size, "steps": args.steps,
            "versions": versions()}
    if args.check:
        torch.cuda.empty_cache()
        line["answer_completed"] = check(args, answer)
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
