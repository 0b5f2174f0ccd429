/**
 * The web view layer (`palisade serve`): a local server of the analysis layer's answers, and
 * the page that shows them. See docs/SERVE.md.
 */
export { startServer, type RunningServer } from './server.ts';
export { API_ENDPOINTS } from './app.ts';
export type * from './types.ts';
