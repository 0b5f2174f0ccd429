/**
 * The model's smallest terms, which every other model file uses: protocols, labels and where a
 * value was read. Kept apart (and importing nothing) so that selectors and cluster policy need
 * not import `types.ts`, which imports them: the model's files form no cycle.
 */
export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export const PROTOCOLS: readonly Protocol[] = ['TCP', 'UDP', 'SCTP'];

export type Labels = Readonly<Record<string, string>>;

/** Where an object or value came from in the user's input (1-based line and column). */
export interface SourceLocation {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}
