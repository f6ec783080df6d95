"""accelerate's find_executable_batch_size around any of these programs, as its users run it: every
trial in this one process, the batch size cut by 10% after each error accelerate reads as an OOM.

  python3 accelerate_finder.py --start 32 PROGRAM.py ARGS... {batch} ...

Prints one JSON line: the answer (null when it crashed or found none), the seconds it took, the
batch sizes it tried, and the error that ended it, if any. Under `oomlab exec --budget` the ballast
cuts its card as it cuts oomlab's trials.
"""
import json
import runpy
import sys
import time
import traceback

from accelerate.utils import find_executable_batch_size


def main():
    if len(sys.argv) < 4 or sys.argv[1] != "--start":
        sys.exit(__doc__)
    start = int(sys.argv[2])
    program, args = sys.argv[3], sys.argv[4:]
    tried = []

    @find_executable_batch_size(starting_batch_size=start)
    def trial(batch_size):
        tried.append(batch_size)
        sys.argv = [program] + [a.replace("{batch}", str(batch_size)) for a in args]
        runpy.run_path(program, run_name="__main__")
        return batch_size

    began = time.time()
    answer, error = None, None
    try:
        answer = trial()
    except Exception as e:  # the crash is the finding: say what ended it
        error = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
        traceback.print_exc(limit=2)
    print(json.dumps({"finder": "accelerate", "answer": answer, "seconds": round(time.time() - began, 1),
                      "tried": tried, "error": error}), flush=True)


if __name__ == "__main__":
    main()
