// The agent definition of docs/adk.md and a call of each exported
// function, type-checked with tsc --strict against @google/adk's own
// declarations (clients/run-tests): a signature of src/index.d.ts that
// ADK's base classes do not accept (BaseCodeExecutor.executeCode,
// BaseLlmResponseProcessor.runAsync), or a type ADK no longer exports,
// fails the check. index.ts beside it is src/index.d.ts, copied there by
// clients/run-tests, so that tsc checks it as source (skipLibCheck skips
// the node_modules declarations, which need packages ADK does not bring).
import { CodeExecutionLanguage, LlmAgent, Runner, InMemorySessionService, InMemoryArtifactService, SkillToolset, type Skill, type InvocationContext } from '@google/adk';
import { AirlockCodeExecutor, AirlockCodeBlockProcessor, AirlockError, findBlock, parseURL, type AirlockExecutionResult } from './index.js';

declare const skills: Skill[];

const executor = new AirlockCodeExecutor({ url: 'unix:/run/airlock.sock', stateful: true, timeoutSeconds: 20 });
const agent = new LlmAgent({
  name: 'analyst',
  model: 'gemini-2.5-flash',
  codeExecutor: executor,
  responseProcessors: [new AirlockCodeBlockProcessor()],
  tools: [new SkillToolset(skills, { codeExecutor: new AirlockCodeExecutor({ url: 'unix:/run/airlock.sock', timeoutSeconds: 10 }) })],
});
const sessions = executor.closeWithSessions(new InMemorySessionService());
export const runner = new Runner({ appName: 'app', agent, sessionService: sessions, artifactService: new InMemoryArtifactService() });

export async function calls(invocationContext: InvocationContext): Promise<string> {
  const res: AirlockExecutionResult = await executor.executeCode({
    invocationContext,
    codeExecutionInput: { code: 'print(1)', language: CodeExecutionLanguage.PYTHON, inputFiles: [], executionId: 's1' },
  });
  if (res.refused && !res.retryable) {
    return res.error?.message ?? '';
  }
  const block = findBlock({ role: 'model', parts: [{ text: '```python\nprint(1)\n```' }] }, [['```python\n', '\n```']]);
  const where = parseURL('http://127.0.0.1:8080');
  await executor.closeExecution('s1');
  await executor.close();
  try {
    throw new AirlockError('x');
  } catch (e) {
    if (e instanceof AirlockError && e.retryable) return e.fix;
  }
  return `${res.status} ${res.exitCode ?? ''} ${res.stdout} ${block?.language ?? ''} ${where.host} ${executor.sandboxId('s1') ?? ''}`;
}
