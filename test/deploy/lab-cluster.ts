/**
 * The cluster the kubelet tests install onto: a lab (pods on two nodes, no policy), the fake API
 * server over TLS holding the lab's pods and each node's pod CIDRs, reached from every node over
 * its own link, and the checks both install tests make — every agent ready on the manifest's
 * port, and real connections equal to the reference evaluator.
 */
import { loadFromObjects } from '../../src/ingest/index.ts';
import { defaultPorts, probeLab, type Lab, type LabPlan } from '../../src/lab/index.ts';
import { podObjects } from '../../src/lab/topology.ts';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import type { Raw } from '../helpers/builders.ts';
import { until } from '../agent/fault-world.ts';
import { namespace, nodeWithPodCidrs, pod } from '../agent/helpers.ts';
import { apiServerCertificate, linkNodeToHost, nodeLinkAddresses } from './kubelet.ts';

type Cleanups = (() => Promise<unknown> | void)[];

/** The lab's cluster before any policy: two nodes, web and db pods on each. */
export function labObjects(): Raw[] {
  return [
    namespace('shop', { team: 'a' }),
    pod('shop', 'web-1', '10.1.0.2', 'n1', { app: 'web' }, [80]),
    pod('shop', 'db-1', '10.1.0.3', 'n1', { app: 'db' }, [5432]),
    pod('shop', 'web-2', '10.2.0.2', 'n2', { app: 'web' }, [80]),
    pod('shop', 'db-2', '10.2.0.3', 'n2', { app: 'db' }, [5432]),
  ];
}

export interface LabApi {
  readonly server: FakeApiServer;
  readonly port: string;
  /** The server's certificate, its own CA. */
  readonly tls: { readonly key: string; readonly cert: string };
  /** Each node's link to the host (by node index). */
  readonly links: readonly { readonly host: string; readonly node: string }[];
  /** What the API holds besides the Nodes: the namespaces and the lab's pods. */
  readonly objects: Raw[];
}

/**
 * Starts the API server for a lab built from `base`: its certificate for every node link's host
 * address (and `alsoAt`), the Nodes with their pods' addresses as pod CIDRs, the lab's pods as
 * running Pods; links every node to the host in the test file's own `subnet`.
 */
export async function apiServerForLab(
  options: {
    readonly dir: string;
    readonly plan: LabPlan;
    readonly base: readonly Raw[];
    readonly subnet: number;
    readonly token: string;
    readonly alsoAt?: readonly string[];
  },
  cleanups: Cleanups,
): Promise<LabApi> {
  const { plan } = options;
  const links = plan.nodes.map((node) => nodeLinkAddresses(options.subnet, node.index));
  const tls = apiServerCertificate(options.dir, [...(options.alsoAt ?? []), ...links.map((l) => l.host)]);
  const server = new FakeApiServer({ token: options.token, tls });
  const nodes = plan.nodes.map((node) =>
    nodeWithPodCidrs(
      node.name,
      plan.pods
        .filter((p) => p.node === node.name)
        .flatMap((p) => p.ips.map((ip) => `${ip}/${ip.includes(':') ? 128 : 32}`)),
    ),
  );
  const objects: Raw[] = [...options.base.filter((o) => o.kind !== 'Pod'), ...(podObjects(plan) as Raw[])];
  for (const object of [...nodes, ...objects]) server.store.apply(object);
  const url = await server.start(0, '0.0.0.0');
  cleanups.push(() => server.stop());
  for (const node of plan.nodes) cleanups.push(await linkNodeToHost(node.netns, options.subnet, node.index));
  return { server, port: new URL(url).port, tls, links, objects };
}

/** Waits until every node's agent answers 200 on `/readyz` at the manifest's `--listen` port. */
export async function everyAgentReady(
  links: LabApi['links'],
  args: readonly string[],
  logs: () => string,
): Promise<void> {
  const port = args[args.indexOf('--listen') + 1]!.split(':').at(-1)!;
  const readyz = async (address: string): Promise<number | undefined> => {
    try {
      return (await fetch(`http://${address}:${port}/readyz`, { signal: AbortSignal.timeout(1000) })).status;
    } catch {
      return undefined;
    }
  };
  await until(
    'every agent ready',
    async () => {
      const codes = await Promise.all(links.map((l) => readyz(l.node)));
      return codes.every((c) => c === 200) ? true : `readyz ${codes.join(', ')}\n${logs()}`;
    },
    60_000,
  );
}

/**
 * Probes every lab pod pair on every port until the kernel says what the reference evaluator
 * says of `objects`; `denies`: whether that policy denies some probe (so a kernel passing
 * everything cannot be right).
 */
export async function kernelMatchesReference(
  what: string,
  lab: Lab,
  objects: readonly Raw[],
  denies: boolean,
  logs: () => string,
): Promise<void> {
  const cluster = loadFromObjects(objects).cluster;
  const plan = lab.plan;
  const { ports } = defaultPorts(plan.pods);
  await until(
    what,
    async () => {
      const report = await probeLab({ current: cluster, plan, agent: (p) => lab.agent(p) }, ports, {
        timeoutMs: 500,
      });
      const wrong = report.results.filter((r) => r.observed !== r.expected);
      const shown = wrong
        .slice(0, 5)
        .map(
          (r) => `${r.from} → ${r.to}:${r.port}/${r.protocol} expected ${r.expected} observed ${r.observed}`,
        )
        .join('; ');
      return wrong.length === 0 && report.results.some((r) => !r.expected) === denies
        ? true
        : `${wrong.length} of ${report.results.length} differ: ${shown}\n${logs()}`;
    },
    60_000,
  );
}

/** Without the NetworkPolicy named `name`. */
export const withoutPolicy = (objects: readonly Raw[], name: string): Raw[] =>
  objects.filter((o) => !(o.kind === 'NetworkPolicy' && (o.metadata as { name: string }).name === name));
