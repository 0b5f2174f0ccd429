/**
 * `palisade agent`: the node agent — lists and watches the cluster (a reflector's etcd, or in
 * direct mode the Kubernetes API itself) and keeps one node's datapath enforcing it (see
 * src/agent/). `--cleanup` removes what an agent installed and exits. The agent's code (etcd and
 * Kubernetes clients, pino, prom-client) is loaded only when it runs.
 */
import { Command } from 'commander';
import { checkChoice } from '../input-options.ts';
import {
  DATAPATH_NAMES,
  etcdFailureLine,
  isDatapathName,
  NodeFactError,
  nodeName,
  parsePodCidrs,
  runAgent,
} from '../../agent/index.ts';
import { EXIT_FINDINGS, EXIT_USAGE, UsageError, type CliIo } from '../io.ts';
import { kubeconfigRequest } from '../cluster-input.ts';
import { etcdConnection, withEtcdOptions } from '../etcd-connection.ts';
import { VERSION } from '../version.ts';
import type { NeutronConnection } from '../../datapaths/index.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const SOURCES = ['kube', 'etcd'] as const;

/** `a, b or c`, as the other commands list their choices. */
const orList = (words: readonly string[]): string =>
  `${words.slice(0, -1).join(', ')} or ${words.at(-1) ?? ''}`;

