"""``python -m gradcore.kernels [--write | --check]``: regenerate (or check) the CUDA
source ``kernels/pointwise_backward.cu`` from the declarations (:func:`.source.main`)."""

import sys

from .source import main

sys.exit(main())
