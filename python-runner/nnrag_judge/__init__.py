"""The judge: validates one pulled block file, tier by tier, and says whether it behaves like its original.

Tiers, in order: parsed, compiled, names-closed (no undefined global name), imported, instantiated, forward,
equivalent (the copy's parameters, outputs and gradients are bit-identical to the original's on every argument
set tried).

The split follows pytest-xdist's: the modules a *worker* runs (`supervise.WORKER_MODULES`: `protocol`, `loading`,
`arguments`, `inputs`, `evidence`, `recipe`, `observe`, `repair`, `worker`) are loaded afresh into a private
namespace of each forked worker, which is the only process that runs a
block's code; they import nothing of the judge's side (`static`, `supervise`, `verdict`, `equivalence`, `judge`,
`serve`). The copy and the original are never run in one process: each side has its own worker, forked from the
judge before any block code ran, and the judge compares what the two sent.

Standard library only: torch is imported by the workers (and warmed by `serve`), never needed by the judge.
"""
