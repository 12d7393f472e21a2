"""numdiff.py A B: the lines of two outputs compared, their numbers within TOL (relative)."""
import re, sys
a = open(sys.argv[1]).read().splitlines()
b = open(sys.argv[2]).read().splitlines()
num = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?")
worst = 0.0
bad = 0
for i in range(max(len(a), len(b))):
    la = a[i] if i < len(a) else "<none>"
    lb = b[i] if i < len(b) else "<none>"
    na, nb = num.findall(la), num.findall(lb)
    if num.sub("#", la) != num.sub("#", lb) or len(na) != len(nb):
        print(f"LINE {i} differs:\n  torch: {la}\n  gc:    {lb}"); bad += 1; continue
    for x, y in zip(na, nb):
        x, y = float(x), float(y)
        r = abs(x - y) / max(1e-3, abs(x))
        worst = max(worst, r)
        if r > float(__import__("os").environ.get("TOL", "1e-2")):
            print(f"LINE {i} value: torch {x} gc {y}\n  torch: {la}\n  gc:    {lb}"); bad += 1; break
print(f"lines torch {len(a)} gc {len(b)}; worst rel diff {worst:.2e}; bad lines {bad}")
