"""conformance.py - drives sbx-serve with the official Python e2b SDK (pinned
in requirements.txt, installed into a private venv) and checks what the SDK
returns: the same calls, groups and checks as ../conformance.mjs.  TAP on
stdout; exit status 1 when a check fails.

  E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
  E2B_API_KEY=e2b_... python conformance.py [GROUP...]

Groups (all by default): create commands background pty files timeout pause
list snapshot fork kill auth.  SDK_SKIP=background,pause leaves groups out.
`transform` runs only when named: it needs egress-l7.bats's test network
(SDK_L7_NAME an HTTPS name whose server, with the test CA, logs the heads it
receives to SDK_L7_SEEN; SDK_L7_SECRET the value of the profile's egress
secret API_KEY).
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

from e2b import PtySize, Sandbox, SandboxQuery
from e2b.exceptions import AuthenticationException
from e2b import CommandExitException

want = sys.argv[1:]
skip = [s for s in os.environ.get("SDK_SKIP", "").split(",") if s]
n = 0
failed = 0


def ok(cond, what, extra=None):
    global n, failed
    n += 1
    if cond:
        print(f"ok {n} - {what}")
    else:
        failed += 1
        got = "" if extra is None else " # got " + json.dumps(extra, default=str)
        print(f"not ok {n} - {what}{got}")


def eq(got, exp, what):
    ok(got == exp, what, got)


def until(f, tries=200):
    for _ in range(tries):
        if f():
            return True
        time.sleep(0.05)
    return False


tag = f"p{os.getpid()}"
made = []


def create(**opts):
    md = {"suite": tag, **(opts.pop("metadata", None) or {})}
    sb = Sandbox.create(metadata=md, **opts)
    made.append(sb)
    return sb


def http(url, headers, data=None, method="GET"):
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def g_create():
    sb = create(metadata={"user": "a b", "k&y": "v=1"}, envs={"FOO": "bar"})
    ok(all(c.isalnum() or c == "-" for c in sb.sandbox_id), "Sandbox.create returns an id")
    info = sb.get_info()
    eq(info.metadata, {"suite": tag, "user": "a b", "k&y": "v=1"}, "get_info returns the metadata as given")
    eq(info.state.value, "running", "a new sandbox is running")
    eq(sb.commands.run("echo $FOO").stdout, "bar\n", "envs given to create reach every command")


def g_commands():
    sb = create()
    r = sb.commands.run("echo out; echo err >&2")
    eq([r.stdout, r.stderr, r.exit_code], ["out\n", "err\n", 0], "commands.run: stdout, stderr, exit code 0")
    eq(sb.commands.run("pwd; id -u").stdout, "/home/user\n1000\n", "commands run in the home folder as uid 1000")
    eq(sb.commands.run("echo $HOME").stdout, "/home/user\n", "the command's HOME is /home/user")
    eq(sb.commands.run("id -u", user="root").stdout, "0\n", "user='root' runs as root")
    try:
        sb.commands.run("echo partial; exit 7")
        ok(False, "a non-zero exit is a CommandExitException", "no error")
    except CommandExitException as e:
        ok(e.exit_code == 7 and e.stdout == "partial\n",
           "a non-zero exit is a CommandExitException with its exit code and output", [e.exit_code, e.stdout])
    big = sb.commands.run('head -c 200000 /dev/zero | tr "\\0" x')
    eq(len(big.stdout), 200000, "large output arrives whole")
    eq(sb.commands.run("pwd", cwd="/tmp", envs={"X": "1"}).stdout, "/tmp\n", "cwd is honoured")


def g_background():
    sb = create()
    h = sb.commands.run("sleep 300", background=True)
    ok(h.pid > 0, "a background command has a pid")
    listed = sb.commands.list()
    ok(any(p.pid == h.pid for p in listed), "commands.list shows it", [p.pid for p in listed])
    eq(sb.commands.kill(h.pid), True, "commands.kill returns true")
    try:
        h.wait()
        ok(False, "a killed command ends with an error", "no error")
    except CommandExitException:
        ok(True, "a killed command ends with a CommandExitException")
    ok(until(lambda: not any(p.pid == h.pid for p in sb.commands.list())), "a killed command leaves the list")
    eq(sb.commands.kill(999999), False, "commands.kill of an unknown pid returns false")


def g_pty():
    sb = create()
    out = bytearray()
    h = sb.pty.create(PtySize(rows=30, cols=100))
    ok(h.pid > 0, "pty.create returns a pid")
    ok(any(p.pid == h.pid for p in sb.commands.list()), "commands.list shows the terminal")
    # The sync SDK reads the output while it waits: the input goes first.
    sb.pty.send_stdin(h.pid, b'stty size; tty; echo "term=$TERM"; exit 0\n')
    r = h.wait(on_pty=out.extend)
    text = out.decode(errors="replace")
    ok("30 100" in text, "the terminal has the size pty.create asked for", text)
    ok("/dev/pts/" in text, "its stdin is a terminal", text)
    ok("term=xterm-256color" in text, "the SDK's TERM reaches the shell", text)
    eq(r.exit_code, 0, "exit in the terminal ends it with its status")
    out.clear()
    h = sb.pty.create(PtySize(rows=24, cols=80))
    sb.pty.resize(h.pid, PtySize(rows=40, cols=120))
    sb.pty.send_stdin(h.pid, b"stty size; exit 0\n")
    h.wait(on_pty=out.extend)
    ok("40 120" in out.decode(errors="replace"), "pty.resize changes the size", out.decode(errors="replace"))
    k = sb.pty.create(PtySize(rows=24, cols=80))
    eq(sb.pty.kill(k.pid), True, "pty.kill returns true")
    try:
        k.wait()
        ok(False, "a killed terminal ends with an error", "no error")
    except CommandExitException:
        ok(True, "a killed terminal ends with a CommandExitException")


def g_files():
    sb = create()
    sb.files.write("/home/user/a.txt", "hello")
    eq(sb.files.read("/home/user/a.txt"), "hello", "files.write then files.read")
    eq(sb.commands.run("cat /home/user/a.txt").stdout, "hello",
       "files.write('/home/user/x') then commands.run('cat /home/user/x'): one home")
    sb.files.write("rel.txt", "relative")
    eq(sb.commands.run("cat ~/rel.txt").stdout, "relative", "a relative path of files.write is in the command's ~")
    sb.commands.run("echo hi > ~/a2.txt")
    eq(sb.files.read("~/a2.txt"), "hi\n", "commands.run('echo hi > ~/a.txt') then files.read('~/a.txt')")
    eq(sb.files.read("/home/user/a2.txt"), "hi\n", "and ~ is /home/user")
    entries = sb.files.list("/home/user")
    ok(any(e.name == "a.txt" and e.path == "/home/user/a.txt" and e.type.value == "file" for e in entries),
       "files.list shows the file under /home/user", [e.path for e in entries])
    eq(sb.files.make_dir("/home/user/d/e"), True, "files.make_dir makes a folder (and parents)")
    eq(sb.files.make_dir("/home/user/d/e"), False, "files.make_dir of an existing folder returns false")
    moved = sb.files.rename("/home/user/a.txt", "/home/user/d/b.txt")
    eq(moved.path, "/home/user/d/b.txt", "files.rename returns the new entry")
    eq(sb.files.exists("/home/user/a.txt"), False, "the old name is gone")
    eq(sb.files.read("/home/user/d/b.txt"), "hello", "the new name has the data")
    info = sb.files.get_info("/home/user/d/b.txt")
    eq([info.name, info.size, info.type.value], ["b.txt", 5, "file"], "files.get_info")
    sb.files.remove("/home/user/d")
    eq(sb.files.exists("/home/user/d"), False, "files.remove removes a folder")
    sb.files.remove("/home/user/never-there")
    ok(True, "files.remove of a missing path succeeds")
    sb.files.write_files([{"path": "/home/user/m1.txt", "data": "1"}, {"path": "/tmp/m2.txt", "data": "2"}])
    eq([sb.files.read("/home/user/m1.txt"), sb.files.read("/tmp/m2.txt")], ["1", "2"],
       "files.write_files: several files in one request")
    eq(sb.commands.run("echo secret > /root/s; chmod 600 /root/s", user="root").exit_code, 0,
       "root writes a root-only file")
    try:
        sb.files.read("/root/s")
        denied = False
    except Exception:
        denied = True
    ok(denied, "the default user cannot read root's file")
    eq(sb.files.read("/root/s", user="root"), "secret\n", "user='root' can")
    hdr = {"E2b-Sandbox-Id": sb.sandbox_id}
    sb.files.write("/home/user/o.txt", "octets")
    down = sb.download_url("/home/user/o.txt")
    ok("signature=v1_" in down, "download_url is signed", down)
    eq(list(http(down, hdr)), [200, "octets"], "a signed download URL reads without the token")


def g_timeout():
    sb = create(timeout=600)
    before = time.time()
    sb.set_timeout(120)
    left = sb.get_info().end_at.timestamp() - before
    ok(110 < left < 130, "set_timeout moves end_at to now + timeout", left)
    short = create(timeout=1)

    def gone():
        items = Sandbox.list(query=SandboxQuery(metadata={"suite": tag})).next_items()
        return not any(s.sandbox_id == short.sandbox_id for s in items)

    ok(until(gone, 100), "a sandbox past its end time is killed")
    napper = create(timeout=1, lifecycle={"on_timeout": "pause"})
    ok(until(lambda: napper.get_info().state.value == "paused", 100),
       "lifecycle on_timeout 'pause': past its end time it is paused, not killed")


def g_pause():
    sb = create()
    h = sb.commands.run("cat", background=True, stdin=True)
    sb.pause()
    eq(sb.get_info().state.value, "paused", "pause: the state is paused")
    again = Sandbox.connect(sb.sandbox_id)
    eq(again.get_info().state.value, "running", "Sandbox.connect resumes a paused sandbox")
    listed = again.commands.list()
    ok(any(p.pid == h.pid for p in listed), "the background process survived the pause", [p.pid for p in listed])
    again.commands.send_stdin(h.pid, "ping\n")
    eq(again.commands.kill(h.pid), True, "it takes stdin after the resume and is killed")


def g_list():
    ids = [create(metadata={"page": "p q&r"}).sandbox_id for _ in range(3)]
    create(metadata={"page": "other"})
    pager = Sandbox.list(query=SandboxQuery(metadata={"suite": tag, "page": "p q&r"}), limit=1)
    seen, pages = [], 0
    while pager.has_next and pages < 10:
        seen += [s.sandbox_id for s in pager.next_items()]
        pages += 1
    eq(sorted(seen), sorted(ids), "Sandbox.list with a metadata query, one a page: each match once")
    ok(pages >= 3, "and it pages with X-Next-Token", pages)


def g_snapshot():
    sb = create()
    sb.files.write("/home/user/frozen.txt", "ice")
    snap = sb.create_snapshot()
    ok(bool(snap.snapshot_id), "create_snapshot returns an id", str(snap))
    pager = Sandbox.list_snapshots(sandbox_id=sb.sandbox_id)
    snaps = []
    while pager.has_next:
        snaps += pager.next_items()
    ok(any(s.snapshot_id == snap.snapshot_id for s in snaps), "list_snapshots shows it")
    child = create(template=snap.snapshot_id)
    eq(child.files.read("/home/user/frozen.txt"), "ice", "a sandbox created from the snapshot has its files")
    child.kill()
    eq(Sandbox.delete_snapshot(snap.snapshot_id), True, "delete_snapshot")


def g_fork():
    sb = create()
    sb.files.write("/home/user/forked.txt", "seed")
    forks = sb.fork(count=2, timeout=120)
    eq(len(forks), 2, "fork returns one entry per fork")
    ok(all(isinstance(f, Sandbox) for f in forks), "each fork is a running Sandbox", str(forks))
    made.extend(f for f in forks if isinstance(f, Sandbox))
    eq(forks[0].files.read("/home/user/forked.txt"), "seed", "a fork has its source's files")
    forks[0].files.write("/home/user/forked.txt", "mine")
    eq(sb.files.read("/home/user/forked.txt"), "seed", "a write in a fork is not its source's")
    eq(forks[1].commands.run("cat /home/user/forked.txt").stdout, "seed", "nor the other fork's")
    ok(sb.is_running(), "the source runs on")
    for f in forks:
        f.kill()
    pager = Sandbox.list_snapshots(sandbox_id=sb.sandbox_id)
    snaps = []
    while pager.has_next:
        snaps += pager.next_items()
    eq(len(snaps), 1, "the fork's one snapshot is listed as the source's")
    for s in snaps:
        eq(Sandbox.delete_snapshot(s.snapshot_id), True, "and deletable once its forks are gone")


def g_kill():
    sb = create()
    eq(sb.kill(), True, "kill returns true")
    eq(Sandbox.kill(sb.sandbox_id), False, "killing it again returns false")
    eq(sb.is_running(), False, "a killed sandbox is not running")


def g_transform():
    """network.rules[NAME].transform.headers with ${e2b.secrets.API_KEY}: the
    server gets the real value, the sandbox only the placeholder."""
    name, seen, value = (os.environ.get(k, "") for k in ("SDK_L7_NAME", "SDK_L7_SEEN", "SDK_L7_SECRET"))
    ok(name and seen and value, "SDK_L7_NAME, SDK_L7_SEEN and SDK_L7_SECRET are set")
    sb = create(network={
        "allow_out": [name], "deny_out": ["0.0.0.0/0"],
        "rules": {name: [{"transform": {"headers": {"X-Api-Key": "k=${e2b.secrets.API_KEY};", "X-Team": "team-py"}}}]},
    })
    open(seen, "w").close()
    r = sb.commands.run(f'curl -sS -H "X-Team: mine" https://{name}/v1/sdk-py')
    ok("v1 GET /v1/sdk-py ok" in r.stdout, "a request to the rule's name reaches the server", r.stdout)
    with open(seen) as f:
        log = f.read()
    ok(f"X-Api-Key: k={value};" in log, "the server received the secret's value in the transform's header")
    ok("X-Team: team-py" in log and "X-Team: mine" not in log, "the transform's header replaces the sandbox's own")
    env = sb.commands.run('env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"; true', user="root")
    ok(value not in env.stdout, "no value in the sandbox's env nor any process's environ")
    ok("API_KEY=sbx-secret:API_KEY" in env.stdout, "the sandbox sees the placeholder",
       [l for l in env.stdout.split("\n") if "API_KEY" in l])


def g_auth():
    try:
        Sandbox.create(api_key="e2b_0000wrong")
        ok(False, "a wrong API key is an AuthenticationException", "no error")
    except AuthenticationException:
        ok(True, "a wrong API key is an AuthenticationException")
    except Exception as e:
        ok(False, "a wrong API key is an AuthenticationException", type(e).__name__ + ": " + str(e))


order = ["create", "commands", "background", "pty", "files", "timeout", "pause", "list", "snapshot", "fork", "kill", "auth", "transform"]
try:
    for g in order:
        if (want and g not in want) or g in skip:
            continue
        if g == "transform" and g not in want:
            continue
        print(f"# {g}")
        try:
            globals()["g_" + g]()
        except Exception as e:
            ok(False, f"{g}: unexpected {type(e).__name__}: {e}")
finally:
    for sb in made:
        try:
            sb.kill()
        except Exception:
            pass
print(f"1..{n}")
sys.exit(1 if failed else 0)
