/**
 * `compile` output: per-pod table bindings, the distinct (shared) tables, address groups, and —
 * for a node — the renderer cache's combined local tables and global table; as text or JSON.
 */
import { netText, ruleText, type Rule, type RuleTable } from '../../model/rule.ts';
import { countOf } from '../../util/count-of.ts';
import type { TieredTable } from '../../configurator/types.ts';
import type { Style } from './style.ts';

export interface CompileReport {
  readonly pods: readonly {
    readonly id: string;
    readonly ingress?: string;
    readonly egress?: string;
    readonly ingressTiers?: string;
    readonly egressTiers?: string;
  }[];
  readonly postponed: readonly string[];
  readonly tables: readonly RuleTable[];
  /** Ordered cluster policy: distinct Admin/Baseline rule lists (precedence order). */
  readonly tiers: readonly TieredTable[];
  /** How many pod-directions use each table. */
  readonly usage: ReadonlyMap<string, number>;
  readonly groups: readonly {
    readonly key: string;
    readonly members: readonly {
      readonly pod: string;
      readonly ips: readonly string[];
      readonly port?: number;
    }[];
  }[];
  readonly node?: {
    readonly name: string;
    readonly side: 'ingress' | 'egress';
    readonly local: readonly { readonly pod: string; readonly table: string }[];
    /** Local pods whose ordered cluster policy was flattened into their tables. */
    readonly flattened: readonly string[];
    readonly tables: readonly RuleTable[];
    readonly global: RuleTable;
  };
  readonly stats: CompileStats;
}

export interface CompileStats {
  readonly pods: number;
  readonly tables: number;
  readonly rules: number;
  readonly groups: number;
  /** Pod-directions per distinct table. */
  readonly sharedTableRatio: number;
  readonly millis: number;
}

export function formatCompileText(report: CompileReport, style: Style, withStats: boolean): string {
  return [...compileTextLines(report, style, withStats)].join('');
}

/**
 * The text output line by line (each with its newline), for writing as it is made: at shape a
 * scale the whole text is over 100 MB, which a single string held at its peak.
 */
