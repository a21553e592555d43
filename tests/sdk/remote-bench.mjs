// remote-bench.mjs - the SDK side of tests/bench/remote.sh: the official
// SDK against sbx-serve, one operation MODE, N times in this one (warm)
// process; prints one millisecond figure a line.
//   create N          Sandbox.create() (each sandbox killed after, untimed)
//   exec ID N         commands.run('true')
//   write ID N        files.write of 1 MB
//   read ID N         files.read of that 1 MB
//   list N            Sandbox.list() to its end (every page)
import { Sandbox } from 'e2b'

const [mode, a, b] = process.argv.slice(2)
const now = () => Number(process.hrtime.bigint()) / 1e6
const mb = 'x'.repeat(1 << 20)

async function time(n, fn) {
  for (let i = 0; i < n; i++) {
    const t = now()
    const after = await fn()
    console.log((now() - t).toFixed(2))
    if (typeof after === 'function') await after()
  }
}

if (mode === 'create') {
  await time(Number(a), async () => { const s = await Sandbox.create(); return () => s.kill() })
} else if (mode === 'list') {
  await time(Number(a), async () => {
    const p = Sandbox.list({ limit: 100 })
    while (p.hasNext) await p.nextItems()
  })
} else {
  const sb = await Sandbox.connect(a)
  const n = Number(b)
  if (mode === 'exec') await time(n, () => sb.commands.run('true'))
  if (mode === 'write') await time(n, () => sb.files.write('/home/user/bench.bin', mb))
  if (mode === 'read') await time(n, () => sb.files.read('/home/user/bench.bin'))
}
