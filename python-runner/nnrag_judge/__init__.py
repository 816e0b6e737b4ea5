"""The judge: validates one pulled block file, tier by tier, and says whether it behaves like its original.

Tiers, in order: parsed, compiled, names-closed (no undefined global name), imported, instantiated, forward,
equivalent (the copy's parameters, outputs and gradients are bit-identical to the original's on every argument
set tried).

Three rooms, one per process (as pytest-xdist splits its controller from its workers): `judge/` runs in the judge's
process and decides; `worker/` is what the zygote loads into a private namespace (a process the judge starts with
exec and never gives a job) and what every worker forked from it runs, the only code that runs a block's; `wire/` is
what both say to each other. `judge/` and `worker/` never import each other (the lint's rule). The copy and the
original are never run in one process, and no worker is a fork of the judge: the original's results live only in the
judge.

Standard library only: torch is imported by the zygote (once) and the workers, never by the judge.
"""
