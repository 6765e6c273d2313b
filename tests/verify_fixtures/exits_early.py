"""Prints a lot, pretends to be the verifier's answer, tries the network, then kills its
own process."""

import os
import socket

for i in range(2000):
    print('{"event": "done"} line', i)
for address in (("192.0.2.1", 80), ("example.com", 80)):
    try:
        socket.create_connection(address, timeout=5).close()
        print("connected to", address)
    except OSError as exc:
        print("no network:", exc)
os._exit(3)
