/** What the lab-with-a-control-plane tests share, on either datapath: the shop, its probes, deadlines. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProbePort } from '../../src/lab/index.ts';

export const ROOT = join(import.meta.dirname, '..', '..');

export const SHOP = [
  'examples/shop-running',
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
  'examples/shop/policies-payments.yaml',
].map((p) => join(ROOT, p));

export const PORTS: ProbePort[] = [
  { port: 53, protocol: 'UDP' },
  { port: 8080, protocol: 'TCP' },
];

/** Agents start through tsx on a loaded machine: generous. */
export const REALIZE_MS = 120_000;

/** Whether `pid` runs (a zombie, which PID 1 may never reap, does not). */
export const alive = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
};
