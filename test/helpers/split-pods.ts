/**
 * A cluster that splits into two classes however many pods it has: bare pods `pod-0`… in
 * `default`, `app` alternating between `a` and `b`, each with a `shard` label of its own that no
 * selector reads (so classes named alike by their pods' common prefix are told apart by `app`);
 * `A_FROM_B` isolates app=a for ingress, admitting only app=b. For the per-class outputs' tests.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { namespace, pod, policy, type Raw } from './builders.ts';

export function splitPods(count: number): Raw[] {
  return [
    namespace('default'),
    ...Array.from({ length: count }, (_, i) =>
      pod(
        'default',
        `pod-${i}`,
        { app: i % 2 === 0 ? 'a' : 'b', shard: `s-${i}` },
        { ips: [`10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`] },
      ),
    ),
  ];
}

export const A_FROM_B: Raw = policy('default', 'a-from-b', {
  podSelector: { matchLabels: { app: 'a' } },
  ingress: [{ from: [{ podSelector: { matchLabels: { app: 'b' } } }] }],
});

/** The objects as one YAML stream in `dir`; its path. */
export async function writeObjects(
  dir: string,
  objects: readonly Raw[],
  name = 'objects.yaml',
): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
  return file;
}
