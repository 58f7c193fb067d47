"""pass@k: the chance that at least one of k attempts drawn from n passes, estimated without bias
from n attempts of which c passed (Chen et al. 2021, "Evaluating Large Language Models Trained on
Code"): ``1 - C(n-c, k) / C(n, k)``. An attempt that could not be graded counts as not passed."""

from __future__ import annotations

from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:  # every draw of k holds a pass
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_at_all(n: int, c: int) -> dict[str, float]:
    """``{"1": pass@1, ..., "n": pass@n}``; rounded to 6 places for reports."""
    return {str(k): round(pass_at_k(n, c, k), 6) for k in range(1, n + 1)}
