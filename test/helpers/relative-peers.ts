/**
 * A small cluster for AdminNetworkPolicy v0.1.1 relative peers (sameLabels, notSameLabels):
 * three namespaces sharing some labels, a pod in each with a named port, and one policy whose
 * peers resolve differently per subject namespace.
 */
import { namespace, pod, type Raw } from './builders.ts';

export function relativePeerObjects(): Raw[] {
  return [
    namespace('a1', { team: 'a', env: 'prod' }),
    namespace('a2', { team: 'a', env: 'dev' }),
    namespace('b1', { team: 'b', env: 'prod' }),
    pod('a1', 'x', {}, { ips: ['10.1.0.1'], ports: [{ name: 'http', containerPort: 8080 }] }),
    pod('a2', 'y', {}, { ips: ['10.1.0.2'], ports: [{ name: 'http', containerPort: 80 }] }),
    pod('b1', 'z', {}, { ips: ['10.1.0.3'], ports: [{ name: 'http', containerPort: 80 }] }),
    {
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'teams' },
      spec: {
        priority: 1,
        subject: { namespaces: {} },
        ingress: [
          { action: 'Allow', from: [{ namespaces: { sameLabels: ['team'] } }] },
          { action: 'Deny', from: [{ namespaces: { notSameLabels: ['env'] } }] },
        ],
        egress: [
          {
            action: 'Allow',
            to: [{ pods: { namespaces: { sameLabels: ['env'] }, podSelector: {} } }],
            ports: [{ namedPort: 'http' }],
          },
          { action: 'Deny', to: [{ namespaces: { namespaceSelector: {} } }] },
        ],
      },
    },
  ];
}
