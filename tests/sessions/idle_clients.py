"""Opens N idle STREAM connections to HOST:PORT and holds them until stdin closes.

They answer nothing: the listener's default heartbeat timeout (30 s) is longer than the
test holds them.
"""

import socket
import sys

host, port = sys.argv[1].rsplit(":", 1)
count = int(sys.argv[2])
sockets = []
for _ in range(count):
    s = socket.create_connection((host, int(port)))
    sockets.append(s)
print("ready", flush=True)
sys.stdin.read()
for s in sockets:
    s.close()
