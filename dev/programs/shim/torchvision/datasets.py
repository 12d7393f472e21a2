import os

import numpy as np

N_TRAIN = int(os.environ.get("SHIM_N_TRAIN", "256"))
N_TEST = int(os.environ.get("SHIM_N_TEST", "128"))


class _Synth:
    def __init__(self, n, shape, classes, seed, transform=None, target_transform=None):
        rs = np.random.RandomState(seed)
        self.targets = rs.randint(0, classes, size=n)
        base = rs.randint(0, 256, size=(classes,) + shape)
        noise = rs.randint(-60, 60, size=(n,) + shape)
        self.data = np.clip(base[self.targets] + noise, 0, 255).astype(np.uint8)
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        x, y = self.data[i], int(self.targets[i])
        if self.transform is not None:
            x = self.transform(x)
        if self.target_transform is not None:
            y = self.target_transform(y)
        return x, y


class MNIST(_Synth):
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(N_TRAIN if train else N_TEST, (28, 28), 10, 1 if train else 2,
                         transform, target_transform)


FashionMNIST = MNIST


class CIFAR10(_Synth):
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(N_TRAIN if train else N_TEST, (32, 32, 3), 10, 3 if train else 4,
                         transform, target_transform)


class FakeData(_Synth):
    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        c, h, w = image_size
        super().__init__(min(size, N_TRAIN), (h, w, c), num_classes, 5, transform,
                         target_transform)
