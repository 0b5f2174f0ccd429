/**
 * A small Kubernetes API server double that speaks the HTTP protocol the official client uses,
 * so `@kubernetes/client-node` runs against it unmodified: discovery, list with `limit` /
 * `continue` (a consistent snapshot per list; continuation after compaction is 410 Expired),
 * GET of one object, and watches — chunked streams of JSON lines from a resourceVersion, with
 * bookmarks, `410 Gone` for a compacted version (as an ERROR event, or as the HTTP status),
 * `timeoutSeconds`, and connections dropped on demand (also in the middle of a line). Bearer
 * tokens (401) and per verb/resource denials (403) answer with the API's own Status bodies.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { FakeStore, withTypeMeta, type FakeResource, type LoggedEvent } from './store.ts';

export interface FakeApiServerOptions {
  /** When set, every request needs `Authorization: Bearer <token>` (401 otherwise). */
  readonly token?: string;
  /** Serve HTTPS with this key and certificate (PEM). */
  readonly tls?: { readonly key: string; readonly cert: string };
  /** Answer a watch from a compacted version with HTTP 410 instead of a 200 and an ERROR event. */
  readonly goneAsHttpStatus?: boolean;
  readonly store?: FakeStore;
}

/** A request as the server saw it, for tests that check what the client asked for. */
export interface SeenRequest {
  readonly verb: 'list' | 'watch' | 'get' | 'discovery';
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
}

interface ActiveWatch {
  readonly response: ServerResponse;
  readonly resource: FakeResource;
  readonly bookmarks: boolean;
  close(): void;
}

