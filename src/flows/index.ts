/** The flows layer's contract: the flow record shared by its producers and consumers. */
export type * from './types.ts';
export { readFlowFile, type FlowFile, type LocatedFlow } from './flow-file.ts';
