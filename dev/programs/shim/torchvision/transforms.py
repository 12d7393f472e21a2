import numpy as np
import torch


class Compose:
    def __init__(self, ts):
        self.ts = ts

    def __call__(self, x):
        for t in self.ts:
            x = t(x)
        return x


class ToTensor:
    def __call__(self, a):
        a = np.asarray(a)
        if a.ndim == 2:
            a = a[:, :, None]
        return torch.tensor(a.transpose(2, 0, 1).astype(np.float32) / 255.0)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, t):
        m = torch.tensor(list(self.mean), dtype=torch.float32).view(-1, 1, 1)
        s = torch.tensor(list(self.std), dtype=torch.float32).view(-1, 1, 1)
        return (t - m) / s


class _Id:
    def __init__(self, *a, **k):
        pass

    def __call__(self, x):
        return x


Resize = CenterCrop = RandomCrop = RandomHorizontalFlip = Grayscale = _Id


class Lambda:
    def __init__(self, f):
        self.f = f

    def __call__(self, x):
        return self.f(x)
