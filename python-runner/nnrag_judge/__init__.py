"""The judge: validates one pulled block file, tier by tier, and says whether it behaves like its original.

Tiers, in order: parsed, compiled, names-closed (no undefined global name), imported, instantiated, forward,
equivalent (the copy's parameters, outputs and gradients are bit-identical to the original's on every argument
set tried).

The split follows pytest-xdist's: the modules a *worker* runs (`zygote.WORKER_MODULES`: `protocol`, `loading`,
`arguments`, `inputs`, `evidence`, `recipe`, `observe`, `repair`, `worker`) are loaded into a private namespace of
the zygote, a process the judge starts with exec and never gives a job; every worker is forked from it (or from a
template it forked) and is the only process that runs a block's code; they import nothing of the judge's side
(`static`, `supervise`, `verdict`, `equivalence`, `judge`, `serve`). The copy and the original are never run in one
process, and no worker is a fork of the judge: the original's results live only in the judge.

Standard library only: torch is imported by the zygote (once) and the workers, never by the judge.
"""
