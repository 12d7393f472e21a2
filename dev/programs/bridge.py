"""Run a program with real torch or gradcore-as-torch, offline (shim/torchvision: synthetic
datasets of the real shapes; SHIM_N_TRAIN / SHIM_N_TEST rows).

    python dev/programs/bridge.py torch|gradcore [--bridge TAG] prog.py args...

Compare the two outputs with dev/programs/numdiff.py (numbers within TOL, default 1e-2).

--bridge TAG: make the two runs comparable. The parameters each optimizer receives
are saved (torch run) / loaded (gradcore run) from $BRIDGE_DIR/_init_TAG_k.npz, and
dropout masks, randn/rand(_like)/randint/randperm and RandomSampler orders come from
one shared NumPy stream in both runs.
"""
import os
import runpy
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "shim"))
lib = sys.argv[1]
args = sys.argv[2:]
tag = None
if args[0] == "--bridge":
    tag, args = args[1], args[2:]
if lib == "gradcore":
    import gradcore
    sys.modules["torch"] = gradcore
import torch  # noqa: E402

if tag:
    rs = np.random.RandomState(1234)
    counter = [0]

    def _shape(size):
        if len(size) == 1 and isinstance(size[0], (tuple, list)) or (len(size) == 1 and type(size[0]).__name__ == "Size"):
            size = tuple(size[0])
        return tuple(int(s) for s in size)

    def _fdt(kw):
        return kw.get("dtype") or torch.float32

    def randn(*size, **kw):
        kw.pop("generator", None)
        return torch.tensor(rs.standard_normal(_shape(size)), dtype=_fdt(kw)).requires_grad_(kw.get("requires_grad", False)).to(kw.get("device") or "cpu")

    def rand(*size, **kw):
        kw.pop("generator", None)
        return torch.tensor(rs.random_sample(_shape(size)), dtype=_fdt(kw)).requires_grad_(kw.get("requires_grad", False)).to(kw.get("device") or "cpu")

    def randn_like(x, **kw):
        return torch.tensor(rs.standard_normal(tuple(x.shape)), dtype=kw.get("dtype") or x.dtype)

    def rand_like(x, **kw):
        return torch.tensor(rs.random_sample(tuple(x.shape)), dtype=kw.get("dtype") or x.dtype)

    def randint(*a, size=None, **kw):
        a = list(a)
        if size is None:
            size = a.pop()
        low, high = (0, a[0]) if len(a) == 1 else a
        return torch.tensor(rs.randint(low, high, size=tuple(size)), dtype=kw.get("dtype") or torch.int64)

    def randperm(n, **kw):
        return torch.tensor(rs.permutation(n), dtype=torch.int64)

    F = torch.nn.functional
    _drop = F.dropout

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return input
        keep = (rs.random_sample(tuple(input.shape)) >= p).astype(np.float32) / (1 - p)
        noise = torch.tensor(keep, dtype=input.dtype)
        return input.mul_(noise) if inplace else input * noise

    def _feat(nd):
        def drop(input, p=0.5, training=True, inplace=False):
            if not training or p == 0:
                return input
            sh = tuple(input.shape)
            ms = (sh[0],) + (1,) * (len(sh) - 1) if len(sh) == nd + 1 and nd != 2 else sh[:2] + (1,) * (len(sh) - 2)
            keep = (rs.random_sample(ms) >= p).astype(np.float32) / (1 - p)
            noise = torch.tensor(keep, dtype=input.dtype)
            return input.mul_(noise) if inplace else input * noise
        return drop

    F.dropout1d, F.dropout2d, F.dropout3d = _feat(1), _feat(2), _feat(3)
    for name, f in dict(randn=randn, rand=rand, randn_like=randn_like, rand_like=rand_like,
                        randint=randint, randperm=randperm).items():
        setattr(torch, name, f)
    F.dropout = dropout
    RS = torch.utils.data.RandomSampler

    def _iter(self):
        return iter(rs.permutation(len(self.data_source)).tolist())

    RS.__iter__ = _iter
    Opt = torch.optim.Optimizer
    _init = Opt.__init__
    nopt = [0]

    def init(self, params, *a, **k):
        _init(self, params, *a, **k)
        ps = [p for g in self.param_groups for p in g["params"]]
        path = os.path.join(os.environ.get('BRIDGE_DIR', '/tmp'), f'_init_{tag}_{nopt[0]}.npz')
        nopt[0] += 1
        if lib == "torch":
            np.savez(path, *[p.detach().numpy() for p in ps])
        else:
            z = np.load(path)
            assert len(z.files) == len(ps), (len(z.files), len(ps))
            with torch.no_grad():
                for i, p in enumerate(ps):
                    v = z[f"arr_{i}"]
                    assert tuple(p.shape) == v.shape, (i, p.shape, v.shape)
                    p.copy_(torch.tensor(v))

    Opt.__init__ = init

sys.argv = args
sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
runpy.run_path(args[0], run_name="__main__")
