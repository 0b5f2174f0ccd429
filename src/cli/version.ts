/**
 * The version `palisade --version` prints and outputs that name their tool (SARIF) carry. Its own
 * module, so commands can read it without importing the program that imports them.
 */
export const VERSION = '0.1.0';
