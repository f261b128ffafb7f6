# A hostile local user: takes the path of a socket (creating its directory if it is gone, open to
# everyone), listens there, and writes one line to LOG per connection with the bytes it was sent
# (the first 64 KiB within a second). Or, with "connect", tries to talk to someone else's socket
# and writes what happened. Run by the security tests as an unprivileged second user.
import os, socket, sys, time

mode, path, log = sys.argv[1], sys.argv[2], sys.argv[3]

def note(line):
    with open(log, "a") as f:
        f.write(line + "\n")

if mode == "connect":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        note("connect failed: %s" % e.strerror)
        sys.exit(0)
    s.settimeout(10)
    try:
        data = s.recv(1)
        note("closed by the listener" if data == b"" else "answered")
    except socket.timeout:
        note("kept open")
    sys.exit(0)

# mode == "listen": serve until the file STOP (argv[4]) appears.
stop = sys.argv[4]
directory = os.path.dirname(path)
os.makedirs(directory, exist_ok=True)
os.chmod(directory, 0o777)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
os.chmod(path, 0o777)
server.listen(16)
server.settimeout(0.1)
note("listening")
while not os.path.exists(stop):
    try:
        conn, _ = server.accept()
    except socket.timeout:
        continue
    conn.settimeout(1)
    got = b""
    try:
        while len(got) < 65536:
            chunk = conn.recv(65536)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        pass
    note("connection: %d bytes" % len(got))
    conn.close()
