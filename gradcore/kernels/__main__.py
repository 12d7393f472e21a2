"""``python -m gradcore.kernels [--write | --check]``: regenerate (or check) the CUDA
source ``kernels/pointwise_backward.cu`` from the declarations (:func:`.source.main`)."""

import sys

from .source import main

if __name__ == "__main__":  # (importing it, as a docs build does, runs nothing)
    sys.exit(main())