export function agentCommand(io: CliIo, done: (code: number) => void): Command {
  return withEtcdOptions(
    new Command('agent')
      .description("enforce the cluster's policy on one node, continuously (node agent)")
      .option(
        '--node <name>',
        'the node this agent enforces (its pods are those with spec.nodeName; default: NODE_NAME)',
      )
      .option(
        '--source <source>',
        "where the cluster comes from: kube (the Kubernetes API, watched by the agent) or etcd (a reflector's; default when --etcd is given)",
      )
      .option(
        '--kubeconfig <path>',
        'the cluster of this kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster); with --source etcd only read for the pod CIDRs',
      )
      .option('--context <name>', 'the kubeconfig context to use'),
    { optional: true },
  )
    .requiredOption('--datapath <name>', `where policy is enforced: ${orList(DATAPATH_NAMES)}`)
    .option('--prefix <root>', 'root of the reflected key layout in etcd', '/palisade')
    .option(
      '--netns <name>',
      'nftables, ebpf: the network namespace whose datapath the agent owns (default: its own)',
    )
    .option(
      '--pod-cidr <cidr...>',
      "nftables, ebpf: the node's pod CIDRs (dropped unless a rendered pod owns the address); kube: default from the Node's spec.podCIDRs",
    )
    .option('--no-node-local', 'police traffic between the node and its own pods too')
    .option(
      '--no-direct-delivery',
      "ebpf: packets between two pods of the node always take the host's path (default: delivered directly when both sides allow them)",
    )
    .option(
      '--verify-interval <ms>',
      'how often the datapath is checked against what was realized, and repaired (0: only on kernel notifications)',
      '5000',
    )
    .option('--run-dir <path>', 'where the agent keeps its locks (a directory it may write)', '/run/palisade')
    .option(
      '--listen <host:port>',
      '/healthz, /readyz, /metrics and /flows (loopback by default; unix:PATH: a Unix socket; "off": none)',
      '127.0.0.1:9464',
    )
    .option(
      '--flow-log',
      "nftables, ebpf: report new connections' verdicts with the rule that decided them (/flows, palisade_policy_verdicts_total)",
    )
    .option(
      '--flow-capacity <n>',
      'most flow records the agent keeps (the least recently seen are evicted)',
      '10000',
    )
    .option('--log-level <level>', `JSON log lines from this level up: ${orList(LOG_LEVELS)}`, 'info')
    .option('--lease-ttl <seconds>', 'status lease: how soon a dead agent shows as dead', '10')
    .option('--status-interval <ms>', 'least time between two status writes', '1000')
    .option('--max-txn-ops <n>', "operations per etcd transaction (etcd's --max-txn-ops)", '128')
    .option(
      '--vpp-agent-label <label>',
      "vpp-acl, vpptcp: the vpp-agent's microservice label (default: the node)",
    )
    .option('--vpp-agent-prefix <prefix>', 'vpp-acl, vpptcp: the vpp-agent key prefix', '/vnf-agent/')
    .option(
      '--neutron-url <url>',
      'neutron: the Neutron API (e.g. http://127.0.0.1:9696; a Keystone token is read from OS_TOKEN, none: noauth)',
    )
    .option('--neutron-project <id>', "neutron: the project Palisade's security groups go in", 'palisade')
    .option(
      '--neutron-network <id>',
      "neutron: create pods' ports in this network when none has the pod's UID as device id (a lab without Kuryr's CNI)",
    )
    .option(
      '--cleanup',
      'remove what an agent installed for this node (table or keys, status) and exit',
      false,
    )
    .action(async (raw: Record<string, unknown>) => {
      const source = checkChoice(
        '--source',
        raw.source ?? (raw.etcd !== undefined ? 'etcd' : 'kube'),
        SOURCES,
      );
      const datapath = String(raw.datapath);
      if (!isDatapathName(datapath))
        throw new UsageError(`--datapath must be one of ${DATAPATH_NAMES.join(', ')}, not "${datapath}"`);
      const etcd = sourceOptions(source, datapath, raw, io);
      let node: string;
      try {
        node = nodeName(typeof raw.node === 'string' ? raw.node : undefined, io.env);
      } catch (error) {
        if (error instanceof NodeFactError) throw new UsageError(error.message);
        throw error;
      }
      const logLevel = checkChoice('--log-level', raw.logLevel, LOG_LEVELS);
      const ttl = wholeNumber(raw.leaseTtl, '--lease-ttl', 2);
      const statusInterval = wholeNumber(raw.statusInterval, '--status-interval', 0);
      const maxTxnOps = wholeNumber(raw.maxTxnOps, '--max-txn-ops', 2);
      const podCidrs = (raw.podCidr as string[] | undefined) ?? [];
      try {
        parsePodCidrs(podCidrs);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
      const verifyInterval = wholeNumber(raw.verifyInterval, '--verify-interval', 0);
      const flowCapacity = wholeNumber(raw.flowCapacity, '--flow-capacity', 1);
      if (raw.flowLog === true && datapath !== 'nftables' && datapath !== 'ebpf')
        throw new UsageError(
          `--flow-log needs --datapath nftables or ebpf (the kernel reports the verdicts)`,
        );
      const code = await runAgent(
        {
          node,
          source,
          ...(etcd ? { etcd } : {}),
          kube: kubeconfigRequest(
            {
              ...(typeof raw.kubeconfig === 'string' ? { kubeconfig: raw.kubeconfig } : {}),
              ...(typeof raw.context === 'string' ? { context: raw.context } : {}),
            },
            io,
          ),
          datapath,
          prefix: String(raw.prefix),
          ...(typeof raw.netns === 'string' ? { netns: raw.netns } : {}),
          podCidrs,
          allowNodeLocal: raw.nodeLocal !== false,
          directDelivery: raw.directDelivery !== false,
          runDir: String(raw.runDir),
          verifyIntervalMs: verifyInterval,
          ...(raw.listen === 'off' ? {} : { listen: listenAddress(String(raw.listen)) }),
          ...(raw.flowLog === true ? { flowLog: true, flowCapacity } : {}),
          logLevel,
          leaseTtlSeconds: ttl,
          statusIntervalMs: statusInterval,
          maxTxnOps,
          ...(typeof raw.vppAgentLabel === 'string' ? { vppAgentLabel: raw.vppAgentLabel } : {}),
          vppAgentPrefix: String(raw.vppAgentPrefix),
          ...neutronOptions(datapath, raw, io),
          version: VERSION,
          cleanup: raw.cleanup === true,
        },
        { out: io.stdout },
      ).catch((error: unknown) => {
        if (error instanceof NodeFactError) {
          io.stderr.write(`palisade: ${error.message}\n`);
          return EXIT_USAGE;
        }
        const line = etcd ? etcdFailureLine(error, etcd.endpoints) : undefined;
        if (line === undefined) throw error;
        io.stderr.write(`palisade: ${line}\n`);
        return EXIT_FINDINGS;
      });
      done(code);
    });
}

/**
 * The etcd connection (`--source etcd`), or undefined in direct mode — where etcd options, and
 * the datapaths that write documents into etcd for a vpp-agent, are usage errors.
 */
function sourceOptions(
  source: (typeof SOURCES)[number],
  datapath: string,
  raw: Record<string, unknown>,
  io: CliIo,
) {
  if (source === 'etcd') {
    if (raw.etcd === undefined) throw new UsageError('--source etcd needs --etcd URL[,URL…]');
    return etcdConnection(raw, io.env);
  }
  if (raw.etcd !== undefined)
    throw new UsageError(
      '--etcd and --source kube exclude each other: the agent watches the Kubernetes API itself',
    );
  if (datapath === 'vpp-acl' || datapath === 'vpptcp')
    throw new UsageError(
      `--datapath ${datapath} writes its documents into etcd for a vpp-agent: run it with --source etcd`,
    );
  return undefined;
}

/** `--neutron-…` as the Neutron datapath's connection (required with it, refused without it). */
function neutronOptions(
  datapath: string,
  raw: Record<string, unknown>,
  io: CliIo,
): { neutron?: NeutronConnection } {
  const url = typeof raw.neutronUrl === 'string' ? raw.neutronUrl : undefined;
  if (datapath !== 'neutron') {
    if (url !== undefined || raw.neutronNetwork !== undefined)
      throw new UsageError('--neutron-url and --neutron-network are options of --datapath neutron');
    return {};
  }
  if (url === undefined) throw new UsageError('--datapath neutron needs --neutron-url URL');
  if (!/^https?:\/\/[^/]+/.test(url))
    throw new UsageError(`--neutron-url ${url}: expected http(s)://host:port`);
  const token = io.env.OS_TOKEN;
  return {
    neutron: {
      url,
      project: String(raw.neutronProject),
      ...(token ? { token } : {}),
      ...(typeof raw.neutronNetwork === 'string' ? { network: raw.neutronNetwork } : {}),
    },
  };
}

function wholeNumber(value: unknown, flag: string, least: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < least)
    throw new UsageError(`${flag} must be a whole number, at least ${least}`);
  return n;
}

/** `host:port` (IPv6 hosts in brackets) → its parts. */
function listenAddress(text: string): { host: string; port: number } {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    if (!path.startsWith('/')) throw new UsageError(`--listen ${text}: a Unix socket needs an absolute path`);
    return { host: path, port: 0 };
  }
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65535) throw new UsageError(`--listen ${text}: expected host:port (or "off")`);
  return { host: match[1] ?? match[2]!, port };
}
