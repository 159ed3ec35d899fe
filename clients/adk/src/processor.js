// The code-block step of an LlmAgent: finds the first code block in the
// model's answer, runs it with the agent's codeExecutor, and puts the
// result in the conversation, so that the model's next turn sees it.
//
// Why it is here: @google/adk 2.0.0 has this step (its code-execution
// response processor) but never runs it (LlmAgent's responseProcessors
// default to none, and the class is not exported), so an LlmAgent with a
// codeExecutor runs no code block. Give it as
// `responseProcessors: [new AirlockCodeBlockProcessor()]`.
//
// The retry rule is ADK's: per invocation, after errorRetryAttempts
// failed blocks in a row the next block is not run (the model's answer
// is then final). A failed block is one with stderr. A refusal that
// retrying cannot fix (an invalid or unsupported request) ends the run
// of blocks at once: its count is set to errorRetryAttempts, so the
// refused block is tried once, not errorRetryAttempts times. A transient
// refusal (busy) counts as one failure, as a failed block does.
import { BaseLlmResponseProcessor, createEvent, createEventActions, isLlmAgent } from '@google/adk';

// ADK's own session-state keys (code_executors/code_executor_context), so
// that its request side (optimizeDataFile) and this share the counts.
const ERROR_COUNTS = '_code_executor_error_counts';
const INPUT_FILES = '_code_executor_input_files';
const CONTEXT = '_code_execution_context';

// Fence tag -> ADK language.
const TAGS = {
  tool_code: 'python', python: 'python', py: 'python',
  javascript: 'javascript', js: 'javascript', node: 'javascript',
  typescript: 'typescript', ts: 'typescript',
  bash: 'shell', sh: 'shell', shell: 'shell',
};

function languageOf(delimiter) {
  const m = /^```([A-Za-z_]+)/.exec(delimiter);
  return (m && TAGS[m[1].toLowerCase()]) || 'python';
}

/**
 * findBlock returns {code, language, prefix} for the first code block of
 * content: an executableCode part, or the earliest fenced block in its
 * text whose opening delimiter is one of delimiters.
 */
export function findBlock(content, delimiters) {
  const parts = (content && content.parts) || [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p.executableCode && !(parts[i + 1] && parts[i + 1].codeExecutionResult)) {
      // Gemini's executable code is Python (genai's only Language).
      return { code: p.executableCode.code, language: 'python', prefixParts: parts.slice(0, i) };
    }
  }
  const text = parts.filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text).join('\n');
  let best = null;
  for (const [open, close] of delimiters) {
    const at = text.indexOf(open);
    if (at < 0 || (best && at >= best.at)) continue;
    const stop = text.indexOf(close, at + open.length);
    if (stop < 0) continue;
    best = { at, code: text.slice(at + open.length, stop), language: languageOf(open) };
  }
  if (!best || !best.code.trim()) return null;
  const prefix = text.slice(0, best.at);
  return { code: best.code, language: best.language, prefixParts: prefix ? [{ text: prefix }] : [] };
}

/** executionIdOf is ADK's execution id of a stateful executor: the one in state, else the session's id. */
function executionIdOf(ctx) {
  const c = ctx.session.state[CONTEXT];
  return (c && c.execution_session_id) || ctx.session.id;
}

export class AirlockCodeBlockProcessor extends BaseLlmResponseProcessor {
  async *runAsync(ctx, llmResponse) {
    if (!llmResponse || llmResponse.partial || !llmResponse.content) return;
    const agent = ctx.agent;
    if (!isLlmAgent(agent)) return;
    const ex = agent.codeExecutor;
    if (!ex || typeof ex.executeCode !== 'function' || typeof ex.processLlmRequest === 'function') return; // none, or Gemini's built-in
    const state = ctx.session.state;
    const counts = (state[ERROR_COUNTS] ||= {});
    if ((counts[ctx.invocationId] || 0) >= ex.errorRetryAttempts) return;
    const block = findBlock(llmResponse.content, ex.codeBlockDelimiters);
    if (!block) return;

    const codePart = { executableCode: { code: block.code, language: block.language === 'python' ? 'PYTHON' : 'LANGUAGE_UNSPECIFIED' } };
    yield createEvent({
      invocationId: ctx.invocationId, author: agent.name, branch: ctx.branch,
      content: { role: 'model', parts: [...block.prefixParts, codePart] },
    });

    const result = await ex.executeCode({
      invocationContext: ctx,
      codeExecutionInput: {
        code: block.code,
        language: block.language,
        inputFiles: state[INPUT_FILES] || [],
        executionId: ex.stateful ? executionIdOf(ctx) : undefined,
      },
    });

    const failed = Boolean(result.stderr);
    if (result.refused && result.retryable === false) counts[ctx.invocationId] = ex.errorRetryAttempts;
    else if (failed) counts[ctx.invocationId] = (counts[ctx.invocationId] || 0) + 1;
    else delete counts[ctx.invocationId];

    const actions = createEventActions();
    const saved = [];
    for (const f of result.outputFiles || []) {
      if (!ctx.artifactService) break;
      const data = f.contentEncoding === 'base64' ? f.content : Buffer.from(f.content).toString('base64');
      actions.artifactDelta[f.name] = await ctx.artifactService.saveArtifact({
        filename: f.name, artifact: { inlineData: { data, mimeType: f.mimeType } },
      });
      saved.push(f.name);
    }
    let output = '';
    if (failed) output = (result.stdout ? result.stdout + (result.stdout.endsWith('\n') ? '' : '\n') : '') + result.stderr;
    else output = `Code execution result:\n${result.stdout}`;
    if (saved.length) output += `\nSaved artifacts: ${saved.join(', ')}`;
    const outcome = !failed ? 'OUTCOME_OK' : result.status === 'timeout' ? 'OUTCOME_DEADLINE_EXCEEDED' : 'OUTCOME_FAILED';
    yield createEvent({
      invocationId: ctx.invocationId, author: agent.name, branch: ctx.branch,
      content: { role: 'model', parts: [{ codeExecutionResult: { outcome, output } }] },
      actions,
    });
    // The answer's content was replaced by the two events above.
    llmResponse.content = undefined;
  }
}
