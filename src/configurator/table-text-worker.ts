/**
 * The worker thread of table-text-offload.ts: keeps the text of every rule it is sent by serial
 * number, and for each table, as its batch comes, the table's id (tableIdOfTexts, the function
 * the table's own id getter uses) and its printed rule lines (numberedRuleLine, the function
 * `compile`'s text uses). Answers once, when told the tables are finished.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { numberedRuleLine } from '../model/rule.ts';
import { tableIdOfTexts } from './table-id.ts';
import type {
  GroupsToPrint,
  TableBatch,
  TableTextOptions,
  TableTextReply,
  TableTextRequest,
} from './table-text-offload.ts';

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
  let reply: TableTextReply;
  if ('groups' in request) reply = { groups: printGroups(request.groups) };
  else reply = withLines ? { ids, lines, ends: ends.slice(0, count) } : { ids };
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

/**
 * The groups in key order, each `  key\n    members\n` with its members by pod id, each member
 * `pod[:port] addresses`, joined by `; ` (compileTextLines' group lines, and its order: the
 * report sorts keys with the default sort and members by `<` on the pod id).
 */
function printGroups({ keys, sizes, members, pods, addresses, none }: GroupsToPrint): string {
  const starts = new Int32Array(keys.length);
  for (let g = 0, at = 0; g < keys.length; g++) {
    starts[g] = at;
    at += 2 * (sizes[g] as number);
  }
  const order = Array.from(keys.keys()).sort((a, b) => {
    const ka = keys[a] as string;
    const kb = keys[b] as string;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  let text = '';
  const group: number[] = [];
  for (const g of order) {
    group.length = 0;
    const start = starts[g] as number;
    for (let m = 0; m < (sizes[g] as number); m++) group.push(start + 2 * m);
    group.sort((a, b) =>
      (pods[members[a] as number] as string) < (pods[members[b] as number] as string) ? -1 : 1,
    );
    let printed = '';
    for (const at of group) {
      const pod = members[at] as number;
      const port = members[at + 1] as number;
      if (printed !== '') printed += '; ';
      printed += `${pods[pod] as string}${port >= 0 ? `:${port}` : ''} ${addresses[pod] as string}`;
    }
    text += `  ${keys[g] as string}\n    ${printed !== '' ? printed : none}\n`;
  }
  return text;
}
