#!/usr/bin/python3
"""The sbrank package around the compiled module (python/sbrank/): a CPU torch tensor analysed in
place (float32 and float64, a transposed view too: the same result as its numpy array, and the
process's peak memory grows by far less than the tensor; half precision goes through the stream,
test_sbrank_stream.py), a tensor without data or of 3 dimensions refused in one line,
sbrank.plot drawing the curve with the bound and the tolerance, and the module docstring's result
fields all present in a result.

  test_sbrank_package.py BUILD_DIR"""
import os
import sys

build = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(build, "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import sbrank  # noqa: E402
from checks import check, finish, peak_rss_growth  # noqa: E402

torch.manual_seed(0)
facts = dict(head="softmax", d=12, bias=1)


def softmax_logprobs(t, m, d, dtype):
    z = torch.randn(t, d, dtype=torch.float64) @ torch.randn(d, m, dtype=torch.float64) + \
        torch.randn(m, dtype=torch.float64)
    return torch.log_softmax(z, -1).to(dtype)


for dtype in (torch.float32, torch.float64):
    lp = softmax_logprobs(900, 400, 12, dtype)
    a = sbrank.analyse(lp, threads=1, **facts)
    b = sbrank.analyse(lp.numpy(), threads=1, **facts)
    check(a["rank"] == b["rank"] == 14 and a["tol"] == b["tol"] and
          np.array_equal(a["singular_values"], b["singular_values"]),
          f"{dtype}: a tensor gives its numpy array's result bit for bit (rank {a['rank']})")
# A transposed view (M x T memory read as T x M): strides pass through, no copy needed.
wide = softmax_logprobs(400, 900, 12, torch.float32).t().contiguous().t()
r = sbrank.analyse(wide, threads=1, **facts)
check(r["rank"] == 14 and not wide.is_contiguous(), "a non-contiguous (transposed) tensor view")

# In place: a 200 MB tensor; the process's peak RSS grows by far less than that while analysed.
# The peak (VmHWM) is reset to the current RSS first (checks.peak_rss_growth), so the float64
# intermediates that made the tensor do not hide a copy.
def peak_growth(matrix):
    return peak_rss_growth(lambda: sbrank.analyse(matrix, method="gram", **facts))


big = softmax_logprobs(50000, 1000, 12, torch.float32)
_, as_array = peak_growth(big.numpy())  # the analysis's own buffers, reading the memory in place
r, as_tensor = peak_growth(big)
size = big.numel() * 4
check(r["rank"] == 14 and as_tensor < as_array + size / 10,
      f"a {size / 1e6:.0f} MB tensor read in place: peak RSS grew by {as_tensor / 1e6:.1f} MB, "
      f"as for its numpy view ({as_array / 1e6:.1f} MB); a copy would add {size / 1e6:.0f} MB")
del big

for tensor, field in ((torch.zeros(3, 4, device="meta"), "on 'meta'"),
                      (torch.zeros(2, 3, 4), "expected 2-D")):
    try:
        sbrank.analyse(tensor, **facts)
        check(False, f"{field}: refused")
    except ValueError as e:
        check(field in str(e) and "\n" not in str(e), f"{field}: one ValueError line: {e}")

# sbrank.plot: sigma_i / sigma_max against i, the bound and the tolerance.
import matplotlib  # noqa: E402
matplotlib.use("Agg")
lp = softmax_logprobs(900, 400, 12, torch.float64)
r = sbrank.analyse(lp, **facts)
ax = sbrank.plot(r)
line = ax.get_lines()[0]
check(np.allclose(line.get_ydata(), r["singular_values"] / r["sigma_max"], equal_nan=True) and
      "rank 14" in line.get_label(), "plot: the curve is sigma_i / sigma_max, labelled with the rank")
xs = [ln.get_xdata()[0] for ln in ax.get_lines()[1:] if ln.get_xdata()[0] == ln.get_xdata()[-1]]
ys = [ln.get_ydata()[0] for ln in ax.get_lines()[1:] if ln.get_ydata()[0] == ln.get_ydata()[-1]]
check(r["bound"] in xs and any(abs(y - r["tol"] / r["sigma_max"]) < 1e-18 for y in ys),
      f"plot: a vertical line at the bound {r['bound']} and a horizontal one at tol / sigma_max")
check(ax.get_yscale() == "log", "plot: a log axis")
try:
    sbrank.plot(sbrank.analyse(lp, method="gram", spectrum=False, **facts))
    check(False, "plot without singular values is refused")
except ValueError as e:
    check("singular_values" in str(e), f"plot without singular values: {e}")

# The docstring's fields are the result's.
documented = []
for line_text in sbrank.__doc__.split("The result is a dict")[1].splitlines()[1:]:
    # "    name, other  what it is": the names before the two spaces
    if line_text.startswith("    ") and not line_text.startswith("     "):
        documented += [w.strip() for w in line_text.strip().split("  ")[0].split(",")]
missing = [k for k in documented if k not in r]
check(len(documented) >= 15 and not missing,
      f"every field the docstring lists is in a result ({len(documented)} listed, missing "
      f"{missing})")
sys.exit(finish())
