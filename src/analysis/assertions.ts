/**
 * Connectivity tests as code: expected connections (from, to, port, allowed) checked against the
 * reference evaluator, each failure with the verdict that explains it.
 */
import type { Cluster, Protocol, Semantics, SourceLocation } from '../model/types.ts';
import { checkConnection } from './check.ts';
import { FILE_SPELLING, portAtDestination } from './port-query.ts';
import { resolveAddress } from './resolve-address.ts';
import type { CheckResult } from './types.ts';

/** One expected connection, as written in an expectations file. */
export interface Expectation {
  readonly from: string;
  readonly to: string;
  /** A number, or a named container port of the destination. */
  readonly port: number | string;
  readonly protocol: Protocol;
  /** Whether the protocol was given apart from the port (`protocol: UDP`), not in it or by default. */
  readonly protocolApart?: boolean;
  readonly allowed: boolean;
  readonly location?: SourceLocation;
}

export type AssertionResult =
  | {
      readonly expectation: Expectation;
      readonly status: 'passed' | 'failed';
      readonly check: CheckResult;
    }
  | {
      /** The expectation names something the input does not have (an endpoint, a named port). */
      readonly expectation: Expectation;
      readonly status: 'unresolved';
      readonly message: string;
    };

export function checkExpectations(
  cluster: Cluster,
  expectations: readonly Expectation[],
  options: { readonly semantics?: Semantics } = {},
): AssertionResult[] {
  return expectations.map((expectation): AssertionResult => {
    const from = resolveAddress(cluster, expectation.from);
    const to = resolveAddress(cluster, expectation.to);
    if (!from.ok) return { expectation, status: 'unresolved', message: `from: ${from.message}` };
    if (!to.ok) return { expectation, status: 'unresolved', message: `to: ${to.message}` };
    const { protocol } = expectation;
    const destinationPort = portAtDestination(
      to.address,
      { port: expectation.port, protocol },
      FILE_SPELLING,
      expectation.protocolApart === true,
    );
    if (!destinationPort.ok) return { expectation, status: 'unresolved', message: destinationPort.message };
    const { port } = destinationPort;
    // A workload is allowed only when every pair of pods is (as `check` decides).
    const check: CheckResult = checkConnection(
      cluster,
      {
        from,
        to,
        protocol,
        port,
        ...(typeof expectation.port === 'string' ? { portName: expectation.port } : {}),
      },
      options,
    );
    return {
      expectation,
      status: check.verdict.allowed === expectation.allowed ? 'passed' : 'failed',
      check,
    };
  });
}
