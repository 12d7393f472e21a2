"""The ``gradcore`` command: ``gradcore train`` (an MLP on handwritten digits) and
``gradcore compare`` (CPU against GPU backward time) and ``gradcore bench`` (CPU-against-GPU
sweeps, ``gradcore/benchmark.py``).

``python -m gradcore`` is the same command; ``gradcore`` alone prints its usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import gradcore as gc

from .profile import can_count

__all__ = ["main"]


class OptionError(Exception):
    """A bad command-line option: reported in one line, without a traceback."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise OptionError(f"{self.prog}: {message}")


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _widths(text):
    try:
        widths = [int(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected hidden widths like 128 or 256,128, got {text!r}") from None
    if not widths or any(w <= 0 for w in widths):
        raise argparse.ArgumentTypeError(
            f"expected hidden widths like 128 or 256,128, got {text!r}")
    return widths


def _parser():
    p = _Parser(prog="gradcore", description="gradcore: PyTorch-style autograd on NumPy/CuPy")
    # not required=True: without a command, main() prints the whole help (what each
    # command does), not argparse's one line naming the missing argument
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    t = sub.add_parser("train", help="train an MLP or a small CNN on scikit-learn's "
                                     "handwritten digits")
    t.add_argument("--device", default=None,
                   help="cpu, cuda or cuda:N (default: GRADCORE_DEVICE, else the best available)")
    t.add_argument("--epochs", type=_positive_int, default=30)
    t.add_argument("--batch-size", type=_positive_int, default=32)
    t.add_argument("--lr", type=_positive_float, default=None,
                   help="learning rate (default: 1e-3 for adam/adamw, 0.1 for sgd)")
    t.add_argument("--model", choices=["mlp", "cnn"], default="mlp",
                   help="mlp: Linear and ReLU layers (--hidden); cnn: two blocks of "
                        "Conv2d, BatchNorm2d, ReLU and MaxPool2d, then Linear (default: mlp)")
    t.add_argument("--hidden", type=_widths, default=[128],
                   help="the MLP's hidden layer widths, comma separated (default: 128)")
    t.add_argument("--optimizer", choices=["adam", "adamw", "sgd"], default="adam")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--save", default=None, metavar="PATH",
                   help="save the model and optimizer state (safetensors) to PATH")
    t.add_argument("--no-compile", action="store_true",
                   help="run each step eagerly (by default the step is compiled with "
                        "gc.compile: replayed on the CPU, one CUDA graph on a GPU)")
    t.add_argument("--no-progress", action="store_true",
                   help="no progress bar (there is none when stderr is not a terminal)")
    c = sub.add_parser("compare", help="time an MLP backward pass on the CPU and on the GPU")
    c.add_argument("--batch-size", type=_positive_int, default=256)
    c.add_argument("--width", type=_positive_int, default=512)
    c.add_argument("--repeat", type=_positive_int, default=20)
    b = sub.add_parser("bench", help="time suites of backward passes over sizes, CPU and GPU")
    b.add_argument("--suite", choices=["mlp", "pointwise", "broadcast", "step", "conv", "all"],
                   default="all")
    b.add_argument("--sizes", type=_widths, default=None,
                   help="sizes, comma separated (default: each suite's own sweep)")
    b.add_argument("--devices", type=_devices, default=None,
                   help="comma separated: cpu, cuda, cuda:N; each must be usable (default: "
                        "the CPU, and the GPU when one is usable)")
    b.add_argument("--repeat", type=_positive_int, default=10)
    b.add_argument("--compare-torch", action="store_true",
                   help="also time PyTorch, on each device it can use")
    b.add_argument("--json", default=None, metavar="PATH", help="write the results to PATH")
    b.add_argument("--plot", default=None, metavar="PATH", help="write a PNG to PATH")
    b.add_argument("--no-progress", action="store_true", help="no progress lines")
    b.add_argument("--no-compile", action="store_true",
                   help="do not also time the step suite compiled (gc.compile)")
    b.add_argument("--profile", action="store_true",
                   help="instead of timing, count the kernels one run launches and the bytes "
                        "they move, against the minimum (see gc.profile)")
    return p


def _devices(text):
    names = [d.strip() for d in text.split(",") if d.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected devices like cpu,cuda, got {text!r}")
    for name in names:
        try:
            gc.backend.device(name)  # (the lenient parser: 'CUDA', ' cpu')
        except (ValueError, TypeError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return names


# ---- data ------------------------------------------------------------------------------------
def load_digits_split(seed: int):
    """scikit-learn's 8x8 digits (shipped with it: no download), scaled to [0, 1], split
    80/20 with a seeded shuffle."""
    try:
        from sklearn.datasets import load_digits  # optional: the examples extra
    except ImportError:
        raise OptionError("gradcore train needs scikit-learn: pip install 'gradcore[examples]'"
                          ) from None
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    cut = int(round(0.8 * len(y)))
    return (x[order[:cut]], y[order[:cut]]), (x[order[cut:]], y[order[cut:]])


def build_model(n_in: int, hidden: list[int], n_out: int, device=None):
    """The MLP, its parameters made on ``device`` (not on the default device and then
    moved: ``--device cpu`` works whatever ``GRADCORE_DEVICE`` says)."""
    layers = []
    for width in hidden:
        layers += [gc.nn.Linear(n_in, width, device=device), gc.nn.ReLU()]
        n_in = width
    layers.append(gc.nn.Linear(n_in, n_out, device=device))
    return gc.nn.Sequential(*layers)


def build_cnn(n_out: int = 10, device=None):
    """The LeNet-style network of ``--model cnn`` for 1x8x8 images: two blocks of a 3x3
    convolution (padding 1), batch norm, ReLU and 2x2 max pooling (16 then 32
    channels: 8x8 -> 4x4 -> 2x2), then a linear layer."""
    nn = gc.nn
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 16, 3, padding=1, device=device), nn.BatchNorm2d(16, device=device),
        nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, device=device), nn.BatchNorm2d(32, device=device),
        nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, n_out, device=device))


