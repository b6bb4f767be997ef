"""Pictures: memory over watch restarts, one line per store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubesim.sim.restarts import RestartReport


def legend(report: RestartReport) -> str:
    """A store's legend entry, from its verdict (never "bounded" beside a climbing line)."""
    verdict = report.verdict
    if verdict == "GROWS":
        if report.violation is not None:
            detail = f"{report.growth_per_round / 1024:+,.1f} KiB/restart"
        else:
            detail = ", ".join(f"{v.entry} grows" for v in report.sizes_violations)
        return f"{report.name}: GROWS ({detail})"
    if report.failure is not None:
        return f"{report.name}: {verdict} at round {report.failure.round}"
    return f"{report.name}: BOUNDED ({report.growth_per_round:+,.0f} B/restart)"


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
        memory_ax.plot(xs, ys, marker="o", markersize=3, label=legend(report))
    memory_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    memory_ax.set_xlabel("watch restarts")
    memory_ax.set_ylabel("retained by the store (KiB, reachable objects)")
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
                    grows = any(v.entry == key for v in report.sizes_violations)
                    sizes_ax.plot(
                        xs,
                        ys,
                        marker=".",
                        label=f"{report.name}: {key}" + (" (GROWS)" if grows else ""),
                    )
        sizes_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        sizes_ax.set_xlabel("watch restarts")
        sizes_ax.set_ylabel("entries")
        sizes_ax.set_title("Store structures")
        sizes_ax.set_ylim(bottom=0)
        sizes_ax.grid(True, alpha=0.3)
        sizes_ax.legend(fontsize=8)
    first = reports[0] if reports else None
    if first is not None:
        verdicts = "; ".join(f"{r.name} {r.verdict}" for r in reports)
        fig.suptitle(
            title
            or f"{first.pods} pods x {first.containers} containers, {first.restarts} restarts "
            f"({first.fault}), seed {first.seed}: {verdicts}",
            fontsize=10,
        )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
