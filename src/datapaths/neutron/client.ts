/**
 * A small client for Neutron's REST API (v2.0): JSON in and out, a deadline per call, and
 * Neutron's error bodies (`{"NeutronError": {"type", "message"}}`) turned into a NeutronError
 * whose kind the controller acts on — a rule that already exists, a port that vanished, an
 * exhausted quota, Neutron unreachable. Every call that changes Neutron is counted, so tests and
 * benchmarks can say how many writes a change cost.
 */

type NeutronErrorKind = 'exists' | 'not-found' | 'quota' | 'conflict' | 'unreachable' | 'refused';

export class NeutronError extends Error {
  constructor(
    message: string,
    readonly kind: NeutronErrorKind,
    readonly status?: number,
    /** Neutron's error type (`SecurityGroupRuleExists`, `OverQuota`, …). */
    readonly type?: string,
  ) {
    super(message);
  }
}

interface NeutronClientOptions {
  /** The API's root, e.g. `http://127.0.0.1:9696` (with or without a trailing `/`). */
  readonly url: string;
  /** The project (tenant) objects are created in; with noauth every POST must name it. */
  readonly project: string;
  /** Extra headers (a Keystone token: `X-Auth-Token`). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Deadline of one call, ms (default 60 s). Generous on purpose: a call given up on is still
   * worked on by Neutron, so a short deadline on a loaded Neutron piles retries onto the work it
   * is already behind on (and, on one database, onto its locks) — each slower than the last.
   */
  readonly timeoutMs?: number;
}

export interface NeutronCallCounts {
  readonly reads: number;
  readonly writes: number;
}

export class NeutronClient {
  private readonly base: string;
  private reads = 0;
  private writes = 0;

  constructor(readonly options: NeutronClientOptions) {
    this.base = options.url.replace(/\/+$/, '');
  }

  get project(): string {
    return this.options.project;
  }

  /** Calls made so far (writes: POST, PUT and DELETE, whether or not Neutron accepted them). */
  counts(): NeutronCallCounts {
    return { reads: this.reads, writes: this.writes };
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PUT', path, body);
  }

  delete(path: string): Promise<void> {
    return this.call<void>('DELETE', path);
  }

  /**
   * One call. An idempotent one (GET, PUT, DELETE) is tried again, twice, when Neutron is
   * unreachable or fails inside (5xx: under load, SQLite's lock); a POST is not — a create that
   * went through before the answer was lost would be made twice (the controller finds a
   * duplicate group on its next read and deletes it).
   */
  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once<T>(method, path, body);
      } catch (error) {
        const retry = method !== 'POST' && error instanceof NeutronError && error.kind === 'unreachable';
        if (!retry || attempt >= 2) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250 * 4 ** attempt));
      }
    }
  }

  private async once<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (method === 'GET') this.reads++;
    else this.writes++;
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...this.options.headers,
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
      });
    } catch (error) {
      const cause =
        error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : '';
      throw new NeutronError(
        `Neutron at ${this.base} is unreachable (${method} ${path}: ${cause})`,
        'unreachable',
      );
    }
    const text = await response.text();
    if (response.ok) return (text === '' ? undefined : JSON.parse(text)) as T;
    throw errorOf(method, path, response.status, text);
  }
}

/** Neutron's error body as a NeutronError of the kind the controller distinguishes. */
function errorOf(method: string, path: string, status: number, text: string): NeutronError {
  let type: string | undefined;
  let detail = text.trim().slice(0, 300);
  try {
    const parsed = JSON.parse(text) as { NeutronError?: { type?: string; message?: string } };
    type = parsed.NeutronError?.type;
    detail = parsed.NeutronError?.message ?? detail;
  } catch {
    // not JSON: keep the text
  }
  const what = `Neutron refused ${method} ${path} (${status}${type ? ` ${type}` : ''}): ${detail}`;
  if (type === 'SecurityGroupRuleExists') return new NeutronError(what, 'exists', status, type);
  if (type === 'OverQuota' || /quota/i.test(type ?? '')) return new NeutronError(what, 'quota', status, type);
  if (status === 404) return new NeutronError(what, 'not-found', status, type);
  if (status === 409) return new NeutronError(what, 'conflict', status, type);
  if (status >= 500) return new NeutronError(what, 'unreachable', status, type);
  return new NeutronError(what, 'refused', status, type);
}

/** The id of the existing rule a `SecurityGroupRuleExists` names ("Rule id is <uuid>."). */
export function existingRuleId(error: NeutronError): string | undefined {
  return /Rule id is ([0-9a-f-]{36})/i.exec(error.message)?.[1];
}
