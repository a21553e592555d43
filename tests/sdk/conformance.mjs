// conformance.mjs - drives sbx-serve with the official e2b SDK (pinned in
// package.json, installed with `npm ci`) and checks what the SDK returns.
// TAP on stdout; exit status 1 when a check fails.
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=e2b_... node conformance.mjs [GROUP...]
//
// Groups (all by default): create commands background pty files timeout pause
// list snapshot fork kill auth.  `process` groups need a backend with detached
// processes (SBX_CAP_PROCESS); set SDK_SKIP=background,pause to leave them out.
// `transform` runs only when named: it needs egress-l7.bats's test network
// (SDK_L7_NAME an HTTPS name whose server, with the test CA, logs the heads
// it receives to SDK_L7_SEEN; SDK_L7_SECRET the value of the profile's
// egress secret API_KEY).
import { readFileSync, writeFileSync } from 'node:fs'
import { Sandbox, CommandExitError, AuthenticationError } from 'e2b'

const want = process.argv.slice(2)
const skip = (process.env.SDK_SKIP || '').split(',').filter(Boolean)
let n = 0
let failed = 0
const ok = (cond, what, extra) => {
  n++
  if (cond) console.log(`ok ${n} - ${what}`)
  else {
    failed++
    console.log(`not ok ${n} - ${what}${extra !== undefined ? ' # got ' + JSON.stringify(extra) : ''}`)
  }
}
const eq = (got, exp, what) => ok(JSON.stringify(got) === JSON.stringify(exp), what, got)
const rejects = async (p, cls, what) => {
  try {
    await p
    ok(false, what, 'no error')
  } catch (e) {
    ok(e instanceof cls, what, `${e && e.constructor && e.constructor.name}: ${e && e.message}`)
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const until = async (f, tries = 200) => {
  for (let i = 0; i < tries; i++) {
    if (await f()) return true
    await sleep(50)
  }
  return false
}
const tag = `t${process.pid}`
const made = []
const create = async (opts = {}) => {
  const sb = await Sandbox.create({ ...opts, metadata: { suite: tag, ...(opts.metadata || {}) } })
  made.push(sb)
  return sb
}

const groups = {
  async create() {
    const sb = await create({ metadata: { user: 'a b', 'k&y': 'v=1' }, envs: { FOO: 'bar' } })
    ok(/^[a-z0-9-]+$/.test(sb.sandboxId), 'Sandbox.create returns an id')
    const info = await sb.getInfo()
    const sorted = (o) => Object.fromEntries(Object.entries(o).sort())
    eq(sorted(info.metadata), sorted({ suite: tag, user: 'a b', 'k&y': 'v=1' }), 'getInfo returns the metadata as given')
    eq(info.state, 'running', 'a new sandbox is running')
    const r = await sb.commands.run('echo $FOO')
    eq(r.stdout, 'bar\n', 'envs given to create reach every command')
  },

  async commands() {
    const sb = await create()
    const r = await sb.commands.run('echo out; echo err >&2')
    eq([r.stdout, r.stderr, r.exitCode], ['out\n', 'err\n', 0], 'commands.run: stdout, stderr, exit code 0')
    const w = await sb.commands.run('pwd; id -u')
    eq(w.stdout, '/home/user\n1000\n', 'commands run in the home folder as uid 1000')
    eq((await sb.commands.run('echo $HOME')).stdout, '/home/user\n', "the command's HOME is /home/user")
    const root = await sb.commands.run('id -u', { user: 'root' })
    eq(root.stdout, '0\n', "user: 'root' runs as root")
    try {
      await sb.commands.run('echo partial; exit 7')
      ok(false, 'a non-zero exit is a CommandExitError', 'no error')
    } catch (e) {
      ok(e instanceof CommandExitError && e.exitCode === 7 && e.stdout === 'partial\n',
        'a non-zero exit is a CommandExitError with its exit code and output', [e.constructor.name, e.exitCode, e.stdout])
    }
    const big = await sb.commands.run('head -c 200000 /dev/zero | tr "\\0" x')
    eq(big.stdout.length, 200000, 'large output arrives whole')
    const cwd = await sb.commands.run('pwd', { cwd: '/tmp', envs: { X: '1' } })
    eq(cwd.stdout, '/tmp\n', 'cwd is honoured')
  },

  async background() {
    const sb = await create()
    const h = await sb.commands.run('sleep 300', { background: true })
    ok(h.pid > 0, 'a background command has a pid')
    const listed = await sb.commands.list()
    ok(listed.some((p) => p.pid === h.pid), 'commands.list shows it', listed.map((p) => p.pid))
    eq(await sb.commands.kill(h.pid), true, 'commands.kill returns true')
    try {
      await h.wait()
      ok(false, 'a killed command ends with an error', 'no error')
    } catch (e) {
      ok(e instanceof CommandExitError, 'a killed command ends with a CommandExitError', e.constructor.name)
    }
    ok(await until(async () => !(await sb.commands.list()).some((p) => p.pid === h.pid)),
      'a killed command leaves the list')
    eq(await sb.commands.kill(999999), false, 'commands.kill of an unknown pid returns false')
  },

  async pty() {
    const sb = await create()
    let out = ''
    const dec = new TextDecoder()
    const enc = (t) => new TextEncoder().encode(t)
    const h = await sb.pty.create({ cols: 100, rows: 30, onData: (d) => { out += dec.decode(d) } })
    ok(h.pid > 0, 'pty.create returns a pid')
    await sb.pty.sendInput(h.pid, enc('stty size; tty; echo "term=$TERM"\n'))
    // The three answers may come in separate reads: wait for the last
    // line (at a line's start, so not the echoed command).
    await until(() => /\nterm=/.test(out))
    ok(out.includes('30 100'), 'the terminal has the size pty.create asked for', out)
    ok(/\/dev\/pts\/\d+/.test(out), 'its stdin is a terminal', out)
    ok(out.includes('term=xterm-256color'), "the SDK's TERM reaches the shell", out)
    await sb.pty.resize(h.pid, { cols: 120, rows: 40 })
    await sb.pty.sendInput(h.pid, enc('stty size\n'))
    ok(await until(() => out.includes('40 120')), 'pty.resize changes the size', out)
    ok((await sb.commands.list()).some((p) => p.pid === h.pid), 'commands.list shows the terminal')
    await sb.pty.sendInput(h.pid, enc('exit 0\n'))
    const r = await h.wait()
    eq(r.exitCode, 0, 'exit in the terminal ends it with its status')
    // reconnect: a second handle on a running terminal gets what comes next
    const t = await sb.pty.create({ cols: 80, rows: 24, onData: () => {} })
    await t.disconnect()
    let again = ''
    const c = await sb.pty.connect(t.pid, { onData: (d) => { again += dec.decode(d) } })
    eq(c.pid, t.pid, 'pty.connect attaches to the running terminal')
    await sb.pty.sendInput(t.pid, enc('echo "re-$((40+2))"\n'))
    ok(await until(() => again.includes('re-42')), 'the connected handle gets the output', again)
    await sb.pty.sendInput(t.pid, enc('exit 0\n'))
    eq((await c.wait()).exitCode, 0, 'the connected handle sees the exit')
    const k = await sb.pty.create({ cols: 80, rows: 24, onData: () => {} })
    eq(await sb.pty.kill(k.pid), true, 'pty.kill returns true')
    try {
      await k.wait()
      ok(false, 'a killed terminal ends with an error', 'no error')
    } catch (e) {
      ok(e instanceof CommandExitError, 'a killed terminal ends with a CommandExitError', e.constructor.name)
    }
  },

  async files() {
    const sb = await create()
    await sb.files.write('/home/user/a.txt', 'hello')
    eq(await sb.files.read('/home/user/a.txt'), 'hello', 'files.write then files.read')
    eq((await sb.commands.run('cat /home/user/a.txt')).stdout, 'hello',
      "files.write('/home/user/x') then commands.run('cat /home/user/x'): one home")
    await sb.files.write('rel.txt', 'relative')
    eq((await sb.commands.run('cat ~/rel.txt')).stdout, 'relative',
      'a relative path of files.write is in the command\'s ~')
    await sb.commands.run('echo hi > ~/a2.txt')
    eq(await sb.files.read('~/a2.txt'), 'hi\n', "commands.run('echo hi > ~/a.txt') then files.read('~/a.txt')")
    eq(await sb.files.read('/home/user/a2.txt'), 'hi\n', 'and ~ is /home/user')
    const list = await sb.files.list('/home/user')
    ok(list.some((e) => e.name === 'a.txt' && e.path === '/home/user/a.txt' && e.type === 'file'),
      'files.list shows the file under /home/user', list.map((e) => e.path))
    eq(await sb.files.makeDir('/home/user/d/e'), true, 'files.makeDir makes a folder (and parents)')
    eq(await sb.files.makeDir('/home/user/d/e'), false, 'files.makeDir of an existing folder returns false')
    const moved = await sb.files.rename('/home/user/a.txt', '/home/user/d/b.txt')
    eq(moved.path, '/home/user/d/b.txt', 'files.rename returns the new entry')
    eq(await sb.files.exists('/home/user/a.txt'), false, 'the old name is gone')
    eq(await sb.files.read('/home/user/d/b.txt'), 'hello', 'the new name has the data')
    const info = await sb.files.getInfo('/home/user/d/b.txt')
    eq([info.name, info.size, info.type], ['b.txt', 5, 'file'], 'files.getInfo')
    await sb.files.remove('/home/user/d')
    eq(await sb.files.exists('/home/user/d'), false, 'files.remove removes a folder')
    await sb.files.remove('/home/user/never-there')
    ok(true, 'files.remove of a missing path succeeds')
    await sb.files.write([{ path: '/home/user/m1.txt', data: '1' }, { path: '/tmp/m2.txt', data: '2' }])
    eq([await sb.files.read('/home/user/m1.txt'), await sb.files.read('/tmp/m2.txt')], ['1', '2'],
      'files.write of several files in one request')
    const rootFile = await sb.commands.run('echo secret > /root/s; chmod 600 /root/s', { user: 'root' })
    eq(rootFile.exitCode, 0, 'root writes a root-only file')
    let denied = false
    try { await sb.files.read('/root/s') } catch { denied = true }
    ok(denied, "the default user cannot read root's file")
    eq(await sb.files.read('/root/s', { user: 'root' }), 'secret\n', "user: 'root' can")
    await sb.files.write('/home/user/z.txt', 'zipped '.repeat(100), { gzip: true })
    eq(await sb.files.read('/home/user/z.txt', { gzip: true }), 'zipped '.repeat(100),
      'files.write with gzip: true, read with gzip: true')
    await sb.files.write('/home/user/o.txt', 'octets', { useOctetStream: true })
    eq(await sb.files.read('/home/user/o.txt'), 'octets', 'files.write with useOctetStream')
    // Signed URLs: with E2B_SANDBOX_URL shared by every sandbox, the
    // sandbox is named by header; the signature stands for the token.
    const hdr = { 'E2b-Sandbox-Id': sb.sandboxId }
    const down = await sb.downloadUrl('/home/user/o.txt')
    ok(/signature=v1_/.test(down), 'downloadUrl is signed', down)
    const got = await fetch(down, { headers: hdr })
    eq([got.status, await got.text()], [200, 'octets'], 'a signed download URL reads without the token')
    const bad = await fetch(down.replace(/signature=v1_[^&]*/, 'signature=v1_AAAA'), { headers: hdr })
    eq(bad.status, 401, 'a forged signature is 401')
    const up = await sb.uploadUrl('/home/user/up.txt')
    const form = new FormData()
    form.append('file', new Blob(['uploaded']), 'up.txt')
    const put = await fetch(up, { method: 'POST', body: form, headers: hdr })
    eq(put.status, 200, 'a signed upload URL writes without the token')
    eq(await sb.files.read('/home/user/up.txt'), 'uploaded', 'and the file is there')
  },

  async timeout() {
    const sb = await create({ timeoutMs: 600_000 })
    const before = Date.now()
    await sb.setTimeout(120_000)
    const info = await sb.getInfo()
    const left = new Date(info.endAt).getTime() - before
    ok(left > 110_000 && left < 130_000, 'setTimeout moves endAt to now + timeout', left)
    const short = await create({ timeoutMs: 1_000 })
    ok(await until(async () => !(await Sandbox.list({ query: { metadata: { suite: tag } } }).nextItems())
      .some((s) => s.sandboxId === short.sandboxId), 100),
      'a sandbox past its end time is killed')
    const napper = await create({ timeoutMs: 1_000, lifecycle: { onTimeout: 'pause' } })
    ok(await until(async () => (await napper.getInfo()).state === 'paused', 100),
      "lifecycle onTimeout 'pause': past its end time it is paused, not killed")
    const lc = (await napper.getInfo()).lifecycle
    eq([lc.onTimeout, lc.autoResume], ['pause', false], 'getInfo reports the lifecycle')
  },

  async pause() {
    const sb = await create()
    const h = await sb.commands.run('cat', { background: true, stdin: true })
    await sb.pause()
    eq((await sb.getInfo()).state, 'paused', 'pause: the state is paused')
    const again = await Sandbox.connect(sb.sandboxId)
    eq((await again.getInfo()).state, 'running', 'Sandbox.connect resumes a paused sandbox')
    const listed = await again.commands.list()
    ok(listed.some((p) => p.pid === h.pid), 'the background process survived the pause', listed.map((p) => p.pid))
    let seen = ''
    const att = await again.commands.connect(h.pid, { onStdout: (d) => { seen += d } })
    await again.commands.sendStdin(h.pid, 'ping\n')
    ok(await until(() => seen.includes('ping')), 'it takes stdin after the resume and its output follows', seen)
    eq(await again.commands.kill(h.pid), true, 'and it is killed')
    try { await att.wait() } catch { /* killed */ }
  },

  async list() {
    const ids = []
    for (let i = 0; i < 3; i++) ids.push((await create({ metadata: { page: 'p q&r' } })).sandboxId)
    await create({ metadata: { page: 'other' } })
    const pager = Sandbox.list({ query: { metadata: { suite: tag, page: 'p q&r' } }, limit: 1 })
    const seen = []
    let pages = 0
    while (pager.hasNext && pages < 10) {
      const items = await pager.nextItems()
      pages++
      seen.push(...items.map((s) => s.sandboxId))
    }
    eq([...seen].sort(), [...ids].sort(), 'Sandbox.list with a metadata query, one a page: each match once')
    ok(pages >= 3, 'and it pages with X-Next-Token', pages)
  },

  async snapshot() {
    const sb = await create()
    await sb.files.write('/home/user/frozen.txt', 'ice')
    const snap = await sb.createSnapshot()
    ok(!!snap.snapshotId, 'createSnapshot returns an id', snap)
    const snaps = []
    const pager = Sandbox.listSnapshots({ sandboxId: sb.sandboxId })
    while (pager.hasNext) snaps.push(...(await pager.nextItems()))
    ok(snaps.some((s) => s.snapshotId === snap.snapshotId), 'listSnapshots shows it', snaps)
    const child = await create({ template: snap.snapshotId })
    eq(await child.files.read('/home/user/frozen.txt'), 'ice', 'a sandbox created from the snapshot has its files')
    await child.kill()
    eq(await Sandbox.deleteSnapshot(snap.snapshotId), true, 'deleteSnapshot')
  },

  async fork() {
    const sb = await create()
    await sb.files.write('/home/user/forked.txt', 'seed')
    const forks = await Sandbox.fork(sb.sandboxId, { count: 2, timeoutMs: 120000 })
    eq(forks.length, 2, 'Sandbox.fork returns one entry per fork')
    ok(forks.every((f) => f instanceof Sandbox), 'each fork is a running Sandbox', forks.map(String))
    made.push(...forks.filter((f) => f instanceof Sandbox))
    eq(await forks[0].files.read('/home/user/forked.txt'), 'seed', "a fork has its source's files")
    await forks[0].files.write('/home/user/forked.txt', 'mine')
    eq(await sb.files.read('/home/user/forked.txt'), 'seed', "a write in a fork is not its source's")
    eq((await forks[1].commands.run('cat /home/user/forked.txt')).stdout, 'seed', "nor the other fork's")
    ok(await sb.isRunning(), 'the source runs on')
    for (const f of forks) await f.kill()
    const snaps = []
    const pager = Sandbox.listSnapshots({ sandboxId: sb.sandboxId })
    while (pager.hasNext) snaps.push(...(await pager.nextItems()))
    eq(snaps.length, 1, "the fork's one snapshot is listed as the source's", snaps)
    for (const s of snaps) eq(await Sandbox.deleteSnapshot(s.snapshotId), true, 'and deletable once its forks are gone')
  },

  async kill() {
    const sb = await create()
    eq(await sb.kill(), true, 'kill returns true')
    eq(await Sandbox.kill(sb.sandboxId), false, 'killing it again returns false')
    eq(await sb.isRunning(), false, 'a killed sandbox is not running')
  },

  // network.rules[NAME].transform.headers with ${e2b.secrets.API_KEY}: the
  // server gets the real value, the sandbox only the placeholder.
  async transform() {
    const name = process.env.SDK_L7_NAME, seen = process.env.SDK_L7_SEEN, value = process.env.SDK_L7_SECRET
    ok(name && seen && value, 'SDK_L7_NAME, SDK_L7_SEEN and SDK_L7_SECRET are set')
    const sb = await create({
      network: {
        allowOut: [name], denyOut: ['0.0.0.0/0'],
        rules: { [name]: [{ transform: { headers: { 'X-Api-Key': 'k=${e2b.secrets.API_KEY};', 'X-Team': 'team-js' } } }] },
      },
    })
    writeFileSync(seen, '')
    const r = await sb.commands.run(`curl -sS -H "X-Team: mine" https://${name}/v1/sdk-js`)
    ok(r.stdout.includes('v1 GET /v1/sdk-js ok'), 'a request to the rule\'s name reaches the server', r.stdout)
    const log = readFileSync(seen, 'utf8')
    ok(log.includes(`X-Api-Key: k=${value};`), 'the server received the secret\'s value in the transform\'s header')
    ok(log.includes('X-Team: team-js') && !log.includes('X-Team: mine'), 'the transform\'s header replaces the sandbox\'s own')
    const env = await sb.commands.run('env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"; true', { user: 'root' })
    ok(!env.stdout.includes(value), 'no value in the sandbox\'s env nor any process\'s environ')
    ok(env.stdout.includes('API_KEY=sbx-secret:API_KEY'), 'the sandbox sees the placeholder', env.stdout.split('\n').filter((l) => l.includes('API_KEY')))
  },

  async auth() {
    await rejects(Sandbox.create({ apiKey: 'e2b_0000wrong' }), AuthenticationError,
      'a wrong API key is an AuthenticationError')
  },
}

const order = ['create', 'commands', 'background', 'pty', 'files', 'timeout', 'pause', 'list', 'snapshot', 'fork', 'kill', 'auth', 'transform']
try {
  for (const g of order) {
    if ((want.length && !want.includes(g)) || skip.includes(g)) continue
    if (g === 'transform' && !want.includes(g)) continue
    console.log(`# ${g}`)
    try {
      await groups[g]()
    } catch (e) {
      ok(false, `${g}: unexpected ${e && e.constructor && e.constructor.name}: ${e && e.message}`)
    }
  }
} finally {
  for (const sb of made) {
    try { await sb.kill() } catch { /* gone */ }
  }
}
console.log(`1..${n}`)
process.exit(failed ? 1 : 0)