export class FakeApiServer {
  readonly store: FakeStore;
  /** `verb plural` pairs answered 403 (for example `list pods`, `watch networkpolicies`). */
  readonly forbidden = new Set<string>();
  readonly requests: SeenRequest[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly watches = new Set<ActiveWatch>();
  private readonly snapshots = new Map<number, { items: { itemJson: string }[]; rv: number }>();
  private nextSnapshot = 1;
  private url = '';

  constructor(private readonly options: FakeApiServerOptions = {}) {
    this.store = options.store ?? new FakeStore();
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.handle(req, res);
    this.server = options.tls ? createHttpsServer(options.tls, handler) : createHttpServer(handler);
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server.on('secureConnection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Listens on a free port of `host` (default loopback); returns the server URL. */
  async start(port = 0, host = '127.0.0.1'): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    const address = this.server.address() as AddressInfo;
    this.url = `${this.options.tls ? 'https' : 'http'}://${host}:${address.port}`;
    return this.url;
  }

  get serverUrl(): string {
    return this.url;
  }

  get activeWatchCount(): number {
    return this.watches.size;
  }

  async stop(): Promise<void> {
    for (const watch of this.watches) watch.close();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Sends a BOOKMARK with the current resourceVersion on every watch that asked for bookmarks. */
  bookmark(): void {
    for (const watch of this.watches) {
      if (!watch.bookmarks) continue;
      const object = withTypeMeta(
        watch.resource,
        `{"metadata":{"resourceVersion":"${this.store.resourceVersion}"}}`,
      );
      watch.response.write(`{"type":"BOOKMARK","object":${object}}\n`);
    }
  }

  /** Cuts every watch connection; with `midLine`, after half of a line (a torn chunk). */
  dropWatches(options: { midLine?: boolean } = {}): number {
    const count = this.watches.size;
    for (const watch of [...this.watches]) {
      if (options.midLine) watch.response.write('{"type":"MODIFIED","object":{"kind":');
      const socket = watch.response.socket;
      this.watches.delete(watch);
      watch.close();
      socket?.destroy();
    }
    return count;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams.entries());
    if (this.options.token && req.headers.authorization !== `Bearer ${this.options.token}`) {
      return status(res, 401, 'Unauthorized', 'Unauthorized');
    }
    const parts = url.pathname.split('/').filter((p) => p !== '');
    if (parts[0] === 'api' && parts.length === 1) {
      this.requests.push({ verb: 'discovery', path: url.pathname, query });
      return json(res, 200, { kind: 'APIVersions', versions: ['v1'] });
    }
    if (parts[0] === 'apis' && parts.length <= 2) {
      this.requests.push({ verb: 'discovery', path: url.pathname, query });
      return this.discovery(res, parts[1]);
    }
    if (parts[0] === 'apis' && parts.length === 3) {
      this.requests.push({ verb: 'discovery', path: url.pathname, query });
      return this.resourceList(res, parts[1]!, parts[2]!);
    }
    const [group, version, rest] =
      parts[0] === 'api' ? ['', parts[1], parts.slice(2)] : [parts[1], parts[2], parts.slice(3)];
    let namespace: string | undefined;
    let plural: string | undefined;
    let name: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) [, namespace, plural, name] = rest;
    else [plural, name] = rest;
    const resource = this.store.resources.find(
      (r) => r.group === group && r.version === version && r.plural === plural,
    );
    if (!resource || this.store.absent.has(resource.plural) || rest.length > 4) {
      return status(res, 404, 'NotFound', 'the server could not find the requested resource');
    }
    const watch = query.watch === 'true' || query.watch === '1';
    const verb = name !== undefined ? 'get' : watch ? 'watch' : 'list';
    this.requests.push({ verb, path: url.pathname, query });
    if (this.forbidden.has(`${verb} ${resource.plural}`)) {
      const scope = namespace ? `in the namespace "${namespace}"` : 'at the cluster scope';
      const subject = name !== undefined ? `${resource.plural} "${name}"` : resource.plural;
      return status(
        res,
        403,
        'Forbidden',
        `${subject} is forbidden: User "tester" cannot ${verb} resource "${resource.plural}" in API group "${resource.group}" ${scope}`,
        { kind: resource.plural, ...(name !== undefined ? { name } : {}) },
      );
    }
    if (verb === 'get') {
      const stored = this.store.get(resource, namespace ?? '', name!);
      if (!stored) return status(res, 404, 'NotFound', `${resource.plural} "${name}" not found`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return void res.end(withTypeMeta(resource, stored.itemJson));
    }
    if (verb === 'watch') return this.watch(req, res, resource, namespace, query);
    return this.list(res, resource, namespace, query);
  }

  private discovery(res: ServerResponse, group: string | undefined): void {
    const served = this.store.resources.filter((r) => r.group !== '' && !this.store.absent.has(r.plural));
    const groups = new Map<string, string[]>();
    for (const r of served) {
      const versions = groups.get(r.group) ?? [];
      if (!versions.includes(r.version)) versions.push(r.version);
      groups.set(r.group, versions);
    }
    const describe = (name: string, versions: string[]): object => ({
      name,
      versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
    });
    if (group === undefined) {
      return json(res, 200, {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: [...groups].map(([name, versions]) => describe(name, versions)),
      });
    }
    const versions = groups.get(group);
    if (!versions) return status(res, 404, 'NotFound', 'the server could not find the requested resource');
    json(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...describe(group, versions) });
  }

  private resourceList(res: ServerResponse, group: string, version: string): void {
    const resources = this.store.resources.filter(
      (r) => r.group === group && r.version === version && !this.store.absent.has(r.plural),
    );
    if (resources.length === 0)
      return status(res, 404, 'NotFound', 'the server could not find the requested resource');
    json(res, 200, {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: `${group}/${version}`,
      resources: resources.map((r) => ({
        name: r.plural,
        kind: r.kind,
        namespaced: r.namespaced,
        verbs: ['get', 'list', 'watch'],
      })),
    });
  }

  private list(
    res: ServerResponse,
    resource: FakeResource,
    namespace: string | undefined,
    query: Record<string, string>,
  ): void {
    const limit = query.limit ? Number(query.limit) : 0;
    let snapshotId: number;
    let offset = 0;
    if (query.continue) {
      const token = decodeToken(query.continue);
      const snapshot = token ? this.snapshots.get(token.s) : undefined;
      if (!token || !snapshot) return status(res, 400, 'BadRequest', 'continue key is not valid');
      if (snapshot.rv < this.store.compactedRevision) {
        this.snapshots.delete(token.s);
        return status(
          res,
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      }
      snapshotId = token.s;
      offset = token.o;
    } else {
      snapshotId = this.nextSnapshot++;
      this.snapshots.set(snapshotId, this.store.snapshot(resource, namespace));
    }
    const snapshot = this.snapshots.get(snapshotId)!;
    const end = limit > 0 ? Math.min(snapshot.items.length, offset + limit) : snapshot.items.length;
    const metadata: Record<string, unknown> = { resourceVersion: String(snapshot.rv) };
    if (end < snapshot.items.length) {
      metadata.continue = encodeToken({ s: snapshotId, o: end });
      metadata.remainingItemCount = snapshot.items.length - end;
    } else {
      this.snapshots.delete(snapshotId);
    }
    const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    const items: string[] = [];
    for (let i = offset; i < end; i++) items.push(snapshot.items[i]!.itemJson);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      `{"kind":"${resource.kind}List","apiVersion":"${apiVersion}","metadata":${JSON.stringify(metadata)},"items":[${items.join(',')}]}`,
    );
  }

  private watch(
    req: IncomingMessage,
    res: ServerResponse,
    resource: FakeResource,
    namespace: string | undefined,
    query: Record<string, string>,
  ): void {
    const fromText = query.resourceVersion ?? '';
    let backlog: string[];
    if (fromText === '' || fromText === '0') {
      // No version: the current state as ADDED events, then changes (the API's own behaviour).
      const { items } = this.store.snapshot(resource, namespace);
      backlog = items.map((s) => event('ADDED', withTypeMeta(resource, s.itemJson)));
    } else if (Number(fromText) > this.store.resourceVersion) {
      // A version this server has not reached (a client's record from another cluster or an
      // etcd restored from a backup): the API server waits a few seconds for it, then ends the
      // watch with this error; client-go lists again on it.
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const message = `Too large resource version: ${fromText}, current: ${this.store.resourceVersion}`;
      const body = statusBody(504, 'Timeout', `Timeout: ${message}`, {
        causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
        retryAfterSeconds: 1,
      });
      res.end(`{"type":"ERROR","object":${JSON.stringify(body)}}\n`);
      return;
    } else {
      const events = this.store.eventsSince(resource, namespace, Number(fromText));
      if (events === 'gone') {
        const message = `too old resource version: ${fromText} (${this.store.compactedRevision})`;
        if (this.options.goneAsHttpStatus) return status(res, 410, 'Expired', message);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const body = statusBody(410, 'Expired', message);
        res.end(`{"type":"ERROR","object":${JSON.stringify(body)}}\n`);
        return;
      }
      backlog = events.map((e) => event(e.type, withTypeMeta(resource, e.stored.itemJson)));
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    // The API server answers a watch at once, before any event: so must the double.
    res.flushHeaders();
    for (const line of backlog) res.write(line);
    const unsubscribe = this.store.subscribe((e: LoggedEvent) => {
      if (e.resource !== resource || (namespace !== undefined && e.namespace !== namespace)) return;
      res.write(event(e.type, withTypeMeta(resource, e.stored.itemJson)));
    });
    let timer: NodeJS.Timeout | undefined;
    const active: ActiveWatch = {
      response: res,
      resource,
      bookmarks: query.allowWatchBookmarks === 'true',
      close: () => {
        unsubscribe();
        if (timer) clearTimeout(timer);
        this.watches.delete(active);
      },
    };
    this.watches.add(active);
    if (query.timeoutSeconds) {
      timer = setTimeout(
        () => {
          active.close();
          res.end();
        },
        Number(query.timeoutSeconds) * 1000,
      );
    }
    req.on('close', () => active.close());
  }
}

function event(type: string, objectJson: string): string {
  return `{"type":"${type}","object":${objectJson}}\n`;
}

function statusBody(code: number, reason: string, message: string, details?: object): object {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

function status(res: ServerResponse, code: number, reason: string, message: string, details?: object): void {
  json(res, code, statusBody(code, reason, message, details));
}

function json(res: ServerResponse, code: number, body: object): void {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function encodeToken(token: { s: number; o: number }): string {
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

function decodeToken(text: string): { s: number; o: number } | undefined {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as { s: unknown; o: unknown };
    return typeof value.s === 'number' && typeof value.o === 'number'
      ? { s: value.s, o: value.o }
      : undefined;
  } catch {
    return undefined;
  }
}
