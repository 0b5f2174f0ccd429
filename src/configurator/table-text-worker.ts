/**
 * The worker thread of table-text-offload.ts: keeps the text of every rule it is sent by serial
 * number, and for each table, as its batch comes, the table's id (tableIdOfTexts, the function
 * the table's own id getter uses) and its printed rule lines (numberedRuleLine, the function
 * `compile`'s text uses). Answers once, when told the tables are finished.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { numberedRuleLine } from '../model/rule.ts';
import { tableIdOfTexts } from './table-id.ts';
import type { TableBatch, TableTextOptions, TableTextReply, TableTextRequest } from './table-text-offload.ts';

const { lines: withLines } = workerData as TableTextOptions;

const texts: string[] = [];
let ids = '';
let lines = '';
let ends = new Int32Array(1 << 16);
let count = 0;

parentPort!.on('message', (request: TableTextRequest) => {
  if ('batch' in request) {
    take(request.batch);
    return;
  }
  const reply: TableTextReply = withLines ? { ids, lines, ends: ends.slice(0, count) } : { ids };
  parentPort!.postMessage(reply);
});

function take({ tables, serials, texts: newTexts }: TableBatch): void {
  for (let i = 0; i < serials.length; i++) texts[serials[i] as number] = newTexts[i] as string;
  const rules: string[] = [];
  for (let at = 0; at < tables.length;) {
    const size = tables[at++] as number;
    rules.length = 0;
    for (let i = 0; i < size; i++) rules.push(texts[tables[at++] as number] as string);
    ids += tableIdOfTexts(rules);
    if (!withLines) continue;
    let printed = '';
    for (let i = 0; i < size; i++) printed += numberedRuleLine(i, rules[i] as string);
    lines += printed;
    if (count === ends.length) {
      const bigger = new Int32Array(ends.length * 2);
      bigger.set(ends);
      ends = bigger;
    }
    ends[count++] = lines.length;
  }
}
