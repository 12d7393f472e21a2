"""Optimizers and learning-rate schedules, as ``torch.optim``.

>>> import gradcore as gc
>>> w = gc.nn.Parameter(gc.tensor([3.0]))
>>> opt = gc.optim.SGD([w], lr=0.25)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w * w).sum().backward()   # gradient 2w: each step halves w
...     opt.step()
>>> w.item()
0.375
"""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon",
           "SparseAdam", "lr_scheduler", "swa_utils"]
