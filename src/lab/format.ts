/**
 * The lab's reports as text: the probed matrix per port, next to the reference evaluator's.
 */
import type { ProbeReport, ProbeResult } from './probe.ts';
import { countOf } from '../util/count-of.ts';
import type { ApplyReport } from './lab.ts';
import type { DatapathKind } from './datapath.ts';
import type { LabPlan } from './topology.ts';

/** What each datapath's apply report counts per node. */
const OPERATIONS: Record<DatapathKind, string> = { nftables: 'nft operations', ebpf: 'map operations' };

export function formatPlan(plan: LabPlan, policies: number, datapath: DatapathKind = 'nftables'): string {
  // nftables is the default and goes unsaid (the line predates the choice).
  const by = datapath === 'ebpf' ? ' by eBPF' : '';
  const lines = [
    `lab ${plan.name}: ${countOf(plan.nodes.length, 'node')}, ${countOf(plan.pods.length, 'pod')}, ${countOf(policies, 'policy', 'policies')} enforced${by}`,
  ];
  for (const node of plan.nodes) {
    lines.push(`  ${node.name} (${node.addresses.join(', ')})`);
    for (const pod of plan.pods.filter((p) => p.node === node.name)) {
      const ports = pod.ports.map((p) => `${p.port}/${p.protocol}`).join(' ');
      lines.push(`    ${pod.id.padEnd(32)} ${pod.ips.join(', ').padEnd(16)} ${ports}`);
    }
  }
  for (const s of plan.skipped) lines.push(`  not built: ${s.id} (${s.reason})`);
  return lines.join('\n') + '\n';
}

/**
 * One grid per port: rows are sources, columns destinations (numbered as in the legend);
 * `✓` connected, `·` blocked, `!` or `?` where the kernel disagrees with the evaluator
 * (`!` connected though denied, `?` blocked though allowed).
 */
export function formatProbeReport(report: ProbeReport): string {
  const out: string[] = [];
  const number = new Map(report.pods.map((p, i) => [p, i + 1]));
  out.push('pods:');
  for (const [pod, n] of number) out.push(`  ${String(n).padStart(2)} ${pod}`);
  const byKey = new Map<string, ProbeResult[]>();
  for (const r of report.results) {
    const key = `${r.from}|${r.to}|${r.protocol}|${r.port}`;
    const list = byKey.get(key);
    if (list) list.push(r);
    else byKey.set(key, [r]);
  }
  for (const port of report.ports) {
    out.push(
      '',
      `${port.protocol}/${port.port}  (✓ connected  · blocked  ! connected but denied  ? blocked but allowed)`,
    );
    out.push('     ' + report.pods.map((p) => String(number.get(p)).padStart(3)).join(''));
    for (const from of report.pods) {
      const cells = report.pods.map((to) => {
        if (to === from) return '  -';
        const results = byKey.get(`${from}|${to}|${port.protocol}|${port.port}`) ?? [];
        if (results.length === 0) return '   ';
        const wrong = results.find((r) => r.observed !== r.expected);
        if (wrong) return wrong.observed ? '  !' : '  ?';
        return results.every((r) => r.observed) ? '  ✓' : '  ·';
      });
      out.push(`  ${String(number.get(from)).padStart(2)} ${cells.join('')}`);
    }
  }
  out.push('');
  for (const d of report.disagreements)
    out.push(
      `disagreement: ${d.from} → ${d.to} (${d.ip}) ${d.protocol}/${d.port}: kernel ${d.observed ? 'connected' : `blocked (${d.detail})`}, evaluator ${d.expected ? 'allows' : 'denies'}`,
    );
  for (const p of report.notProbed)
    out.push(`not probed: ${p} (no SCTP in this kernel or in Node's sockets)`);
  const connected = report.results.filter((r) => r.observed).length;
  out.push(
    `${report.results.length} probes, ${connected} connected, ${report.disagreements.length} disagreements with the reference evaluator`,
  );
  return out.join('\n') + '\n';
}

export function formatApplyReport(report: ApplyReport): string {
  const ops = [...report.operations].map(([node, n]) => `${node}: ${n}`).join(', ');
  const lines = [
    ...report.notes.map((n) => `note: ${n}`),
    `${report.changes} change${report.changes === 1 ? '' : 's'} applied; ${OPERATIONS[report.datapath]} per node: ${ops || 'none'}`,
  ];
  return lines.join('\n') + '\n';
}
