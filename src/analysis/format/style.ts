/**
 * Terminal styling: colours only when writing to a TTY and NO_COLOR is not set.
 */
export interface Style {
  readonly ok: (text: string) => string;
  readonly bad: (text: string) => string;
  readonly dim: (text: string) => string;
  readonly bold: (text: string) => string;
  readonly warn: (text: string) => string;
}

const wrap = (code: number) => (text: string) => `\u001b[${code}m${text}\u001b[0m`;

export const PLAIN: Style = { ok: (t) => t, bad: (t) => t, dim: (t) => t, bold: (t) => t, warn: (t) => t };
export const COLOUR: Style = { ok: wrap(32), bad: wrap(31), dim: wrap(2), bold: wrap(1), warn: wrap(33) };

export function styleFor(isTty: boolean, env: NodeJS.ProcessEnv = process.env): Style {
  return isTty && env.NO_COLOR === undefined ? COLOUR : PLAIN;
}
