#!/usr/bin/env python3
"""A loopback stand-in for a Grafana Pyroscope server, for crates/cli/tests/push.rs.

It accepts what Pyroscope's push API accepts and records every request:

    server.py DIR [--status CODE] [--delay SECS] [--fail-first N] [--port PORT]

prints `port N` and `listening` once listening on 127.0.0.1, then for each request appends a JSON line to
DIR/requests.jsonl: method, path, query, headers (lower-cased), body length, and, for a
well-formed `push.v1.PusherService/Push` call (Connect unary, `Content-Type:
application/proto`, body optionally gzip-encoded per `Content-Encoding`), each series' labels
and, per sample, the file under DIR its raw profile was saved to (`profile-K.pb`, as sent:
pprof, gzip-compressed or not, as the server takes it), with `accepted: true`. Anything else is answered 400 (`accepted: false`,
`why`). `--status` answers every request with that code instead (after recording it);
`--delay` waits before answering; `--fail-first` answers the first N requests 503 (a server
that is down behind its load balancer). Stops on SIGTERM.
"""

import gzip
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

PUSH_PATH = "/push.v1.PusherService/Push"


def varint(b, i):
    shift = value = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def fields(b):
    """(tag, wire type, value) of a protobuf message; length-delimited values as bytes."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        tag, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(b, i)
        elif wire == 2:
            n, i = varint(b, i)
            value = b[i:i + n]
            if len(value) != n:
                raise ValueError("truncated field")
            i += n
        elif wire == 1:
            value, i = b[i:i + 8], i + 8
        elif wire == 5:
            value, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield tag, wire, value


def decode_push(body):
    """push.v1.PushRequest → [{labels: {name: value}, samples: [(raw_profile, id)]}]."""
    series = []
    for tag, wire, s in fields(body):
        if tag != 1 or wire != 2:
            continue
        labels, samples = {}, []
        for t, w, v in fields(s):
            if t == 1 and w == 2:
                pair = {tt: vv for tt, ww, vv in fields(v) if ww == 2}
                labels[pair.get(1, b"").decode()] = pair.get(2, b"").decode()
            elif t == 2 and w == 2:
                sample = {tt: vv for tt, ww, vv in fields(v) if ww == 2}
                samples.append((sample.get(1, b""), sample.get(2, b"").decode()))
        series.append({"labels": labels, "samples": samples})
    return series


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    status = int(sys.argv[sys.argv.index("--status") + 1]) if "--status" in sys.argv else None
    delay = float(sys.argv[sys.argv.index("--delay") + 1]) if "--delay" in sys.argv else 0.0
    fail_first = int(sys.argv[sys.argv.index("--fail-first") + 1]) if "--fail-first" in sys.argv else 0
    log = open(out / "requests.jsonl", "a", buffering=1)
    lock = threading.Lock()
    counter = [0]
    requests_seen = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            url = urlsplit(self.path)
            record = {
                "time": time.time(),
                "method": "POST",
                "path": url.path,
                "query": url.query,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body_len": len(body),
            }
            code, why = 200, None
            try:
                if url.path != PUSH_PATH:
                    raise ValueError(f"unknown path {url.path}")
                if self.headers.get("content-type", "").split(";")[0].strip() != "application/proto":
                    raise ValueError(f"content type {self.headers.get('content-type')}")
                if self.headers.get("content-encoding", "identity") == "gzip":
                    body = gzip.decompress(body)
                series = decode_push(body)
                if not series:
                    raise ValueError("no series")
                saved = []
                for s in series:
                    files = []
                    for raw, ident in s["samples"]:
                        # The server takes pprof gzip-compressed or not (it looks for gzip's magic).
                        pprof = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
                        if not pprof or pprof[0] != 0x0A:
                            raise ValueError("raw_profile is not a pprof Profile (field 1 first)")
                        with lock:
                            counter[0] += 1
                            name = f"profile-{counter[0]}.pb"
                        (out / name).write_bytes(raw)
                        files.append({"file": name, "id": ident})
                    saved.append({"labels": s["labels"], "samples": files})
                record["series"] = saved
                record["accepted"] = True
            except Exception as e:  # noqa: BLE001 - a malformed request is the answer's business
                code, why = 400, str(e)
                record["accepted"] = False
                record["why"] = why
            if status is not None:
                code = status
            with lock:
                requests_seen[0] += 1
                seen = requests_seen[0]
            if seen <= fail_first:
                code, why = 503, "unavailable"
                record["accepted"] = False
            record["status"] = code
            log.write(json.dumps(record) + "\n")
            if delay:
                time.sleep(delay)
            payload = b"{}" if code == 200 else json.dumps({"code": "invalid_argument", "message": why or ""}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0), Handler)
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=server.shutdown).start())
    print(f"port {server.server_address[1]}\nlistening", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
