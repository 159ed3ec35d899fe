// Types of @airlock-sandbox/adk (written by hand; the package is plain ESM).
import type { Content } from '@google/genai';
import type {
  CodeExecutionResult,
  Event,
  ExecuteCodeParams,
  File,
  InvocationContext,
  LlmResponse,
} from '@google/adk';
import { BaseCodeExecutor, BaseLlmResponseProcessor, BaseSessionService } from '@google/adk';

/** Limits a request may tighten below the served policy (docs/serve.md). */
export interface AirlockPolicy {
  cpu_time?: string | number;
  memory?: string | number;
  pids?: number;
  cpus?: number;
  file_size?: string | number;
  open_files?: number;
  max_output?: string | number;
  net?: 'none' | 'loopback' | 'host' | string;
}

export interface AirlockCodeExecutorOptions {
  /** "unix:PATH" or "http://HOST:PORT": where `airlock serve` listens. */
  url: string;
  /** A bearer token of the server's --token-file (none over its unix socket). */
  token?: string;
  /** One live sandbox per ADK execution id (the session id), kept across calls. Default false. */
  stateful?: boolean;
  /** Wall-clock limit of one block or script, in seconds. Default 30. */
  timeoutSeconds?: number;
  /** A stateful sandbox is closed after this long without a call. Default 300. */
  idleTimeoutSeconds?: number;
  /** Tightens the served policy (never loosens it: the server refuses that). */
  policy?: AirlockPolicy;
  /** Added to the program's environment. */
  env?: Record<string, string>;
  /** How often a busy refusal (429/503, retryable) is retried here before it is a result. Default 2. */
  busyRetries?: number;
  /** The longest wait between those retries, whatever Retry-After says. Default 5. */
  maxRetryDelaySeconds?: number;
  /** Stateful: a changed file larger than this is named, not returned. Default 16 MiB. */
  maxOutputFileBytes?: number;
  /** ADK's: failed blocks in a row per invocation before the next is not run. Default 2. */
  errorRetryAttempts?: number;
  /** ADK's (CSV input files are loaded with pandas first). Default false. */
  optimizeDataFile?: boolean;
  /** ADK's fences of code blocks. */
  codeBlockDelimiters?: Array<[string, string]>;
}

/** A result status of airlock (DESIGN.md, Result), or "refused" when nothing ran. */
export type AirlockStatus =
  | 'ok' | 'exited' | 'signaled' | 'timeout' | 'cpu_limit' | 'memory_limit'
  | 'seccomp_violation' | 'output_limit' | 'cancelled' | 'setup_error' | 'error' | 'refused';

/** ADK's CodeExecutionResult, with what airlock says about the run. */
export interface AirlockExecutionResult extends CodeExecutionResult {
  status: AirlockStatus;
  exitCode?: number;
  signal?: string;
  seccompSyscall?: string;
  /** Set when nothing ran: the server (or this client) refused. */
  refused?: boolean;
  /** For a refusal: whether trying again can help. */
  retryable?: boolean;
  error?: { class: string; retryable: boolean; message: string; fix?: string; field?: string };
}

export declare class AirlockCodeExecutor extends BaseCodeExecutor {
  constructor(options: AirlockCodeExecutorOptions);
  timeoutSeconds: number;
  idleTimeoutSeconds: number;
  executeCode(params: ExecuteCodeParams): Promise<AirlockExecutionResult>;
  /** Closes the live sandbox of one execution id (an ADK session id). */
  closeExecution(executionId: string): Promise<void>;
  /** Closes every live sandbox of this executor and its connections. */
  close(): Promise<void>;
  /** Makes sessionService.deleteSession close the session's sandbox too. */
  closeWithSessions<T extends BaseSessionService>(sessionService: T): T;
  /** The airlock id of an execution's live sandbox, if it has one. */
  sandboxId(executionId: string): string | undefined;
}

/**
 * Runs the first code block of each model answer with the agent's
 * codeExecutor: `responseProcessors: [new AirlockCodeBlockProcessor()]`
 * (@google/adk 2.0.0 runs none on its own).
 */
export declare class AirlockCodeBlockProcessor extends BaseLlmResponseProcessor {
  runAsync(invocationContext: InvocationContext, llmResponse: LlmResponse): AsyncGenerator<Event, void, void>;
}

export declare function findBlock(
  content: Content,
  delimiters: Array<[string, string]>,
): { code: string; language: string; prefixParts: Array<{ text: string }> } | null;

export declare class AirlockError extends Error {
  klass: 'invalid' | 'unsupported' | 'unavailable' | 'internal' | string;
  retryable: boolean;
  fix: string;
  field: string;
  stage: string;
  httpStatus: number;
  retryAfterSeconds?: number;
}

export declare function parseURL(url: string): { socketPath?: string; hostname?: string; port?: number; host: string };

export type { File };
