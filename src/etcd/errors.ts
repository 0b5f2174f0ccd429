/**
 * etcd failures a user can act on, each as one line: etcd not there, a TLS handshake refused
 * (no client certificate, or one its CA did not sign; a server certificate that does not verify;
 * TLS spoken to a plain port), a user name or password refused, a permission denied by etcd's
 * RBAC, a certificate or key that cannot be read. The gRPC stack's messages carry OpenSSL's
 * internals and timestamps; `describeEtcdError` keeps the part that says what happened.
 */

/** etcd cannot be used as configured (the message is one line, for the user). */
export class EtcdAccessError extends Error {}

/** etcd's answer for a lease it no longer has (expired or revoked) — one granted can expire before its first use when the process stalls. */
export function isLeaseNotFound(error: unknown): boolean {
  return /requested lease not found/i.test(error instanceof Error ? error.message : String(error));
}

/** etcd did not answer (or refused the connection) — a kind of EtcdAccessError. */
export class EtcdUnreachableError extends EtcdAccessError {}

/** What went wrong talking to etcd, by what the user must change. */
type EtcdFailureKind = 'unreachable' | 'tls' | 'auth' | 'permission' | 'other';

interface EtcdFailure {
  readonly kind: EtcdFailureKind;
  /** One line, without gRPC's status prefix, timestamps or OpenSSL's source locations. */
  readonly detail: string;
}

/** Whether an error comes from the etcd client (its GRPC… and Etcd… classes), not from our code. */
export function isEtcdClientError(error: unknown): boolean {
  return (
    error instanceof Error && /^(GRPC|Etcd|Client(Runtime|Closed))\w*Error$/.test(error.constructor.name)
  );
}

/** Classifies an error from the etcd client. */
export function describeEtcdError(error: unknown): EtcdFailure {
  const name = error instanceof Error ? error.constructor.name : '';
  const raw = error instanceof Error ? error.message : String(error);
  const detail = cleanMessage(raw);
  if (name === 'EtcdPermissionDeniedError' || /permission denied/i.test(raw))
    return { kind: 'permission', detail };
  if (name === 'EtcdAuthenticationFailedError' || /authentication failed|invalid auth token/i.test(raw))
    return { kind: 'auth', detail };
  if (/SSL|TLS|certificate|handshake|alert/i.test(raw))
    return { kind: 'tls', detail: tlsDetail(raw, detail) };
  if (/UNAVAILABLE|ECONNREFUSED|ENOENT|no connection|DEADLINE|timed? ?out/i.test(raw))
    return { kind: 'unreachable', detail };
  return { kind: 'other', detail };
}

/** gRPC's "14 UNAVAILABLE: No connection established. Last error: …" down to what happened. */
function cleanMessage(message: string): string {
  return message
    .replace(/^\d+ [A-Z_]+: /, '')
    .replace(/^No connection established\. Last error: /, '')
    .replace(/^Error: /, '')
    .replace(/\s*\(\d{4}-\d\d-\d\dT[^)]*\)/g, '')
    .replace(/\.? ?Resolution note: ?.*$/s, '')
    .split('\n')[0]!
    .trim();
}

/** OpenSSL's "…:SSL routines:ssl3_read_bytes:sslv3 alert bad certificate:../deps/…" → what it means. */
function tlsDetail(raw: string, cleaned: string): string {
  if (
    /alert bad certificate|alert certificate required|alert unknown ca|peer did not return a certificate/i.test(
      raw,
    )
  )
    return 'etcd refused the TLS handshake: it wants a client certificate signed by a CA it trusts';
  if (/disconnected before secure TLS connection|wrong version number|packet length too long/i.test(raw))
    return 'the TLS handshake failed: is etcd serving TLS there?';
  const reason = /SSL routines:[^:]*:([^:]+)/.exec(raw)?.[1];
  return reason ? `the TLS handshake failed: ${reason}` : `the TLS handshake failed: ${cleaned}`;
}
