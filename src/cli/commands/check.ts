/**
 * `palisade check`: the verdict for one connection, with its explanation.
 */
import { Command } from 'commander';
import {
  CLI_SPELLING,
  checkConnection,
  checkPorts,
  compiledVerdicts,
  formatCheckText,
  formatPortsCheckText,
  forwardingNote,
  ingressControllerEndpoint,
  namesIngressController,
  parsePortQuery,
  portAtDestination,
  portsCheckJson,
  resolveAddress,
  serviceTarget,
  styleFor,
  withService,
  notEvaluated,
} from '../../analysis/index.ts';
import type { Verdict } from '../../semantics/index.ts';
import type { Endpoint } from '../../model/types.ts';
import {
  checkChoice,
  enginePolicies,
  ingressControllerOption,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  writeJson,
} from '../common.ts';
import { EXIT_EXPECTATION_FAILED, EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';

export function checkCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('check'))
    .description('is one connection allowed, and why')
    .requiredOption(
      '--from <address>',
      'source: ns/pod, ns/name[Kind], an IP address, or ingress-controller (the controller of Ingress and Route objects)',
    )
    .requiredOption(
      '--to <address>',
      'destination: ns/pod, ns/name[Kind], an IP address, or name=IP for a domain name',
    )
    .option(
      '--port <port>',
      'destination port number, a named port of the destination (of a Service: its port), or either with its protocol (53/UDP); none: which ports are allowed',
    )
    .option('--protocol <protocol>', 'TCP, UDP or SCTP', 'TCP')
    .option('--expect <verdict>', 'exit 3 unless the verdict is this (allow or deny)')
    .option(
      '--ingress-controller <place>',
      "with --from ingress-controller: NAMESPACE or NAMESPACE/key=value,… (its pods' labels); default: a namespace of its own",
    )
    .option('-o, --output <format>', 'text or json', 'text')
    .option(
      '--engine <engine>',
      "reference, or compiled (the verdict from the classifier, the explanation from the reference; not for Calico's or Cilium's policies)",
      'reference',
    )
    .action(async (raw: Record<string, unknown>, command: Command) => {
      const input = resolveInputOptions(raw);
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      if (typeof raw.port !== 'string') return checkAllPorts(io, done, raw, input, output);
      const portText = raw.port;
      // --protocol defaults to TCP; only one given on the command line can contradict `--port 53/UDP`.
      const protocolApart = command.getOptionValueSource('protocol') === 'cli';
      const query = parsePortQuery(portText, protocolApart ? { protocol: String(raw.protocol) } : {});
      if (!query.ok) throw new UsageError(query.message);
      const { protocol } = query.query;
      const expect =
        raw.expect === undefined
          ? undefined
          : checkChoice('--expect', raw.expect, ['allow', 'deny'] as const);
      const engine = checkChoice('--engine', raw.engine, ['reference', 'compiled'] as const);
      if (engine === 'compiled' && input.semantics !== 'v1')
        throw new UsageError('--engine compiled implements v1 semantics');
      const { loaded, inputErrors, from, to } = await loadEnds(io, raw, input);
      // Asked of the classifier, Calico's and Cilium's policies would fail at the first pod they
      // select, named as if it were the question: say what cannot be asked instead.
      const engines = engine === 'compiled' ? enginePolicies(loaded.cluster) : undefined;
      if (engines)
        throw new UsageError(
          `--engine compiled: the compiled classifier cannot express Calico's or Cilium's policies (${engines}); without --engine the reference evaluator answers`,
        );
      if (from.family !== undefined && to.family !== undefined && from.family !== to.family)
        throw new UsageError(
          `--from is an IPv${from.family} address and --to an IPv${to.family} one: a connection has one address family`,
        );
      // A Service: --port is one of its ports, answered on each backend's target port.
      const target = to.service
        ? serviceTarget(
            to.service,
            to.workload?.members ?? [],
            query.query,
            protocolApart || portText.includes('/'),
          )
        : undefined;
      if (typeof target === 'string') throw new UsageError(`--port: ${target}`);
      const destinationPort = target
        ? { ok: true as const, port: target.port, ...(target.portName ? { portName: target.portName } : {}) }
        : portAtDestination(to.address, query.query, CLI_SPELLING, protocolApart);
      if (!destinationPort.ok) throw new UsageError(`--port: ${destinationPort.message}`);
      const { port, portName } = destinationPort;
      const checked = checkConnection(
        loaded.cluster,
        { from, to, protocol: target?.protocol ?? protocol, port, ...(portName ? { portName } : {}) },
        { semantics: input.semantics },
      );
      const result = withForwarding(
        target ? withService(checked, target.target) : checked,
        from,
        to,
        loaded.cluster,
      );
      const { verdict } = result;
      if (engine === 'compiled') {
        const ips = (a: typeof from.address) => (a.kind === 'endpoint' ? a.endpoint.ips : [a.ip]);
        const compiled = compiledVerdicts(loaded.cluster, {})(
          ips(from.address),
          ips(to.address),
          result.protocol,
          port,
        );
        // They are tested to agree; if they ever do not, say so rather than pick one silently.
        if (compiled !== undefined && !result.podPairs && compiled !== verdict.allowed) {
          io.stderr.write(
            `palisade: the compiled classifier says ${compiled ? 'allowed' : 'denied'} but the reference evaluator says ${verdict.allowed ? 'allowed' : 'denied'}; please report this\n`,
          );
          return done(EXIT_FINDINGS);
        }
        if (compiled === undefined)
          io.stderr.write('palisade: no address in common: the reference evaluator answered\n');
      }
      const missing = notEvaluated(loaded.cluster);
      const style = styleFor(io.stdoutIsTty, io.env);
      if (output === 'json') writeJson(io, missing ? { ...result, notEvaluated: missing.objects } : result);
      else
        io.stdout.write(
          formatCheckText(result, style) + (missing ? style.warn(`  note: ${missing.note}`) + '\n' : ''),
        );
      // Every family must agree: a dual-stack pair allowed over IPv4 only is neither allowed nor denied.
      const expectationFailed =
        expect !== undefined &&
        [verdict, ...verdict.otherFamilies].some((f) => (expect === 'allow') !== f.allowed);
      if (expectationFailed)
        io.stderr.write(`expected ${expect}, but the connection is ${verdictWords(verdict)}\n`);
      // A wrong verdict is 3 even when the input also has errors (1): the question asked was answered.
      done(expectationFailed ? EXIT_EXPECTATION_FAILED : inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

/** `allowed`, `denied`, or per family when a dual-stack pair's families disagree. */
/** The input read (its diagnostics reported) and --from and --to resolved in it. */
async function loadEnds(
  io: CliIo,
  raw: Record<string, unknown>,
  input: ReturnType<typeof resolveInputOptions>,
) {
  const loaded = await loadInput(input, io, {
    rawObjects: false,
    podOption: (name) => `--from ${name} or --to ${name}`,
  });
  const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
  if (namesIngressController(String(raw.to)))
    throw new UsageError('--to: the ingress controller is a source only (--from ingress-controller)');
  if (raw.ingressController !== undefined && !namesIngressController(String(raw.from)))
    throw new UsageError('--ingress-controller places the controller of --from ingress-controller');
  // The controller stands in a namespace of its own unless told: the cluster gains that namespace.
  const controller = namesIngressController(String(raw.from))
    ? ingressControllerEndpoint(loaded.cluster, ingressControllerOption(raw.ingressController))
    : undefined;
  const cluster = controller?.cluster ?? loaded.cluster;
  const from = controller
    ? { ok: true as const, address: { kind: 'endpoint' as const, endpoint: controller.controller } }
    : resolveAddress(cluster, String(raw.from));
  const to = resolveAddress(cluster, String(raw.to));
  if (!from.ok) throw new UsageError(`--from: ${from.message}`);
  if (!to.ok) throw new UsageError(`--to: ${to.message}`);
  return { loaded: { ...loaded, cluster }, inputErrors, from, to };
}

type Resolved = Extract<ReturnType<typeof resolveAddress>, { ok: true }>;

/** From the ingress controller: what Ingress objects forward to on the destination, noted beside policy's verdict. */
function withForwarding<R extends { readonly verdict: Verdict }>(
  result: R,
  from: Resolved,
  to: Resolved,
  cluster: Parameters<typeof forwardingNote>[0],
): R {
  const notes = forwardingNotes(from, to, cluster);
  if (notes.length === 0) return result;
  return { ...result, verdict: { ...result.verdict, notes: [...result.verdict.notes, ...notes] } };
}

function forwardingNotes(
  from: Resolved,
  to: Resolved,
  cluster: Parameters<typeof forwardingNote>[0],
): string[] {
  if (from.address.kind !== 'endpoint' || from.address.endpoint.pseudo !== 'ingress-controller') return [];
  const destinations: Endpoint[] =
    to.workload?.members.slice() ?? (to.address.kind === 'endpoint' ? [to.address.endpoint] : []);
  return destinations.length === 0 ? [] : [forwardingNote(cluster, destinations)];
}

function verdictWords(verdict: Verdict): string {
  const families = [verdict, ...verdict.otherFamilies].sort((a, b) => (a.family ?? 0) - (b.family ?? 0));
  if (families.every((f) => f.allowed === verdict.allowed)) return verdict.allowed ? 'allowed' : 'denied';
  return families.map((f) => `${f.allowed ? 'allowed' : 'denied'} over IPv${f.family}`).join(' and ');
}

/** `check` without `--port`: which ports the connection may use (a Service: which of its ports). */
async function checkAllPorts(
  io: CliIo,
  done: (code: number) => void,
  raw: Record<string, unknown>,
  input: ReturnType<typeof resolveInputOptions>,
  output: 'text' | 'json',
): Promise<void> {
  if (raw.expect !== undefined) throw new UsageError('--expect needs --port: it checks one connection');
  if (raw.engine !== undefined && raw.engine !== 'reference')
    throw new UsageError('--engine compiled needs --port: it checks one connection');
  const { loaded, inputErrors, from, to } = await loadEnds(io, raw, input);
  const result = checkPorts(loaded.cluster, { from, to }, { semantics: input.semantics });
  const missing = notEvaluated(loaded.cluster);
  const style = styleFor(io.stdoutIsTty, io.env);
  const forwarding = forwardingNotes(from, to, loaded.cluster);
  if (output === 'json') {
    const json = portsCheckJson(result) as Record<string, unknown>;
    writeJson(io, {
      ...json,
      ...(forwarding.length ? { notes: forwarding } : {}),
      ...(missing ? { notEvaluated: missing.objects } : {}),
    });
  } else
    io.stdout.write(
      formatPortsCheckText(result, style) +
        forwarding.map((note) => style.dim(`  note: ${note}`) + '\n').join('') +
        (missing ? style.warn(`  note: ${missing.note}`) + '\n' : ''),
    );
  done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
}