def _optimizer(name, params, lr):
    if name == "sgd":
        return gc.optim.SGD(params, lr=lr or 0.1, momentum=0.9)
    cls = gc.optim.Adam if name == "adam" else gc.optim.AdamW
    return cls(params, lr=lr or 1e-3)


def _progress(total, desc, enabled):
    """A tqdm bar on stderr, only when stderr is a terminal (in a log or a pipe a bar is a
    fragment per update) and tqdm is installed; the epoch lines on stdout say the rest."""
    if not (enabled and sys.stderr is not None and sys.stderr.isatty()):
        return None
    try:
        from tqdm import tqdm  # optional: the examples extra
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="sample", leave=False, dynamic_ncols=True)


def evaluate(model, x, y, batch_size=512):
    model.eval()
    correct, loss_sum = 0, 0.0
    with gc.no_grad():
        for i in range(0, len(y), batch_size):
            logits = model(x[i:i + batch_size])
            target = y[i:i + batch_size]
            loss_sum += gc.nn.functional.cross_entropy(logits, target, reduction="sum").item()
            correct += int((logits.argmax(1) == target).sum().item())
    model.train()
    return loss_sum / len(y), correct / len(y)


def _device(spec):
    """The device ``--device`` names, else the default one (``GRADCORE_DEVICE``); either
    must be usable: the error names where the device came from and why it cannot be used."""
    try:
        dev = gc.get_default_device() if spec is None else gc.backend.device(spec)
        dev.math  # noqa: B018  (an unusable CUDA device raises here, saying why)
    except (ValueError, TypeError, gc.backend.CudaUnavailableError) as exc:
        if spec is not None:
            source = f"--device {spec}"
        elif "GRADCORE_DEVICE" in os.environ:
            source = f"GRADCORE_DEVICE={os.environ['GRADCORE_DEVICE']} (or pass --device)"
        else:  # set in-process by gc.set_default_device
            source = "the default device"
        raise OptionError(f"gradcore train: {source}: {exc}") from None
    return dev


