/**
 * `tasklatch/replay`: the contract fixture format and its replay through a store, what
 * `tasklatch replay` runs. The rules the fixtures are written in are `tasklatch/core`.
 */
export { parseFixture, type ReplayFixture, type ReplayCase } from './replay/fixture.js';
export { runReplay, type ReplayReport, type CaseOutcome } from './replay/run-replay.js';
