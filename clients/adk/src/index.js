// @airlock-sandbox/adk: airlock sandboxes for Google's Agent Development
// Kit. docs/adk.md in the airlock repository is its manual.
export { AirlockCodeExecutor } from './executor.js';
export { AirlockCodeBlockProcessor, findBlock } from './processor.js';
export { AirlockError, parseURL } from './http.js';
