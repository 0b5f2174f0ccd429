/**
 * A large compile's table ids and printed rule lines, made in a worker thread as the
 * configurator makes the tables (TableTextOffload), are the ones the main thread makes: every
 * table's id equals the id of the same rules hashed here, its lines are the text output's, and
 * `compile`'s text is byte for byte the same with and without them. A worker that is gone leaves
 * the tables to make their own ids.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileTextLines, type CompileReport } from '../../src/analysis/index.ts';
import { PLAIN } from '../../src/analysis/format/style.ts';
import { canonicalTable, TableTextOffload } from '../../src/configurator/index.ts';
import { generateShape } from '../../src/generate/shapes.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import { numberedRuleLine, ruleText, type RuleTable } from '../../src/model/rule.ts';
import { compileCluster } from '../../src/pipeline/index.ts';

/** A small shape (a) cluster: 200 pods, 150 policies. */
function cluster(): ReturnType<typeof loadFromObjects>['cluster'] {
  const shape = generateShape('a', { scale: 0.002, seed: 7 });
  return loadFromObjects([...shape.namespaces, ...shape.pods, ...shape.policies]).cluster;
}

/** Every distinct table of a compile, in the order the report lists them (first use). */
function distinctTables(pipeline: ReturnType<typeof compileCluster>): RuleTable[] {
  const tables = new Set<RuleTable>();
  for (const [, t] of pipeline.compiledPods()) {
    if (t.ingress) tables.add(t.ingress);
    if (t.egress) tables.add(t.egress);
  }
  return [...tables];
}

/** The text the report prints for these tables (only the tables section matters here). */
function tablesText(
  tables: readonly RuleTable[],
  tableLines?: (table: RuleTable) => string | undefined,
): string {
  const report: CompileReport = {
    pods: [],
    postponed: [],
    tables,
    ...(tableLines ? { tableLines } : {}),
    tiers: [],
    usage: new Map(tables.map((t) => [t.id, 1])),
    groups: [],
    stats: { pods: 0, tables: tables.length, rules: 0, groups: 0, sharedTableRatio: 0, millis: 0 },
  };
  return [...compileTextLines(report, PLAIN, false)].join('');
}

describe('table ids and lines made in a worker thread', () => {
  it('gives every table the id and lines the main thread gives it', async () => {
    const offload = TableTextOffload.create(true);
    assert.ok(offload, 'the worker module is found beside the offload');
    const pipeline = compileCluster(cluster(), { tableObserver: offload });
    const lines = await offload.finish();
    await offload.close();
    assert.ok(lines, 'the worker answered');
    const tables = distinctTables(pipeline);
    assert.ok(tables.length > 100, `a cluster with many tables (${tables.length})`);
    for (const table of tables) {
      // A fresh table of the same rules hashes its own text on this thread.
      assert.equal(table.id, canonicalTable(table.rules).id);
      assert.equal(lines(table), table.rules.map((rule, i) => numberedRuleLine(i, ruleText(rule))).join(''));
    }
  });

  it('leaves compile’s text byte for byte as it was', async () => {
    const here = distinctTables(compileCluster(cluster()));
    const offload = TableTextOffload.create(true)!;
    const pipeline = compileCluster(cluster(), { tableObserver: offload });
    const lines = await offload.finish();
    await offload.close();
    assert.equal(tablesText(distinctTables(pipeline), lines), tablesText(here));
  });

  it('hashes only, without lines, when the output is not text', async () => {
    const offload = TableTextOffload.create(false)!;
    const pipeline = compileCluster(cluster(), { tableObserver: offload });
    assert.equal(await offload.finish(), undefined);
    await offload.close();
    for (const table of distinctTables(pipeline)) assert.equal(table.id, canonicalTable(table.rules).id);
  });

  it('never keeps the process alive once answered, even if not closed', async () => {
    // A worker still referenced would hold this test file's process: node --test would wait.
    const offload = TableTextOffload.create(false)!;
    compileCluster(cluster(), { tableObserver: offload });
    assert.ok((await offload.finish()) === undefined);
  });

  it('leaves the tables to make their own ids when the worker is gone', async () => {
    const offload = TableTextOffload.create(true)!;
    await offload.close();
    const pipeline = compileCluster(cluster(), { tableObserver: offload });
    assert.equal(await offload.finish(), undefined);
    const tables = distinctTables(pipeline);
    assert.ok(tables.length > 0);
    for (const table of tables) assert.equal(table.id, canonicalTable(table.rules).id);
  });
});
