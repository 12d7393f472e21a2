"""``make demo`` trains for real: the spirals MLP reaches high held-out accuracy."""

import re

from gradcore import demo


def test_demo_learns_spirals(capsys):
    assert demo.main(["--epochs", "300", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    accuracies = [float(a) for a in re.findall(r"held-out accuracy ([\d.]+)%", out)]
    assert accuracies[0] < 80.0          # it starts near chance ...
    assert accuracies[-1] >= 95.0        # ... and learns the spirals
    assert "samples/s" in out
