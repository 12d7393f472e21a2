"""Run a PyTorch program with gradcore in torch's place, as a user would try it.

    python dev/programs/run_as_torch.py path/to/program.py [args...]

``sys.modules["torch"]`` is gradcore (so ``import torch``, ``import torch.nn as nn``,
``from torch.utils.data import DataLoader`` all reach gradcore's modules); the program
then runs as ``__main__``. Used to count how many public small-network programs run
unchanged (issue 14's measure); the programs themselves are fetched, not kept here.
"""

from __future__ import annotations

import os
import runpy
import sys

import gradcore


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.modules["torch"] = gradcore
    path = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # as `python path` does
    runpy.run_path(path, run_name="__main__")


if __name__ == "__main__":
    main()
