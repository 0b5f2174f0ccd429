/**
 * A large file of JSON documents that holds more than pods — a whole cluster dumped into one
 * file, as `palisade generate` or a script writes it — cut in three where its longest run of
 * pods begins and ends, so the worker thread (decode-offload.ts) decodes the pods while this
 * thread decodes the rest. Each piece keeps the file's name and its lines: a piece's text is
 * preceded by as many empty lines as the file has before it, so every position in it, and every
 * diagnostic, is where it is in the file.
 *
 * Which documents are pods is guessed from their first bytes (`"kind": "Pod"` before anything
 * else could say otherwise); a wrong guess costs time, never an answer: the worker gives back a
 * piece holding anything but pods that decode cleanly, and it is decoded here in its place.
 * A file is cut only where reading its pieces one after another gives what reading it whole
 * gives: documents the JSON way, no template action (a template's file is judged whole), well
 * within the documents one file may hold; the pieces are marked as such, so that what is judged
 * of a whole file (empty, no Kubernetes object) is not judged of them.
 */
import { MAX_DOCUMENTS } from './parse-documents.ts';
import { firstSignificant, OPEN_BRACE, separatedSpans, startsAsJsonDocuments } from './json-documents.ts';
import type { InputFile } from './types.ts';

/** The three pieces; head or tail is undefined when the run starts or ends the file. */
interface PodRunPieces {
  readonly head?: InputFile;
  readonly pods: InputFile;
  readonly tail?: InputFile;
}

/** How far into a document its kind is looked for. */
const KIND_WITHIN = 512;

/**
 * The file in pieces around its longest run of pod documents, when that run is at least
 * `minBytes` long and the file is not pods alone (then it is handed over whole); undefined
 * otherwise.
 */
export function podRunPieces(file: InputFile, minBytes: number): PodRunPieces | undefined {
  const text = file.text;
  if (!startsAsJsonDocuments(text) || text.includes('{{')) return undefined;
  const spans = separatedSpans(text);
  if (spans.length > MAX_DOCUMENTS) return undefined; // half the most one file may hold
  let best = { from: 0, to: 0 };
  let runFrom = -1;
  for (let i = 0; i < spans.length; i += 2) {
    const from = spans[i] as number;
    const to = spans[i + 1] as number;
    const begin = firstSignificant(text, from, to);
    if (begin < 0) continue; // an empty document between two separators
    if (isPodDocument(text, begin, to)) {
      // A span ends where the next separator line starts: a run starts with its separator.
      if (runFrom < 0) runFrom = i === 0 ? 0 : (spans[i - 1] as number);
      if (to - runFrom > best.to - best.from) best = { from: runFrom, to };
    } else runFrom = -1;
  }
  const run = best.to - best.from;
  if (run === 0 || run < minBytes || run === text.length) return undefined;
  const piece = (from: number, to: number): InputFile => ({
    name: file.name,
    piece: true,
    text: '\n'.repeat(linesBefore(text, from)) + text.slice(from, to),
  });
  return {
    ...(best.from > 0 ? { head: piece(0, best.from) } : {}),
    pods: piece(best.from, best.to),
    ...(best.to < text.length ? { tail: piece(best.to, text.length) } : {}),
  };
}

/** Whether the document starting at `begin` says first that it is a Pod. */
function isPodDocument(text: string, begin: number, to: number): boolean {
  if (text.charCodeAt(begin) !== OPEN_BRACE) return false;
  const key = text.indexOf('"kind"', begin);
  if (key < 0 || key >= to || key > begin + KIND_WITHIN) return false;
  let at = key + 6;
  while (at < to && /\s/.test(text[at] as string)) at++;
  if (text[at] !== ':') return false;
  at++;
  while (at < to && /\s/.test(text[at] as string)) at++;
  return text.startsWith('"Pod"', at);
}

function linesBefore(text: string, offset: number): number {
  let lines = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) lines++;
  return lines;
}
