/**
 * The analysis layer's public entry: matrix, explain, convert, address resolution, formatters.
 */
export { computeMatrix, type MatrixOptions } from './matrix.ts';
export { endpointClasses, type EndpointClasses } from './equivalence.ts';
export {
  explainEndpoints,
  type EndpointExplanation,
  type DirectionExplanation,
  type RuleExplanation,
} from './explain.ts';
export { convertToV1, DEFAULT_DENY_POLICY_NAME, type ConvertResult } from './convert.ts';
export { resolveAddress, findEndpoint, addressText, type Resolution } from './resolve-address.ts';
export { MATRIX_FORMATS, type MatrixWriter } from './format/matrix-formats.ts';
export { formatCheckText } from './format/check-text.ts';
export { formatExplainText } from './format/explain-text.ts';
export { formatDiagnostic, summarizeDiagnostics } from './format/diagnostics-text.ts';
export { styleFor, PLAIN, COLOUR, type Style } from './format/style.ts';
export type * from './types.ts';
