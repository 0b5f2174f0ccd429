/**
 * The web view layer (`palisade serve`): a local server of the analysis layer's answers, and
 * the page that shows them. See docs/SERVE.md.
 */
export { serveOn, startServer, type RunningServer } from './server.ts';
export { listen, type Listener } from './socket/index.ts';
export type * from './types.ts';
