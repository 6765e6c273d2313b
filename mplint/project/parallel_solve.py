"""Pass 0 side by side: the projects of one run solved in parallel worker processes.

A run over several projects (a monorepo of examples, each example its own project)
solves every project's policies in the parent before the engine's workers fork, and
that was serial: the largest part of a cold run's wall time. Projects are independent,
so each is solved in a short-lived process forked from the parent (it inherits the
indexes and their text scans); what it derived (the project store's entries: scans,
`ast` tables, summaries with what each relied on) comes back, and the parent's index
adopts it as if it had been read from the project store. The parent then solves from
those entries, checking each summary's dependencies as for a stored one, which costs a
fraction of building them. The answer is the parent's own: a summary that does not hold
there is built again, as always.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mplint.project.index import ProjectIndex


def solve_in_parallel(indexes: list["ProjectIndex"], workers: int) -> None:
    """Solve the projects whose solution is not stored yet (`ProjectIndex.unsolved`) in up
    to `workers` processes, largest first; a project whose process fails is left to the
    parent. A warm run (every summary stored) starts no process."""
    candidates = [index for index in indexes if index.unsolved()]
    if workers < 2 or len(candidates) < 2:
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if "fork" not in multiprocessing.get_all_start_methods():
        return  # the worker must inherit the indexes
    candidates.sort(key=lambda index: -len(index.paths))
    with ProcessPoolExecutor(min(workers, len(candidates)), mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(_solve_one, index.root, index.store.enabled): index for index in candidates}
        for future in as_completed(futures):
            try:
                entries = future.result()
            except Exception:  # noqa: BLE001  (the parent solves it itself)
                continue
            futures[future].store.adopt(entries)


def _solve_one(root: str, cache: bool) -> dict[str, dict[str, Any]]:
    """In a forked worker: solve the index of `root` (inherited from the parent) and
    return its store entries."""
    from mplint.core.gc_pause import paused_gc
    from mplint.project import index as index_module

    index = index_module._INDEXES[(root, cache)]
    with paused_gc():
        index.solve()
    return index.store.entries
