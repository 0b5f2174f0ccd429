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

/**
 * Text kept as UTF-8 bytes in one growing buffer: handed to the main thread without a copy, and
 * without the flat copy and the per-line strings a long concatenated string costs (at ×2 those
 * were ~0.5 GB of peak memory).
 */
class Bytes {
  private buffer = Buffer.allocUnsafeSlow(1 << 20);
  length = 0;

  add(text: string): void {
    // At most three bytes per UTF-16 unit.
    if (this.length + text.length * 3 > this.buffer.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(this.buffer.length * 2, this.length + text.length * 3));
      this.buffer.copy(bigger, 0, 0, this.length);
      this.buffer = bigger;
    }
    this.length += this.buffer.write(text, this.length);
  }

  /** The bytes written, on their own ArrayBuffer (to transfer). */
  take(): Uint8Array<ArrayBuffer> {
    return new Uint8Array(this.buffer.buffer, this.buffer.byteOffset, this.length);
  }
}

const texts: string[] = [];
let ids = '';
/** The tables' printed lines, UTF-8, and where each table's end. */
const lines = new Bytes();
let ends = new Int32Array(1 << 16);
let count = 0;

parentPort!.on('message', (request: TableTextRequest) => {
  if ('batch' in request) {
    take(request.batch);
    return;
  }
  if (!withLines) {
    parentPort!.postMessage({ ids } satisfies TableTextReply);
    return;
  }
  const bytes = lines.take();
  const tableEnds = ends.slice(0, count);
  const reply: TableTextReply = { ids, lines: bytes, ends: tableEnds };
  parentPort!.postMessage(reply, [bytes.buffer, tableEnds.buffer]);
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
    lines.add(printed);
    if (count === ends.length) {
      const bigger = new Int32Array(ends.length * 2);
      bigger.set(ends);
      ends = bigger;
    }
    ends[count++] = lines.length;
  }
}
