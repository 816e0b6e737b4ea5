"""The judge's room: what runs in the judge's process (`judge.py --serve`, pid 1 of the sandbox). It reads requests,
starts and supervises workers, compares what two workers sent and decides the verdict. Nothing here runs a block's
code or imports torch; it imports only this room and `wire` (the lint's rule, scripts/pythonRooms.mjs)."""
