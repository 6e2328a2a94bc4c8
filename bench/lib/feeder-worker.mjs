// A worker thread does not inherit tsx's loader on Node 20: this entry loads the TypeScript worker through it.
import { tsImport } from 'tsx/esm/api';

await tsImport('./feeder-thread.ts', import.meta.url);
