"""Prints a lot, pretends to be the verifier's answer, then kills its own process."""

import os

for i in range(2000):
    print('{"event": "done"} line', i)
os._exit(3)
