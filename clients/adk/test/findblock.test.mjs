// How a code block is found in a model's answer (no server needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BaseCodeExecutor } from '@google/adk';
import { findBlock } from '../src/index.js';

class Plain extends BaseCodeExecutor { async executeCode() { return { stdout: '', stderr: '', outputFiles: [] }; } }
const delimiters = new Plain().codeBlockDelimiters; // ADK's own

test('the earliest fenced block is found, with its fence\'s language', () => {
  const content = { role: 'model', parts: [{ text: 'First:\n```bash\nls\n```\nthen\n```python\nprint(1)\n```' }] };
  assert.deepEqual(findBlock(content, delimiters), { code: 'ls', language: 'shell', prefixParts: [{ text: 'First:\n' }] });
  for (const [fence, lang] of [['tool_code', 'python'], ['python', 'python'], ['javascript', 'javascript'], ['typescript', 'typescript'], ['sh', 'shell']]) {
    assert.equal(findBlock({ parts: [{ text: `\`\`\`${fence}\nx\n\`\`\`` }] }, delimiters).language, lang, fence);
  }
});

test('an executableCode part is Python; one already answered is not run again', () => {
  const part = { executableCode: { code: 'print(2)', language: 'PYTHON' } };
  assert.deepEqual(findBlock({ parts: [{ text: 'a' }, part] }, delimiters), { code: 'print(2)', language: 'python', prefixParts: [{ text: 'a' }] });
  assert.equal(findBlock({ parts: [part, { codeExecutionResult: { outcome: 'OUTCOME_OK' } }] }, delimiters), null);
});

test('no block, an unclosed fence, an empty block and a fence ADK does not list are not run', () => {
  for (const t of ['just text', '```python\nprint(1)', '```python\n\n```', '```ruby\nputs 1\n```']) {
    assert.equal(findBlock({ parts: [{ text: t }] }, delimiters), null, t);
  }
});
