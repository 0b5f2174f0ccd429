/**
 * What the lab and its pod agents say to each other over the control socket: JSON lines,
 * `{id, request}` one way and `{id, result | error}` back.
 */
export type Transport = 'TCP' | 'UDP';

export interface ProbeTarget {
  readonly ip: string;
  readonly port: number;
  readonly protocol: Transport;
}

export interface ProbeOutcome {
  readonly connected: boolean;
  /** Why not: timeout (dropped), refused, unreachable… */
  readonly detail: string;
  readonly startedAt: number;
  readonly endedAt: number;
}

export type AgentRequest =
  | { readonly op: 'listen'; readonly ports: readonly { port: number; protocol: Transport }[] }
  | { readonly op: 'probe'; readonly targets: readonly ProbeTarget[]; readonly timeoutMs: number }
  | { readonly op: 'open'; readonly target: ProbeTarget; readonly timeoutMs: number }
  | { readonly op: 'ping'; readonly stream: number; readonly timeoutMs: number }
  | { readonly op: 'close'; readonly stream: number };
