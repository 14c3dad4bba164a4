"""The interop scenarios over WebSocket, on the repository's Python client (clients/python).

usage: stream_ws_client.py HOST:PORT ROUNDS
       stream_ws_client.py HOST:PORT bound PLAYER
"""

from stream_scenarios import main

if __name__ == "__main__":
    main("ws")
