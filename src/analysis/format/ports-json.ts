/**
 * A port set as JSON data: `{"TCP": [[80, 80], [8000, 8080]], "UDP": [[53, 53]]}` — protocols
 * with no allowed port are left out, so `{}` is "nothing allowed".
 */
import { PROTOCOLS } from '../../model/types.ts';
import type { PortSet } from '../../semantics/index.ts';

export function portSetJson(ports: PortSet): Record<string, [number, number][]> {
  const result: Record<string, [number, number][]> = {};
  for (const p of PROTOCOLS) if (ports.ranges[p].length) result[p] = ports.ranges[p].map(([a, b]) => [a, b]);
  return result;
}
