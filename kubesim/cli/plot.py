"""Pictures: memory over watch restarts, one line per store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubesim.sim.restarts import RestartReport


def plot_restarts(reports: Sequence[RestartReport], path: str, *, title: str = "") -> None:
    """Retained memory and structure sizes over restarts, all stores on one figure (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise ImportError("drawing needs matplotlib: pip install 'kubesim[plot]'") from exc
    size_keys = sorted({k for r in reports for round_ in r.rounds for k in round_.sizes})
    panels = 1 + (1 if size_keys else 0)
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.4), squeeze=False)
    memory_ax = axes[0][0]
    for report in reports:
        xs = [r.round for r in report.rounds]
        ys = [r.retained_bytes / 1024 for r in report.rounds]
        verdict = (
            f"grows {report.growth_per_round / 1024:,.1f} KiB/restart"
            if report.grows
            else "bounded"
        )
        memory_ax.plot(xs, ys, marker="o", markersize=3, label=f"{report.name} ({verdict})")
    memory_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    memory_ax.set_xlabel("watch restarts")
    memory_ax.set_ylabel("retained by the store (KiB, tracemalloc)")
    memory_ax.set_title("Memory over watch restarts")
    memory_ax.set_ylim(bottom=0)
    memory_ax.grid(True, alpha=0.3)
    memory_ax.legend(fontsize=8)
    if size_keys:
        sizes_ax = axes[0][1]
        for report in reports:
            for key in size_keys:
                xs = [r.round for r in report.rounds if key in r.sizes]
                ys = [r.sizes[key] for r in report.rounds if key in r.sizes]
                if xs:
                    sizes_ax.plot(xs, ys, marker=".", label=f"{report.name}: {key}")
        sizes_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        sizes_ax.set_xlabel("watch restarts")
        sizes_ax.set_ylabel("entries")
        sizes_ax.set_title("Store structures")
        sizes_ax.set_ylim(bottom=0)
        sizes_ax.grid(True, alpha=0.3)
        sizes_ax.legend(fontsize=8)
    first = reports[0] if reports else None
    if first is not None:
        fig.suptitle(
            title
            or f"{first.pods} pods x {first.containers} containers, {first.restarts} restarts "
            f"({first.fault}), seed {first.seed}",
            fontsize=10,
        )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