def train(args) -> int:
    device = _device(args.device)
    (xtr, ytr), (xte, yte) = load_digits_split(args.seed)
    gc.manual_seed(args.seed)
    cnn = args.model == "cnn"
    model = build_cnn(10, device) if cnn else build_model(xtr.shape[1], args.hidden, 10, device)
    opt = _optimizer(args.optimizer, model.parameters(), args.lr)
    loss_fn = gc.nn.CrossEntropyLoss()
    x_train, y_train = gc.tensor(xtr, device=device), gc.tensor(ytr, device=device)
    x_test, y_test = gc.tensor(xte, device=device), gc.tensor(yte, device=device)
    n = len(ytr)
    shuffle = np.random.default_rng(args.seed + 1)
    what = ("a CNN (conv-bn-relu-pool 16, 32; linear 10)" if cnn else
            f"an MLP 64-{'-'.join(map(str, args.hidden))}-10")
    print(f"gradcore {gc.__version__}: training {what} "
          f"on {n} digits ({len(yte)} held out) on {device}, {args.optimizer}, "
          f"{args.epochs} epochs of batch {args.batch_size}")

    def train_step(idx):
        # the batch is gathered inside the step, so that a compiled step captures it
        # too: on a GPU each op left outside costs a launch from Python every step
        xb, yb = x_train[idx], y_train[idx]
        loss = loss_fn(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach() * len(idx)

    step = train_step if args.no_compile else gc.compile(train_step)
    start = time.perf_counter()
    epoch = 0
    try:
        for epoch in range(1, args.epochs + 1):
            order = gc.tensor(shuffle.permutation(n), device=device)
            bar = _progress(n, f"epoch {epoch}/{args.epochs}", not args.no_progress)
            t0, seen, batch_losses = time.perf_counter(), 0, []
            for i in range(0, n, args.batch_size):
                idx = order[i:i + args.batch_size]
                batch_loss = step(idx)
                batch_losses.append(batch_loss)
                seen += len(idx)
                if bar is not None:
                    if (i // args.batch_size) % 10 == 0:  # .item() waits for the device
                        rate = seen / max(time.perf_counter() - t0, 1e-9)
                        bar.set_postfix(loss=f"{batch_loss.item() / len(idx):.4f}",
                                        rate=f"{rate:,.0f}/s")
                    bar.update(len(idx))
            loss_sum = gc.stack(batch_losses).sum()  # (one read of the device per epoch)
            if bar is not None:
                bar.close()
            rate = seen / max(time.perf_counter() - t0, 1e-9)
            test_loss, test_acc = evaluate(model, x_test, y_test)
            print(f"epoch {epoch:3d}  train loss {loss_sum.item() / seen:.4f}  "
                  f"test loss {test_loss:.4f}  test accuracy {test_acc:6.2%}  "
                  f"({rate:,.0f} samples/s)")
    except KeyboardInterrupt:
        print(f"\ninterrupted in epoch {epoch}", file=sys.stderr)
        if args.save:
            _save(model, opt, args, epoch)
        return 130
    elapsed = time.perf_counter() - start
    _, test_acc = evaluate(model, x_test, y_test)
    print(f"final test accuracy {test_acc:.2%} on {len(yte)} held-out digits "
          f"({elapsed:.1f} s on {device})")
    if args.save:
        _save(model, opt, args, args.epochs)
    return 0


def _save(model, opt, args, epoch):
    gc.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch,
             "model_type": args.model, "hidden": list(args.hidden), "seed": args.seed},
            args.save)
    print(f"saved model and optimizer state to {args.save}")


# ---- compare ---------------------------------------------------------------------------------
def _backward_time(device, batch, width, repeat):
    gc.manual_seed(0)
    model = build_model(784, [width, width], 10, device)
    x = gc.randn(batch, 784, device=device)
    y = gc.randint(0, 10, (batch,), device=device)
    loss_fn = gc.nn.CrossEntropyLoss()
    times = []
    for _ in range(repeat + 3):
        loss = loss_fn(model(x), y)
        model.zero_grad()
        _synchronize(device)
        t0 = time.perf_counter()
        loss.backward()
        _synchronize(device)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[3:]))


def _synchronize(device):
    if device.type == "cuda":
        device.xp.cuda.get_current_stream().synchronize()


def compare(args) -> int:
    cpu_t = _backward_time(gc.device("cpu"), args.batch_size, args.width, args.repeat)
    shape = f"MLP 784-{args.width}-{args.width}-10, batch {args.batch_size}"
    print(f"backward of an {shape}: CPU {cpu_t * 1e3:.2f} ms")
    if not gc.cuda.is_available():
        print(f"no GPU found ({gc.cuda.unavailable_reason()}): only the CPU figure is shown")
        return 0
    gpu_t = _backward_time(gc.device("cuda"), args.batch_size, args.width, args.repeat)
    print(f"backward of an {shape}: GPU {gpu_t * 1e3:.2f} ms ({cpu_t / gpu_t:.1f}x the CPU)")
    return 0


