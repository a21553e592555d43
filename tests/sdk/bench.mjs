// bench.mjs - the SDK side of tests/bench/serve.sh.  Prints one number a
// line (milliseconds, or requests per second) for the mode given:
//   lifecycle N    create + commands.run('true') + kill, N times: each ms
//   run ID N [GAP] commands.run('true') in sandbox ID, N times: each ms;
//                  GAP ms of quiet (not timed) before each
//   warm ID W      commands.run('true') in sandbox ID from one process
//                  kept for the run, as an agent's SDK is: W untimed calls
//                  first (V8 compiles the SDK's code in the first ones:
//                  10-15 ms of CPU per call, on threads beside the one
//                  timed), then for each line "N" on stdin N timed calls,
//                  each ms on a line, and a line "." after them
//   rps PATH C N   GET PATH with C concurrent clients, N requests in all:
//                  requests per second (one line); exits 1 when any
//                  request is not answered 200
import { Sandbox } from 'e2b'

const [mode, a, b, c] = process.argv.slice(2)
const now = () => Number(process.hrtime.bigint()) / 1e6

if (mode === 'lifecycle') {
  for (let i = 0; i < Number(a); i++) {
    const t = now()
    const sb = await Sandbox.create()
    await sb.commands.run('true')
    await sb.kill()
    console.log((now() - t).toFixed(2))
  }
} else if (mode === 'run') {
  const sb = await Sandbox.connect(a)
  await sb.commands.run('true')
  for (let i = 0; i < Number(b); i++) {
    if (c) await new Promise((r) => setTimeout(r, Number(c)))
    const t = now()
    await sb.commands.run('true')
    console.log((now() - t).toFixed(2))
  }
} else if (mode === 'warm') {
  const sb = await Sandbox.connect(a)
  for (let i = 0; i < Number(b); i++) await sb.commands.run('true')
  console.log('.')
  const { createInterface } = await import('node:readline')
  for await (const line of createInterface({ input: process.stdin })) {
    for (let i = 0; i < Number(line); i++) {
      const t = now()
      await sb.commands.run('true')
      console.log((now() - t).toFixed(2))
    }
    console.log('.')
  }
} else if (mode === 'rps') {
  const url = process.env.E2B_API_URL + a
  const headers = { 'X-API-Key': process.env.E2B_API_KEY }
  const total = Number(c)
  let next = 0
  let bad = 0
  const client = async () => {
    while (next < total) {
      next++
      const r = await fetch(url, { headers })
      await r.arrayBuffer()
      if (r.status !== 200) bad++
    }
  }
  const t = now()
  await Promise.all(Array.from({ length: Number(b) }, client))
  const secs = (now() - t) / 1000
  // a failed request (a 429) is cheaper than a served one: the rate of
  // a run with any is no rate of the server's
  if (bad) {
    console.error(`${bad} of ${total} requests failed`)
    process.exit(1)
  }
  console.log((total / secs).toFixed(0))
}
