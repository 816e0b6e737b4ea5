"""The worker's room: what the zygote loads (`zygote.WORKER_MODULES`, under a random package name) and every worker
forked from it runs: building a block, its inputs, observing its repository, driving forward and the probes. The only
code that runs a block's; it never holds a verdict and imports only this room and `wire` (scripts/pythonRooms.mjs)."""