# ---- bench -----------------------------------------------------------------------------------
def bench(args) -> int:
    from . import benchmark  # only `gradcore bench` needs it: train and compare start without


    suites = (list(benchmark.SUITES.values()) if args.suite == "all"
              else [benchmark.SUITES[args.suite]])
    if args.profile:
        for given, option in ((args.json, "--json"), (args.plot, "--plot"),
                              (args.compare_torch, "--compare-torch")):
            if given:
                raise OptionError(f"gradcore bench: --profile cannot be combined with {option}")
    # what a sweep needs is checked before it runs, not found missing after it
    if args.plot:
        missing = benchmark.plot_unavailable_reason()
        if missing:
            raise OptionError(f"gradcore bench: {missing}")
    devices = _bench_devices(args.devices)
    if args.profile:
        return _bench_profile(benchmark, suites, devices, args.sizes)
    compare_torch = args.compare_torch
    if compare_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("--compare-torch: PyTorch is not installed (pip install torch): skipped")
            compare_torch = False
    results = benchmark.run(suites, devices, args.sizes, args.repeat, compare_torch,
                            progress=not args.no_progress, compile=not args.no_compile)
    print(f"median of {args.repeat} runs after {benchmark.WARMUP} warm-up runs")
    for suite in suites:
        print(f"  {suite.name}: {suite.what}")
    print(benchmark.format_table(results, suites))
    machine = benchmark.machine_description(devices, compare_torch)
    if args.json:
        settings = {"suites": [s.name for s in suites], "sizes": args.sizes,
                    "devices": [str(d) for d in devices], "repeat": args.repeat,
                    "warmup": benchmark.WARMUP, "compare_torch": compare_torch}
        benchmark.write_json(args.json, results, suites, machine, settings)
        print(f"wrote {args.json}")
    if args.plot:
        if not benchmark.plot(args.plot, results, suites, machine):  # checked above
            print(f"gradcore bench: {benchmark.PLOT_MISSING}", file=sys.stderr)
            return 1
        print(f"wrote {args.plot}")
    return 0


def _bench_devices(names):
    """The devices ``gradcore bench`` times. Named with ``--devices``, each must be usable:
    one that is not is an error naming it and why. By default, the CPU and, when one is
    usable, the GPU (one line says why not otherwise)."""
    if names is None:
        if gc.cuda.is_available():
            return [gc.device("cpu"), gc.device("cuda")]
        print(f"no GPU found ({gc.cuda.unavailable_reason()}): running the CPU side only")
        return [gc.device("cpu")]
    devices = []
    for name in names:
        dev = gc.backend.device(name)
        try:
            dev.math  # noqa: B018  (an unusable CUDA device raises here, saying why)
        except gc.backend.CudaUnavailableError as exc:
            raise OptionError(f"gradcore bench: --devices {name}: {exc}") from None
        if dev not in devices:  # cuda and cuda:0 are one device
            devices.append(dev)
    return devices


def _bench_profile(benchmark, suites, devices, sizes) -> int:
    """``gradcore bench --profile``: per suite and size, the kernels one run launches."""
    counted = [d for d in devices if can_count(d)]
    for dev in devices:
        if dev not in counted:
            print(f"{dev}: not counted (CuPy's arrays cannot be instrumented); the count does "
                  "not depend on the device" + ("" if counted else ": counting on the CPU"))
    for suite in suites:
        for size in sizes or [benchmark.PROFILE_SIZES[suite.name]]:
            for dev in counted or [gc.device("cpu")]:
                prof = benchmark.profile_suite(suite, dev, size)
                print(f"\n{suite.name} at size {size} on {dev}: {suite.what}")
                print(prof.table())
    return 0


def main(argv=None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:  # `gradcore` alone: the usage, as for a missing argument
            parser.print_help(sys.stderr)
            return 2
        if args.command == "train":
            return train(args)
        if args.command == "bench":
            return bench(args)
        return compare(args)
    except OptionError as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 2
    except gc.backend.CudaUnavailableError as exc:  # GRADCORE_DEVICE=cuda without a GPU
        print(f"gradcore: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
