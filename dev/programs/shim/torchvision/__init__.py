"""Stand-in torchvision for running programs offline: synthetic datasets of the real
shapes, the few transforms used, a no-op save_image. Uses whatever `torch` is."""
from . import datasets, transforms, utils  # noqa
