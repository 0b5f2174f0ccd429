/**
 * The flows layer: the flow record shared by its producers and consumers, how a kernel's verdict
 * event is attributed to the policy, rule and tier that decided it, what a staged policy set
 * would decide instead, bounded aggregation, filters and the text people read.
 */
export type * from './types.ts';
export { readFlowFile, type FlowFile, type LocatedFlow } from './flow-file.ts';
export { attributeEvent, attributeEvents, attributionContext, type AttributionContext } from './attribute.ts';
export { decidingRule } from './deciding-rule.ts';
export { stagedChange, withStagedApplied } from './staged.ts';
export { stagedView } from './staged-view.ts';
export { DEFAULT_FLOW_CAPACITY, FlowTable, flowKey, type FlowTableStats } from './flow-table.ts';
export { FLOW_FILTER_PARAMETERS, flowFilterParameters, matchesFlow, parseFlowFilter } from './filter.ts';
export { decidingRuleText, flowText } from './format.ts';
export { agentUrlProblem, readAgentFlows, type FlowAgent, type ReadAgentOptions } from './agent-reader.ts';
