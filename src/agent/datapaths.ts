/**
 * The agent's `--datapath`: any backend of the datapaths registry that runs on a node (its node
 * lifecycle opened through `openNodeDatapath`), and the node facts it is opened with.
 */
import { parseCidr, type Cidr } from '../net/ip.ts';
import { DataplaneError } from '../dataplane/index.ts';
import { isNodeDatapathName, NODE_DATAPATH_NAMES } from '../datapaths/index.ts';

/** The datapaths an agent can drive, in the registry's order. */
export const DATAPATH_NAMES = NODE_DATAPATH_NAMES;
export type DatapathName = string;

export function isDatapathName(name: string): boolean {
  return isNodeDatapathName(name);
}

/** Parses `--pod-cidr` values; throws a one-line error for one that is not a CIDR. */
export function parsePodCidrs(texts: readonly string[]): Cidr[] {
  return texts.map((text) => {
    const parsed = parseCidr(text);
    if (!parsed.ok) throw new DataplaneError(`--pod-cidr ${text} is not a CIDR`);
    return parsed.value;
  });
}
