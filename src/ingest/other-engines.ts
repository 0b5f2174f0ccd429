/**
 * Kinds that hold network policy of an engine Palisade does not evaluate. An object of one is
 * never skipped silently: it is a located warning (POLICY_KIND_NOT_EVALUATED), and `check`,
 * `matrix` and `explain` say in their answer that the input holds policy they did not evaluate.
 * Kinds are known by API group and kind; an unknown group's kind whose name says it is network
 * policy (`…NetworkPolicy`, `…AuthorizationPolicy`, `…Firewall…`) is taken as one too.
 */

/** Kind by API group (without version), and what it is. */
const KNOWN: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'crd.antrea.io': {
    NetworkPolicy: "Antrea's NetworkPolicy",
    ClusterNetworkPolicy: "Antrea's ClusterNetworkPolicy",
    AntreaNetworkPolicy: "Antrea's NetworkPolicy",
    AntreaClusterNetworkPolicy: "Antrea's ClusterNetworkPolicy",
    Tier: "Antrea's policy tier",
    ClusterGroup: "Antrea's group of policy peers",
    Group: "Antrea's group of policy peers",
  },
  'security.antrea.tanzu.vmware.com': {
    NetworkPolicy: "Antrea's NetworkPolicy",
    ClusterNetworkPolicy: "Antrea's ClusterNetworkPolicy",
    Tier: "Antrea's policy tier",
  },
  'k8s.ovn.org': { EgressFirewall: "OVN-Kubernetes' egress firewall" },
  'network.openshift.io': { EgressNetworkPolicy: "OpenShift SDN's egress firewall" },
  'security.istio.io': {
    AuthorizationPolicy: "Istio's AuthorizationPolicy (a mesh's L7 access control)",
    PeerAuthentication: "Istio's mutual-TLS mode",
  },
  'policy.linkerd.io': {
    AuthorizationPolicy: "Linkerd's AuthorizationPolicy",
    Server: "Linkerd's policy Server",
    ServerAuthorization: "Linkerd's ServerAuthorization",
    MeshTLSAuthentication: "Linkerd's MeshTLSAuthentication",
    NetworkAuthentication: "Linkerd's NetworkAuthentication",
  },
  'k8s.cni.cncf.io': { MultiNetworkPolicy: 'a MultiNetworkPolicy (secondary networks)' },
  'networking.gke.io': { FQDNNetworkPolicy: "GKE's FQDNNetworkPolicy" },
  'vpcresources.k8s.aws': { SecurityGroupPolicy: "Amazon VPC's SecurityGroupPolicy" },
  'consul.hashicorp.com': { ServiceIntentions: "Consul's ServiceIntentions" },
  'kuma.io': {
    MeshTrafficPermission: "Kuma's MeshTrafficPermission",
    TrafficPermission: "Kuma's TrafficPermission",
  },
  'crd.nsx.vmware.com': { SecurityPolicy: "NSX's SecurityPolicy" },
  'nsx.vmware.com': { SecurityPolicy: "NSX's SecurityPolicy" },
  'projectcalico.org': {
    StagedNetworkPolicy: "Calico's staged (not enforced) NetworkPolicy",
    StagedGlobalNetworkPolicy: "Calico's staged (not enforced) GlobalNetworkPolicy",
    StagedKubernetesNetworkPolicy: "Calico's staged (not enforced) Kubernetes NetworkPolicy",
    NetworkSet: "Calico's NetworkSet (addresses Calico selectors can match)",
    GlobalNetworkSet: "Calico's GlobalNetworkSet (addresses Calico selectors can match)",
    HostEndpoint: "Calico's HostEndpoint (a node interface policy applies to)",
  },
  'crd.projectcalico.org': {
    StagedNetworkPolicy: "Calico's staged (not enforced) NetworkPolicy",
    StagedGlobalNetworkPolicy: "Calico's staged (not enforced) GlobalNetworkPolicy",
    StagedKubernetesNetworkPolicy: "Calico's staged (not enforced) Kubernetes NetworkPolicy",
    NetworkSet: "Calico's NetworkSet (addresses Calico selectors can match)",
    GlobalNetworkSet: "Calico's GlobalNetworkSet (addresses Calico selectors can match)",
    HostEndpoint: "Calico's HostEndpoint (a node interface policy applies to)",
  },
  'cilium.io': {
    CiliumCIDRGroup: "Cilium's CIDR group (cidrGroupRef targets)",
    CiliumClusterwideEnvoyConfig: "Cilium's L7 proxy configuration",
    CiliumEnvoyConfig: "Cilium's L7 proxy configuration",
  },
};

/** Kind names that say "network policy" whatever their group. */
const POLICY_LIKE = /NetworkPolicy|AuthorizationPolicy|Firewall|SecurityPolicy|TrafficPermission/;

/**
 * What the object is, when it holds network policy Palisade does not evaluate; undefined
 * otherwise. `knownOnly`: only the kinds listed by group (not a name's guess).
 */
export function otherEnginePolicy(apiVersion: string, kind: string, knownOnly = false): string | undefined {
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.lastIndexOf('/')) : '';
  const byKind = Object.hasOwn(KNOWN, group) ? KNOWN[group] : undefined;
  const known = byKind && Object.hasOwn(byKind, kind) ? byKind[kind] : undefined;
  if (known || knownOnly) return known;
  if (group !== '' && POLICY_LIKE.test(kind)) return `${kind} of ${group}, which looks like network policy`;
  return undefined;
}
