#!/usr/bin/env python3
"""Grafana's own Pyroscope client (PyPI `pyroscope-io`) pushing one profile of this script to
SERVER, so that crates/cli/tests/push.rs can record what a real client's request looks like:

    client.py SERVER [SECONDS]

burns CPU for SECONDS (default 2) in `burn`, then shuts the client down, which pushes.
Credentials come from SONDE_PUSH_USER/SONDE_PUSH_PASSWORD when set.
"""

import os
import sys
import time

import pyroscope


def burn(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += sum(i * i for i in range(1000))
    return n


def main():
    options = {}
    if os.environ.get("SONDE_PUSH_USER"):
        options["basic_auth_username"] = os.environ["SONDE_PUSH_USER"]
        options["basic_auth_password"] = os.environ.get("SONDE_PUSH_PASSWORD", "")
    pyroscope.configure(application_name="real-client", server_address=sys.argv[1], sample_rate=100,
                        tags={"region": "test"}, **options)
    burn(float(sys.argv[2]) if len(sys.argv) > 2 else 2.0)
    pyroscope.shutdown()


if __name__ == "__main__":
    main()
