/**
 * Who may talk to the server. It is bound to loopback and read-only, but a web page the user
 * visits elsewhere could still reach it: through DNS rebinding (a name of the attacker's that
 * resolves to 127.0.0.1 — the request then carries that name in Host) or a cross-site request
 * (a foreign Origin). Both are refused; only GET and HEAD exist, so no request body is read.
 */
import type { MiddlewareHandler } from 'hono';

/** The host names (without port) the page may be reached by. */
export function allowedHostNames(address: string, extra: readonly string[] = []): Set<string> {
  const names = new Set(['localhost', '127.0.0.1', '[::1]', ...extra.map((h) => h.toLowerCase())]);
  // A wildcard bind is reachable by any of the machine's addresses, but only names the user
  // gave (--allow-host) are trusted: that is the point of the check.
  if (address !== '0.0.0.0' && address !== '::') names.add(address.includes(':') ? `[${address}]` : address);
  return names;
}

/** `host:port` → the host name, lower-cased (IPv6 in brackets); undefined when malformed. */
function hostName(host: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]{1,5}))?$/i.exec(host.trim());
  return match ? (match[1] as string).toLowerCase() : undefined;
}

export function guard(hosts: ReadonlySet<string>): MiddlewareHandler {
  return async (c, next) => {
    const host = c.req.header('host');
    const name = host === undefined ? undefined : hostName(host);
    if (!name || !hosts.has(name))
      return c.text(
        `palisade serve: refused a request for host "${host ?? ''}" (not this server's name)\n`,
        421,
      );
    const origin = c.req.header('origin');
    if (origin !== undefined) {
      let originHost: string | undefined;
      try {
        const url = new URL(origin);
        originHost = url.protocol === 'http:' ? `${url.host}` : undefined;
      } catch {
        originHost = undefined;
      }
      // The page's own origin is the Host it was loaded from.
      if (originHost === undefined || originHost.toLowerCase() !== host?.toLowerCase())
        return c.text(`palisade serve: refused a request from origin "${origin}"\n`, 403);
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD')
      return c.text('palisade serve: read-only (GET and HEAD only)\n', 405, { allow: 'GET, HEAD' });
    await next();
    c.header('x-content-type-options', 'nosniff');
    c.header('referrer-policy', 'no-referrer');
    c.header(
      'content-security-policy',
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    );
  };
}
