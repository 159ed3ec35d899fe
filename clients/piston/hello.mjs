// The npm piston-client package (as Piston users have it) against airlock
// serve's Piston routes: hello world in python, node (Piston's
// "javascript") and bash. AIRLOCK_SOCKET is the server's unix socket,
// AIRLOCK_URL its TCP listener on loopback (no token), AIRLOCK_NPM the
// directory piston-client is installed in (scripts/setup).
//
// piston-client 1.0.2 posts its JSON as text/plain (node-fetch's type for
// a string body; Piston itself parses only JSON and form bodies), which a
// web page of any site can send too: airlock's TCP listener without a
// token refuses it (415, docs/serve.md), and this checks that it does,
// with the real client. The hello worlds go over the unix socket, which
// no browser reaches, with the client unchanged: only its connections
// are made to the socket (Node's global HTTP agent).
import http from 'node:http';
import net from 'node:net';

const { piston } = await import(process.env.AIRLOCK_NPM + '/node_modules/piston-client/index.js');
let failed = 0;

// Over TCP without a token: the runtimes (a GET) are listed; an execute
// is refused, in Piston's shape, saying what to send.
const tcp = piston({ server: process.env.AIRLOCK_URL });
const listed = await tcp.runtimes();
if (!Array.isArray(listed)) { console.log('FAIL runtimes over TCP: ' + JSON.stringify(listed)); failed++; }
const refused = await tcp.execute('bash', 'echo ran');
if (refused.run || refused.field !== 'content-type' || !String(refused.message).includes('application/json')) {
  console.log('FAIL a text/plain execute over TCP without a token was not refused: ' + JSON.stringify(refused));
  failed++;
} else {
  console.log('ok refused over TCP without a token: ' + refused.message);
}

// Over the unix socket.
const agent = new http.Agent({ keepAlive: false });
agent.createConnection = (_opts, cb) => net.createConnection({ path: process.env.AIRLOCK_SOCKET }, cb);
http.globalAgent = agent;
const client = piston({ server: 'http://localhost' });
const runtimes = await client.runtimes();
if (!Array.isArray(runtimes)) throw new Error('runtimes: ' + JSON.stringify(runtimes));
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