export function* compileTextLines(
  report: CompileReport,
  style: Style,
  withStats: boolean,
): Generator<string> {
  // Headings (and the node's part) are gathered in `lines` and handed out by `flush`; each pod,
  // table and group is handed out as one string as soon as it is made.
  const lines: string[] = [];
  function* flush(): Generator<string> {
    for (const line of lines) yield `${line}\n`;
    lines.length = 0;
  }
  lines.push(
    style.bold(
      `pods (${report.pods.length} compiled${report.postponed.length ? `, ${report.postponed.length} postponed: no address` : ''})`,
    ),
  );
  yield* flush();
  // The pods' and tables' lines are handed out as made: no closure, array or generator per pod
  // or table (there are 100,000 of each at shape a ×1).
  for (const pod of report.pods) {
    yield `  ${pod.id}  ingress: ${pod.ingress ?? 'open'}${tiersText(pod.ingressTiers)}  egress: ${pod.egress ?? 'open'}${tiersText(pod.egressTiers)}\n`;
  }
  for (const id of report.postponed) lines.push(style.dim(`  ${id}  postponed (no address yet)`));
  lines.push('', style.bold(`tables (${report.tables.length} distinct)`));
  yield* flush();
  for (const table of report.tables) {
    let text = `  ${table.id}  ${style.dim(`used ${report.usage.get(table.id) ?? 0}×`)}\n`;
    const { rules } = table;
    for (let i = 0; i < rules.length; i++)
      text += `    ${String(i + 1).padStart(3)}  ${ruleText(rules[i] as Rule)}\n`;
    yield text;
  }
  if (report.tiers.length > 0) {
    lines.push(
      '',
      style.bold(`tiered tables (${report.tiers.length} distinct; rules in precedence order, @key)`),
    );
    for (const tiers of report.tiers) {
      lines.push(`  ${tiers.id}`);
      for (const [name, rules] of [
        ['Admin', tiers.admin],
        ['Baseline', tiers.baseline],
      ] as const) {
        if (rules.length === 0) continue;
        lines.push(`    ${name}:`);
        rules.forEach((rule, i) => lines.push(`    ${String(i + 1).padStart(3)}  ${ruleText(rule)}`));
      }
      yield* flush();
    }
  }
  lines.push('', style.bold(`address groups (${report.groups.length})`));
  yield* flush();
  for (const group of report.groups) {
    let members = '';
    for (const m of group.members) {
      if (members !== '') members += '; ';
      members += `${m.pod}${m.port !== undefined ? `:${m.port}` : ''} ${m.ips.join(',')}`;
    }
    yield `  ${group.key}\n    ${members !== '' ? members : style.dim('(no members)')}\n`;
  }
  if (report.node) {
    const { node } = report;
    lines.push(
      '',
      style.bold(
        `node ${node.name}: local tables combined on the pods' ${node.side} side (${node.tables.length} distinct)`,
      ),
    );
    if (node.flattened.length > 0)
      lines.push(
        style.dim(
          `  ordered cluster policy flattened into the tables of ${node.flattened.length} pod${node.flattened.length === 1 ? '' : 's'} (Admin, NetworkPolicy, Baseline in one first-match table each)`,
        ),
      );
    for (const { pod, table } of node.local) lines.push(`  ${pod}  ${table}`);
    for (const table of node.tables) {
      lines.push(`  ${table.id}`);
      table.rules.forEach((rule, i) => lines.push(`    ${String(i + 1).padStart(3)}  ${ruleText(rule)}`));
    }
    lines.push('', style.bold(`node ${node.name}: global table ${node.global.id}`));
    node.global.rules.forEach((rule, i) => lines.push(`    ${String(i + 1).padStart(3)}  ${ruleText(rule)}`));
  }
  if (withStats) lines.push('', formatStats(report.stats));
  yield* flush();
}

function tiersText(id: string | undefined): string {
  return id ? ` (tiers ${id})` : '';
}

function formatStats(stats: CompileStats): string {
  return (
    `stats: ${countOf(stats.pods, 'pod')} compiled, ${countOf(stats.tables, 'distinct table')}, ${countOf(stats.rules, 'rule')}, ${countOf(stats.groups, 'address group')}, ` +
    `${stats.sharedTableRatio.toFixed(2)} pod-directions per table, ${stats.millis.toFixed(1)} ms`
  );
}

function ruleJson(rule: Rule): object {
  return {
    action: rule.action,
    protocol: rule.protocol,
    src: netText(rule.src),
    dst: netText(rule.dst),
    ports: rule.dstPorts
      ? rule.dstPorts[0] === rule.dstPorts[1]
        ? String(rule.dstPorts[0])
        : `${rule.dstPorts[0]}-${rule.dstPorts[1]}`
      : 'any',
    ...(rule.precedence !== undefined ? { precedence: rule.precedence } : {}),
  };
}

export function compileJson(report: CompileReport): object {
  const table = (t: RuleTable): object => ({ id: t.id, rules: t.rules.map(ruleJson) });
  return {
    pods: report.pods,
    postponed: report.postponed,
    tables: report.tables.map((t) => ({ ...table(t), usedBy: report.usage.get(t.id) ?? 0 })),
    ...(report.tiers.length
      ? {
          tiers: report.tiers.map((t) => ({
            id: t.id,
            admin: t.admin.map(ruleJson),
            baseline: t.baseline.map(ruleJson),
          })),
        }
      : {}),
    groups: report.groups,
    ...(report.node
      ? {
          node: {
            name: report.node.name,
            side: report.node.side,
            local: report.node.local,
            flattened: report.node.flattened,
            tables: report.node.tables.map(table),
            global: table(report.node.global),
          },
        }
      : {}),
    stats: report.stats,
  };
}
