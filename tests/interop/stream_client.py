"""The interop scenarios over TCP, on the repository's Python client (clients/python).

usage: stream_client.py HOST:PORT ROUNDS
       stream_client.py HOST:PORT bound PLAYER
"""

from stream_scenarios import main

if __name__ == "__main__":
    main("tcp")
