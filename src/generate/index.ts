/**
 * The generate layer's public entry: synthetic clusters in the Antrea benchmark shapes, and
 * AdminNetworkPolicies, Calico's and Cilium's policies over their labels, deterministic for a seed.
 */
export { generateShape, podIp, SHAPES, type Json, type ShapeName } from './shapes.ts';
export { generateAdminPolicies } from './admin-policies.ts';
export { generateEnginePolicies, POLICY_ENGINES, type PolicyEngineName } from './engine-policies.ts';
export { seededRandom } from './random.ts';
