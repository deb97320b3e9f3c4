import { Construct } from 'constructs';
import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import * as kube from './kube';

export interface HeadlessServiceOptions {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  readonly ports: k8s.ServicePort[];
}

/**
 * The governing Service of a StatefulSet: it gives each pod the stable DNS name
 * `<pod>.<service>.<namespace>.svc.<domain>`. `publishNotReadyAddresses` publishes those names
 * before the pods are Ready, so peers can find each other during start-up (rendezvous, sharding).
 */
export function headlessService(scope: Construct, id: string, o: HeadlessServiceOptions): k8s.KubeService {
  return new kube.KubeService(scope, id, {
    metadata: { name: o.name, labels: o.labels },
    spec: {
      clusterIp: 'None',
      publishNotReadyAddresses: true,
      selector: o.selector,
      ports: o.ports,
    },
  });
}
