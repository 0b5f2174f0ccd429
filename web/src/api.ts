/**
 * The page's calls to the server's JSON API (docs/SERVE.md): GET only, same origin. What each
 * path answers is the server's own type (src/serve/api-types.ts, which the server's routes are
 * typed by too), so the page and the server cannot drift apart unnoticed.
 */
import type { ApiAnswers, ApiPath, ErrorAnswer } from '../../src/serve/api-types.ts';

export type * from '../../src/serve/api-types.ts';

export class ApiError extends Error {}

export async function api<P extends ApiPath>(
  path: P,
  query: Record<string, string | undefined> = {},
): Promise<ApiAnswers[P]> {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== '') params.set(key, value);
  const url = params.size ? `${path}?${params.toString()}` : path;
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  const body = (await response.json()) as ApiAnswers[P] & Partial<ErrorAnswer>;
  if (!response.ok) throw new ApiError(body.error ?? `${response.status} ${response.statusText}`);
  return body;
}
