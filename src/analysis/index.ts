/**
 * The analysis layer's public entry: matrix, explain, convert, address resolution, formatters.
 */
export { computeMatrix, matrixEndpoints, type MatrixOptions } from './matrix.ts';
export { computeViewMatrix, type ViewMatrixOptions } from './workload-matrix.ts';
export {
  ENDPOINT_VIEWS,
  MATRIX_VIEWS,
  groupEndpoints,
  type EndpointGroup,
  type EndpointView,
  type RowGrouping,
} from './workload-view.ts';
export { checkConnection, checkPorts, type CheckRequest, type PortsCheckResult } from './check.ts';
export { compiledVerdicts } from './compiled-engine.ts';
export { endpointClasses, type EndpointClasses } from './equivalence.ts';
export {
  classReport,
  classLabel,
  classRows,
  type ClassReport,
  type ClassRow,
  type ClassRows,
} from './class-view.ts';
export { CLASS_FORMATS, CLASS_JSON_FORMAT, type ClassWriter } from './format/class-formats.ts';
export { focusRows, restrictMatrix, connects } from './focus.ts';
export {
  estimateClassOutput,
  estimateMatrixExtras,
  estimateMatrixOutput,
  formatSize,
  parseSize,
  type OutputEstimate,
} from './format/output-size.ts';
export { portListText } from './format/ports-text.ts';
export {
  explainEndpoints,
  type EndpointExplanation,
  type DirectionExplanation,
  type RuleExplanation,
} from './explain.ts';
export { convertToV1, DEFAULT_DENY_POLICY_NAME, inferInputSemantics, type ConvertResult } from './convert.ts';
export { convertToV1alpha2, toClusterNetworkPolicy, type CnpConversion } from './convert-cluster-policy.ts';
export {
  resolveAddress,
  findEndpoint,
  findEndpoints,
  addressText,
  type Resolution,
} from './resolve-address.ts';
export {
  askForPort,
  CLI_SPELLING,
  FILE_SPELLING,
  parsePortQuery,
  portAtDestination,
  QUERY_SPELLING,
  type PortAtDestination,
  type PortSpelling,
  type PortQueryOptions,
  type PortQueryParse,
} from './port-query.ts';
export { MATRIX_FORMATS, matrixExtras, textTableWidth, type MatrixWriter } from './format/matrix-formats.ts';
export {
  compileJson,
  formatCompileText,
  compileTextLines,
  type CompileReport,
  type CompileStats,
} from './format/compile-output.ts';
export { formatCheckText, formatPortsCheckText, portsCheckJson } from './format/check-text.ts';
export { formatExplainText } from './format/explain-text.ts';
export {
  explainClasses,
  explainClassesOf,
  memberExplanation,
  type ClassExplanation,
  type ClassExplanations,
} from './explain-classes.ts';
export {
  EXPLAIN_CLASSES_JSON_FORMAT,
  estimateExplainText,
  explainClassesJson,
  formatExplainClassesText,
} from './format/explain-class-formats.ts';
export { formatDiagnostic, formatDiagnostics, summarizeDiagnostics } from './format/diagnostics-text.ts';
export { styleFor, PLAIN, COLOUR, type Style } from './format/style.ts';
export { formatLintText } from './format/lint-text.ts';
export { lintSarif } from './format/lint-sarif.ts';
export type * from './types.ts';
export { DIFF_FORMATS, diffJson } from './format/diff-formats.ts';
export {
  DIFF_CLASS_FORMATS,
  DIFF_CLASSES_JSON_FORMAT,
  type ClassDiffWriter,
} from './format/diff-class-formats.ts';
export {
  GRAPH_FORMATS,
  graphSvg,
  isGraphFormat,
  layoutSeconds,
  writeGraph,
  type GraphFormat,
} from './format/graph-formats.ts';
export { classGraph, labelled, type ClassGraphOptions, type PortGraph } from './graph/class-graph.ts';
export { aggregateGraph, PICTURE_BUDGET, type GraphBudget } from './graph/aggregate.ts';
export { pictureGraph, type PictureRequest } from './graph/picture.ts';
export { portSetJson } from './format/ports-json.ts';
export { checkExpectations, type AssertionResult, type Expectation } from './assertions.ts';
export {
  diffGraph,
  type GroupBy,
  type ConnectivityGraph,
  type GraphNode,
  type GraphEdge,
} from './graph/graph.ts';
export { lintCluster, objectLocator, type LintReport, type Finding } from './lint/index.ts';
export { diffConnectivity, type ConnectivityDiff } from './diff/index.ts';
export {
  findService,
  serviceBackends,
  serviceLabel,
  servicePort,
  serviceTarget,
  targetOn,
  withService,
} from './services.ts';
export { OUTSIDE_BUDGET, outsideClasses, type OutsideClass } from './outside.ts';
export {
  INGRESS_CONTROLLER_LABEL,
  IngressController,
  ingressControllerEndpoint,
  ingressControllerPeer,
  forwardingNote,
  namesIngressController,
  parseIngressControllerPlace,
  type IngressControllerPeer,
  type IngressControllerPlace,
} from './ingress-controller.ts';
export {
  observeExpectations,
  observeFlows,
  suggestPolicies,
  suggestionSummary,
  suggestionYaml,
  type Observed,
  type Suggestion,
  type SuggestOptions,
} from './suggest/index.ts';
export { notEvaluated } from './not-evaluated.ts';
export { policyKindCounts, policyKindWords } from './policy-kind-counts.ts';
