/**
 * Text from the input printed on a terminal: control characters are shown escaped (`\x1b`), so
 * an object name can never drive the terminal (colours, cursor moves, a forged line of output).
 */

/** `text` with every control character (C0 — tab and newline too — DEL, C1, line and paragraph separators) escaped. */
export function escapeControls(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    const code = c.charCodeAt(0);
    return code > 0xff
      ? `\\u${code.toString(16).padStart(4, '0')}`
      : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}
