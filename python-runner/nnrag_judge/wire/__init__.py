"""What the judge and its workers share: the tiers and categories, the frames a worker sends and their types, the
judge's requests (checked against python-runner/judge.schema.json) and its reports. Loaded by both processes, so it
imports nothing but this room and the standard library."""
