/**
 * What the lab records of its control plane's processes (in its state file), for every later
 * command to reach etcd and for `lab down` to stop them.
 */

/** What `lab down` needs to stop the control plane, recorded in the lab's state. */
export interface ControlPlaneRecord {
  /** etcd's client URL on loopback (the lab's own commands) and its unix socket (the agents). */
  readonly etcd: {
    readonly pid: number;
    readonly endpoint: string;
    readonly socket: string;
    readonly dataDir: string;
    /**
     * The lab's certificates (CA, etcd's, one per identity): etcd wants a client certificate and
     * enforces RBAC. Absent in a lab made before the lab's etcd was authenticated: plain.
     */
    readonly pki?: string;
  };
  readonly agents: readonly {
    readonly node: string;
    readonly pid: number;
    readonly log: string;
    /** With the flow log on: the Unix socket of the agent's HTTP endpoints (`/flows`). */
    readonly socket?: string;
  }[];
  /** Root of the key layout (`/palisade`). */
  readonly prefix: string;
}
