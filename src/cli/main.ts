#!/usr/bin/env node
import { main } from './run.js';

const code = await main(process.argv.slice(2));
process.exitCode = code;
// Commands close what they open; should anything still hold the event loop, exit regardless.
setTimeout(() => process.exit(code), 2000).unref();
