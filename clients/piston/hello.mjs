// The npm piston-client package (as Piston users have it) against airlock
// serve's Piston routes: hello world in python, node (Piston's
// "javascript") and bash. AIRLOCK_URL is the server, AIRLOCK_NPM the
// directory piston-client is installed in (scripts/setup).
const { piston } = await import(process.env.AIRLOCK_NPM + '/node_modules/piston-client/index.js');
const client = piston({ server: process.env.AIRLOCK_URL });
const runtimes = await client.runtimes();
if (!Array.isArray(runtimes)) throw new Error('runtimes: ' + JSON.stringify(runtimes));
let failed = 0;
for (const [lang, code, want] of [
  ['python', 'print("hello from python")', 'hello from python\n'],
  ['javascript', 'console.log("hello from node")', 'hello from node\n'],
  ['node', 'console.log("hello from node, by its alias")', 'hello from node, by its alias\n'],
  ['bash', 'echo "hello from bash $1"', 'hello from bash 1\n'],
]) {
  const r = await client.execute(lang, code);
  const ok = r && r.run && r.run.stdout === want && r.run.code === 0 && r.run.signal === null;
  console.log(`${ok ? 'ok' : 'FAIL'} ${lang} ${r.version}: ${JSON.stringify(r.run || r)}`);
  if (!ok) failed++;
}
// A refusal keeps Piston's {message}.
const bad = await client.execute('cobol', 'x', { version: '1.0.0' });
if (!bad.message || !bad.message.includes('runtime is unknown')) { console.log('FAIL unknown language: ' + JSON.stringify(bad)); failed++; }
process.exit(failed ? 1 : 0);
