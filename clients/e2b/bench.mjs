// E2B's SDK against airlock serve, timed: Sandbox.create() (p50, p99),
// and create + runCode('1+1') + kill with @e2b/code-interpreter (p50),
// beside a cold `airlock run` of the same code, interleaved. Prints a
// markdown table. Usage (clients/e2b/bench sets the environment):
//   node bench.mjs N   with AIRLOCK_NPM, E2B_API_URL, E2B_SANDBOX_URL,
//   E2B_API_KEY and AIRLOCK_BIN (the airlock binary).
import { spawnSync } from 'node:child_process';

const npm = process.env.AIRLOCK_NPM + '/node_modules/';
const { Sandbox } = await import(npm + 'e2b/dist/index.mjs');
const CI = await import(npm + '@e2b/code-interpreter/dist/index.mjs');
const n = Number(process.argv[2] || 50);
const now = () => Number(process.hrtime.bigint()) / 1e6;
const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

// A warm-up of each, untimed (the first create makes serve's executor
// and the SDK's connections).
await (await Sandbox.create({ timeoutMs: 60_000 })).kill();
{
  const s = await CI.Sandbox.create({ timeoutMs: 60_000 });
  await s.runCode('1+1');
  await s.kill();
}
const create = [], full = [], cold = [];
for (let i = 0; i < n; i++) {
  let t = now();
  const s = await Sandbox.create({ timeoutMs: 60_000 });
  create.push(now() - t);
  await s.kill();

  t = now();
  const c = await CI.Sandbox.create({ timeoutMs: 60_000 });
  const r = await c.runCode('1+1');
  await c.kill();
  full.push(now() - t);
  if (r.text !== '2') throw new Error(`runCode('1+1'): ${JSON.stringify(r.toJSON())}`);

  t = now();
  const a = spawnSync(process.env.AIRLOCK_BIN, ['run', '--', 'python3', '-c', 'print(1+1)'], { encoding: 'utf8' });
  cold.push(now() - t);
  if (a.status !== 0 || a.stdout !== '2\n') throw new Error(`airlock run: ${a.status} ${a.stdout} ${a.stderr}`);
}
const f = (x) => x.toFixed(1);
console.log(`| E2B SDK against airlock serve (${n} rounds, interleaved) | p50 ms | p99 ms |`);
console.log('|---|---|---|');
console.log(`| Sandbox.create() | ${f(q(create, 0.5))} | ${f(q(create, 0.99))} |`);
console.log(`| create + runCode('1+1') + kill (code interpreter) | ${f(q(full, 0.5))} | ${f(q(full, 0.99))} |`);
console.log(`| cold \`airlock run -- python3 -c 'print(1+1)'\` | ${f(q(cold, 0.5))} | ${f(q(cold, 0.99))} |`);
