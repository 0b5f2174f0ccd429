/**
 * What the API server or the network said, turned into one line a user can act on: credentials
 * rejected (401), a permission missing (403, naming the verb and resource), nothing listening,
 * a certificate that does not verify. Never a stack trace.
 */
import type { ApiErrorKind } from './types.ts';

export class KubeApiError extends Error {
  constructor(
    readonly kind: ApiErrorKind,
    message: string,
    /** The HTTP status, when the server answered. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Codes Node's TLS layer gives when a certificate does not verify. */
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'EPROTO',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/** A failed request (no HTTP answer) as a KubeApiError. */
export function networkError(server: string, error: unknown): KubeApiError {
  if (error instanceof KubeApiError) return error;
  const code = errorCode(error);
  const text = error instanceof Error ? error.message : String(error);
  if ((code && TLS_CODES.has(code)) || /certificate|self[- ]signed|SSL|TLS/i.test(text)) {
    return new KubeApiError(
      'tls',
      `TLS: the certificate of ${server} could not be verified (${code ?? firstLine(text)}); check certificate-authority in the kubeconfig`,
    );
  }
  if ((code && NETWORK_CODES.has(code)) || /socket hang up|premature close/i.test(text)) {
    return new KubeApiError(
      'unreachable',
      `cannot reach the API server at ${server} (${code ?? firstLine(text)})`,
    );
  }
  return new KubeApiError('unreachable', `cannot reach the API server at ${server}: ${firstLine(text)}`);
}

/** What a request was, for messages: `list pods at the cluster scope`. */
export interface RequestDescription {
  readonly verb: string;
  readonly resource: string;
  readonly group: string;
  readonly namespace?: string;
}

/** An HTTP answer other than 200 as a KubeApiError (the body is the API's Status object when it has one). */
export function statusError(
  server: string,
  httpStatus: number,
  body: unknown,
  request: RequestDescription,
): KubeApiError {
  const status = (body ?? {}) as {
    message?: unknown;
    reason?: unknown;
    details?: { causes?: { reason?: unknown }[] };
  };
  const serverMessage = typeof status.message === 'string' ? firstLine(status.message) : '';
  const what = `${request.verb} ${request.resource}${request.group ? ` (API group ${request.group})` : ''} ${
    request.namespace !== undefined ? `in namespace ${request.namespace}` : 'at the cluster scope'
  }`;
  switch (httpStatus) {
    case 401:
      return new KubeApiError(
        'unauthorized',
        `the API server at ${server} rejected the credentials (401 Unauthorized); log in again or check the user of the context`,
        401,
      );
    case 403: {
      const user = /User "([^"]*)"/.exec(serverMessage)?.[1];
      return new KubeApiError(
        'forbidden',
        `forbidden (403): ${user !== undefined ? `user "${user}"` : 'this user'} may not ${what}; Palisade needs get, list and watch on it (see "RBAC" in docs/commands/reflect.md)`,
        403,
      );
    }
    case 404:
      return new KubeApiError('not-found', `${request.resource} is not served by ${server} (404)`, 404);
    case 410:
      return new KubeApiError(
        'gone',
        `${what}: 410 Gone (${serverMessage || 'resource version too old'})`,
        410,
      );
    case 504:
      // A version the server has not reached yet (a record from before an etcd restore, or from
      // another cluster): waiting will not help, listing again does (client-go does the same).
      if (
        status.details?.causes?.some((c) => c.reason === 'ResourceVersionTooLarge') ||
        /too large resource version/i.test(serverMessage)
      )
        return new KubeApiError('gone', `${what}: ${serverMessage || 'resource version too large'}`, 504);
      return serverError(server, httpStatus, status.reason, what, serverMessage);
    default:
      return serverError(server, httpStatus, status.reason, what, serverMessage);
  }
}

function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'FETCH_ERROR' && code !== 'system') return code;
    const errno = (e as { errno?: unknown }).errno;
    if (typeof errno === 'string') return errno;
    e = (e as { cause?: unknown }).cause ?? (e as { erroredSysCall?: unknown }).erroredSysCall;
  }
  return undefined;
}

function firstLine(text: string): string {
  return text.split('\n')[0]!.trim();
}

function serverError(
  server: string,
  httpStatus: number,
  reason: unknown,
  what: string,
  serverMessage: string,
): KubeApiError {
  return new KubeApiError(
    'server',
    `the API server answered ${httpStatus}${typeof reason === 'string' ? ` ${reason}` : ''} to ${what}${
      serverMessage ? `: ${serverMessage}` : ''
    }`,
    httpStatus,
  );
}
