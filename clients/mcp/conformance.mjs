// Runs the MCP conformance suite's CLI (npm @modelcontextprotocol/
// conformance, installed by scripts/setup in AIRLOCK_NPM) with the given
// arguments: node conformance.mjs server --url URL ...
//
// Its bundle (0.1.16) imports fs.globSync, which Node has from 22 on;
// only its tier-check command calls it. On an older Node the import
// alone fails, so a module hook gives the bundle an fs whose globSync,
// when missing, throws. Nothing else is changed.
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const cli = process.env.AIRLOCK_NPM + '/node_modules/@modelcontextprotocol/conformance/dist/index.js';
const shim = `import fs from 'node:fs'; export * from 'node:fs'; export default fs;
export const globSync = fs.globSync || (() => { throw new Error('fs.globSync needs Node 22'); });`;
register('data:text/javascript,' + encodeURIComponent(`
export async function resolve(spec, ctx, next) {
  if ((spec === 'fs' || spec === 'node:fs') && ctx.parentURL && ctx.parentURL.includes('/@modelcontextprotocol/conformance/')) {
    return { url: 'data:text/javascript,' + ${JSON.stringify(encodeURIComponent(shim))}, shortCircuit: true };
  }
  return next(spec, ctx);
}`));
process.argv = [process.argv[0], cli, ...process.argv.slice(2)];
await import(pathToFileURL(cli).href);
